package lmx

import "strings"

// content is an element's content model (§9.2).
type content uint8

const (
	cmNone        content = iota // no children (self-closing)
	cmInline                     // text, variables, inline tags, <Br/>
	cmText                       // text and variables only
	cmRaw                        // literal text; braces are not variables
	cmBlocks                     // block elements
	cmListItems                  // ≥1 <ListItem>
	cmColumnItems                // 2–4 <ColumnItem>
	cmIcons                      // 1–100 <Icon/>
)

// attrKind is how an attribute value is checked.
type attrKind uint8

const (
	akNum       attrKind = iota // number within [min,max], clamped
	akInt                       // integer, any
	akHex                       // #rgb or #rrggbb
	akEnum                      // one of enum
	akBool                      // "true" or "false"
	akURL                       // static URL, no variables
	akDynURL                    // URL that may contain variables
	akDynText                   // text that may contain variables
	akString                    // free string, no variables
	akWidths                    // Columns@widths
	akFont                      // CSS font family list
	akSignedNum                 // number, may be negative (letter spacing)
)

type attrSpec struct {
	kind     attrKind
	min, max float64
	enum     []string
}

type elemSpec struct {
	content  content
	attrs    map[string]attrSpec
	required []string
	block    bool // may appear where blocks are allowed
	inline   bool // may appear in inline content
}

var (
	alignEnum = []string{"left", "center", "right"}

	blockStyleAttrs = map[string]attrSpec{
		"blockColor":        {kind: akHex},
		"blockBorderRadius": {kind: akNum, min: 0, max: 999},
		"paddingTop":        {kind: akNum, min: 0, max: 999},
		"paddingRight":      {kind: akNum, min: 0, max: 999},
		"paddingBottom":     {kind: akNum, min: 0, max: 999},
		"paddingLeft":       {kind: akNum, min: 0, max: 999},
	}
	textBlockAttrs = merge(blockStyleAttrs, map[string]attrSpec{
		"fontSize":   {kind: akNum, min: 12, max: 64},
		"lineHeight": {kind: akNum, min: 100, max: 300},
		"align":      {kind: akEnum, enum: alignEnum},
	})
	listItemAttrs = merge(blockStyleAttrs, map[string]attrSpec{
		"fontSize":   {kind: akNum, min: 12, max: 64},
		"lineHeight": {kind: akNum, min: 100, max: 300},
	})
	textColorAttrs = map[string]attrSpec{"textColor": {kind: akHex}}
)

func merge(ms ...map[string]attrSpec) map[string]attrSpec {
	out := map[string]attrSpec{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// styleAttrs are the <Style/> attributes: themeId plus every ThemeStyles key.
var styleAttrs = func() map[string]attrSpec {
	m := map[string]attrSpec{"themeId": {kind: akString}}
	for _, f := range themeFields {
		switch f.kind {
		case tfColor:
			m[f.name] = attrSpec{kind: akHex}
		case tfFont:
			m[f.name] = attrSpec{kind: akFont}
		case tfNum:
			m[f.name] = attrSpec{kind: akNum, min: f.min, max: f.max}
		case tfSigned:
			m[f.name] = attrSpec{kind: akSignedNum, min: -20, max: 20}
		}
	}
	return m
}()

var elements = map[string]*elemSpec{
	"H1":        {content: cmInline, attrs: textBlockAttrs, block: true},
	"H2":        {content: cmInline, attrs: textBlockAttrs, block: true},
	"H3":        {content: cmInline, attrs: textBlockAttrs, block: true},
	"Paragraph": {content: cmInline, attrs: textBlockAttrs, block: true},
	"Quote":     {content: cmInline, attrs: textBlockAttrs, block: true},
	"CodeBlock": {content: cmRaw, block: true, attrs: merge(blockStyleAttrs, map[string]attrSpec{
		"fontSize":   {kind: akNum, min: 12, max: 64},
		"lineHeight": {kind: akNum, min: 100, max: 300},
	})},
	"Button": {content: cmText, block: true, attrs: merge(blockStyleAttrs, map[string]attrSpec{
		"href":          {kind: akDynURL},
		"bgColor":       {kind: akHex},
		"textColor":     {kind: akHex},
		"borderColor":   {kind: akHex},
		"borderRadius":  {kind: akNum, min: 0, max: 999},
		"borderWidth":   {kind: akNum, min: 0, max: 16},
		"innerXPadding": {kind: akNum, min: 0, max: 100},
		"innerYPadding": {kind: akNum, min: 0, max: 100},
		"fontSize":      {kind: akNum, min: 6, max: 64},
		"align":         {kind: akEnum, enum: alignEnum},
		"notrack":       {kind: akBool},
	})},
	"Image": {content: cmNone, block: true, required: []string{"src"}, attrs: merge(blockStyleAttrs, map[string]attrSpec{
		"src":          {kind: akURL},
		"alt":          {kind: akDynText},
		"href":         {kind: akDynURL},
		"width":        {kind: akNum, min: 12, max: 600},
		"align":        {kind: akEnum, enum: alignEnum},
		"borderRadius": {kind: akNum, min: 0, max: 999},
		"borderWidth":  {kind: akNum, min: 0, max: 16},
		"borderColor":  {kind: akHex},
		"dynamicSrc":   {kind: akDynURL},
		"notrack":      {kind: akBool},
	})},
	"Divider": {content: cmNone, block: true, attrs: merge(blockStyleAttrs, map[string]attrSpec{
		"align":       {kind: akEnum, enum: alignEnum},
		"width":       {kind: akNum, min: 10, max: 100},
		"borderWidth": {kind: akNum, min: 1, max: 16},
		"color":       {kind: akHex},
	})},
	"OrderedList": {content: cmListItems, block: true, attrs: map[string]attrSpec{
		"start": {kind: akInt},
		"align": {kind: akEnum, enum: alignEnum},
	}},
	"UnorderedList": {content: cmListItems, block: true, attrs: map[string]attrSpec{
		"align": {kind: akEnum, enum: alignEnum},
	}},
	"ListItem": {content: cmInline, attrs: listItemAttrs},
	"Columns": {content: cmColumnItems, block: true, attrs: merge(blockStyleAttrs, map[string]attrSpec{
		"gap":               {kind: akNum, min: 12, max: 150},
		"widths":            {kind: akWidths},
		"verticalAlignment": {kind: akEnum, enum: []string{"top", "middle", "bottom"}},
		"stackOnMobile":     {kind: akBool},
		"reverseOnMobile":   {kind: akBool},
	})},
	"ColumnItem": {content: cmBlocks, attrs: map[string]attrSpec{}},
	"Component": {content: cmBlocks, block: true, required: []string{"componentId"}, attrs: merge(blockStyleAttrs, map[string]attrSpec{
		"componentId": {kind: akString},
	})},
	"Section": {content: cmBlocks, block: true, attrs: merge(blockStyleAttrs, map[string]attrSpec{
		"href":    {kind: akDynURL},
		"notrack": {kind: akBool},
	})},
	"Icons": {content: cmIcons, block: true, attrs: merge(blockStyleAttrs, map[string]attrSpec{
		"align": {kind: akEnum, enum: alignEnum},
		"gap":   {kind: akNum, min: 4, max: 200},
		"size":  {kind: akNum, min: 18, max: 48},
		"color": {kind: akEnum, enum: []string{"#000000", "#808080", "#ffffff"}},
	})},
	"Icon": {content: cmNone, required: []string{"name"}, attrs: map[string]attrSpec{
		"name":    {kind: akString},
		"href":    {kind: akURL},
		"notrack": {kind: akBool},
	}},
	"Style":     {content: cmNone, block: true, attrs: styleAttrs},
	"Br":        {content: cmNone, inline: true, attrs: map[string]attrSpec{}},
	"Strong":    {content: cmInline, inline: true, attrs: textColorAttrs},
	"Em":        {content: cmInline, inline: true, attrs: textColorAttrs},
	"Underline": {content: cmInline, inline: true, attrs: textColorAttrs},
	"Strike":    {content: cmInline, inline: true, attrs: textColorAttrs},
	"Code":      {content: cmInline, inline: true, attrs: textColorAttrs},
	"Text":      {content: cmInline, inline: true, attrs: textColorAttrs},
	"Link": {content: cmInline, inline: true, required: []string{"href"}, attrs: map[string]attrSpec{
		"href":    {kind: akDynURL},
		"notrack": {kind: akBool},
	}},
}

// isDynamicAttr reports whether variables are allowed in the attribute.
func isDynamicAttr(tag, attr string) bool {
	e := elements[tag]
	if e == nil {
		return false
	}
	a, ok := e.attrs[attr]
	return ok && (a.kind == akDynURL || a.kind == akDynText)
}

// htmlToLMX suggests LMX tags for common HTML and lower-case mistakes.
var htmlToLMX = map[string]string{
	"p": "Paragraph", "h1": "H1", "h2": "H2", "h3": "H3", "h4": "H3", "h5": "H3", "h6": "H3",
	"blockquote": "Quote", "pre": "CodeBlock", "img": "Image", "hr": "Divider",
	"ul": "UnorderedList", "ol": "OrderedList", "li": "ListItem", "br": "Br",
	"b": "Strong", "strong": "Strong", "i": "Em", "em": "Em", "u": "Underline",
	"s": "Strike", "del": "Strike", "strike": "Strike", "code": "Code", "span": "Text",
	"a": "Link", "button": "Button", "div": "Section", "section": "Section", "table": "Columns",
}

func suggestTag(tag string) string {
	if s, ok := htmlToLMX[strings.ToLower(tag)]; ok {
		return s
	}
	for name := range elements {
		if strings.EqualFold(name, tag) {
			return name
		}
	}
	return ""
}

func suggestAttr(e *elemSpec, attr string) string {
	for name := range e.attrs {
		if strings.EqualFold(name, attr) {
			return name
		}
	}
	return ""
}

// knownIcons are the Font Awesome names <Icon name> accepts.
var knownIcons = func() map[string]bool {
	names := strings.Fields(`
	twitter x-twitter square-x-twitter twitter-square square-twitter facebook facebook-f facebook-square square-facebook
	facebook-messenger instagram instagram-square square-instagram linkedin linkedin-in youtube youtube-square
	square-youtube github github-alt github-square square-github gitlab bitbucket discord slack slack-hash tiktok
	pinterest pinterest-p pinterest-square square-pinterest reddit reddit-alien reddit-square square-reddit medium
	medium-m dribbble dribbble-square behance behance-square twitch telegram telegram-plane whatsapp whatsapp-square
	mastodon threads bluesky snapchat snapchat-ghost snapchat-square spotify soundcloud apple app-store app-store-ios
	google-play google android windows microsoft product-hunt figma dev stack-overflow rss rss-square square-rss vimeo
	vimeo-v vimeo-square wordpress wordpress-simple npm patreon paypal stripe stripe-s shopify etsy amazon yelp tumblr
	tumblr-square flickr skype weixin weibo qq line viber vk xing meetup kickstarter codepen hacker-news hashnode
	substack steam playstation xbox itch-io unsplash envelope envelope-open envelope-square square-envelope at link
	phone phone-alt phone-square square-phone mobile mobile-alt mobile-screen globe earth house home location-dot
	map-marker map-marker-alt map-pin calendar calendar-days calendar-alt star heart bell user users comment comments
	message paper-plane play circle-play video camera image images book book-open newspaper circle-info info-circle
	question circle-question check circle-check download upload cart-shopping shopping-cart bag-shopping shopping-bag
	gift tag tags bolt rocket code laptop desktop headphones microphone podcast blog pen pencil file file-lines
	briefcase building store shop ticket trophy lightbulb graduation-cap leaf fire coffee music film hashtag
	share share-nodes share-alt arrow-right arrow-up-right-from-square external-link external-link-alt`)
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}()
