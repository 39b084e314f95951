package guardian

import (
	"net/url"
	"strings"

	"github.com/lasso-mail/lasso/internal/lmx"
)

// Kind is the kind of parent an email message belongs to; it decides
// which variables the message may use (§9.3).
type Kind string

const (
	// Campaign emails may use {contact.*}.
	Campaign Kind = "campaign"
	// Workflow emails may use {contact.*} and {event.*}.
	Workflow Kind = "workflow"
	// Transactional emails may use {data.*}.
	Transactional Kind = "transactional"
	// SystemTransactional emails (e.g. the double opt-in confirmation)
	// must use every RequiredDataVariables entry and no other data
	// variable.
	SystemTransactional Kind = "systemTransactional"
)

// Input is an email message as Guardian sees it.
type Input struct {
	Kind Kind
	// Doc is the parsed body after lmx.Expand (so component content is
	// checked too). nil means an empty body.
	Doc *lmx.Doc

	Subject, PreviewText, FromName, FromEmail, ReplyToEmail, CcEmail, BccEmail string

	// The message's fallback maps (§9.4). A key that is present counts
	// as a fallback, even with an empty value.
	ContactPropertiesFallbacks map[string]string
	EventPropertiesFallbacks   map[string]string
	DataVariablesFallbacks     map[string]string

	// ContactProperties are the team's custom contact property API
	// names; the default properties (firstName, lastName, email, notes,
	// source, userGroup, userId, subscribed, createdAt) are always known.
	// nil skips the existence check.
	ContactProperties []string
	// EventProperties are the properties of the workflow trigger's event
	// pattern. nil skips the existence check.
	EventProperties []string
	// RequiredDataVariables are the data variables a system
	// transactional email must contain (e.g. "optInUrl").
	RequiredDataVariables []string
	// ArrayDataVariables are data variables that hold arrays; LMX has no
	// array block, so any reference to them is reported as bareArrayNodes.
	ArrayDataVariables []string

	// StrictFallbacks reports missingFallback* rules as errors, as the
	// Loops API reference example does; by default they are warnings,
	// as in the Loops editor.
	StrictFallbacks bool
}

// Result is the body of GET /v1/email-messages/{id}/guardian (§5.10).
// Errors and Warnings are never nil, so they encode as [].
type Result struct {
	Errors   []Rule `json:"errors"`
	Warnings []Rule `json:"warnings"`
}

// OK reports whether nothing blocks publishing or sending.
func (r Result) OK() bool { return len(r.Errors) == 0 }

// Rule is one failed check with the offending items (GuardianRule).
type Rule struct {
	Rule        string `json:"rule"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Items       []Item `json:"items"`
}

// Item names one offending variable, link, button or icon. CodeName is
// set when the item is a variable.
type Item struct {
	Label    string `json:"label"`
	CodeName string `json:"codeName,omitempty"`
}

// Rule names (§12).
const (
	UnsupportedContactProperties     = "unsupportedContactProperties"
	MissingFallbackContactProperties = "missingFallbackContactProperties"
	UnsupportedEventProperties       = "unsupportedEventProperties"
	MissingFallbackEventProperties   = "missingFallbackEventProperties"
	UnsupportedDataVariables         = "unsupportedDataVariables"
	InvalidCustomDataVariables       = "invalidCustomDataVariables"
	MissingRequiredDataVariables     = "missingRequiredDataVariables"
	BareArrayNodes                   = "bareArrayNodes"
	MissingButtonHrefs               = "missingButtonHrefs"
	InvalidButtonHrefs               = "invalidButtonHrefs"
	MissingLinkHrefs                 = "missingLinkHrefs"
	InvalidLinkHrefs                 = "invalidLinkHrefs"
	ShortenedYouTubeButtonHrefs      = "shortenedYouTubeButtonHrefs"
	ShortenedYouTubeLinkHrefs        = "shortenedYouTubeLinkHrefs"
	ShortenedYouTubeImageHrefs       = "shortenedYouTubeImageHrefs"
	EmailWithoutMailtoButtonHrefs    = "emailWithoutMailtoButtonHrefs"
	EmailWithoutMailtoLinkHrefs      = "emailWithoutMailtoLinkHrefs"
	EmailWithoutMailtoImageHrefs     = "emailWithoutMailtoImageHrefs"
	MissingSocialIconHrefs           = "missingSocialIconHrefs"
)

type ruleInfo struct {
	name, title, description string
	err                      bool // reported under errors
}

// catalogue lists every rule in the order results are reported.
var catalogue = []ruleInfo{
	{UnsupportedContactProperties, "Unsupported contact properties", "These contact properties don't exist or can't be used in this type of email", true},
	{UnsupportedEventProperties, "Unsupported event properties", "These event properties aren't available in this email", true},
	{UnsupportedDataVariables, "Unsupported data variables", "Data variables can only be used in transactional emails", true},
	{InvalidCustomDataVariables, "Invalid data variable names", "Data variable names may only contain letters, numbers, underscores and hyphens", true},
	{MissingRequiredDataVariables, "Missing required data variables", "This email must include these data variables", true},
	{BareArrayNodes, "Array data variable outside an array block", "Array data variables can only be used inside an array block", true},
	{MissingFallbackContactProperties, "Missing contact property fallback", "Emails won't be sent to contacts without fallback values", false},
	{MissingFallbackEventProperties, "Missing event property fallback", "Emails won't be sent when the event has no value and no fallback is set", false},
	{MissingButtonHrefs, "Missing button link", "Buttons won't work without href value", true},
	{InvalidButtonHrefs, "Invalid button link", "Buttons won't work with an invalid URL", true},
	{MissingLinkHrefs, "Missing text link", "Links won't work without href value", true},
	{InvalidLinkHrefs, "Invalid text link", "Links won't work with an invalid URL", true},
	{ShortenedYouTubeButtonHrefs, "Shortened YouTube button link", "youtu.be links are often blocked by spam filters; use the full youtube.com URL", false},
	{ShortenedYouTubeLinkHrefs, "Shortened YouTube text link", "youtu.be links are often blocked by spam filters; use the full youtube.com URL", false},
	{ShortenedYouTubeImageHrefs, "Shortened YouTube image link", "youtu.be links are often blocked by spam filters; use the full youtube.com URL", false},
	{EmailWithoutMailtoButtonHrefs, "Button links to an email address without mailto:", "Add mailto: before the email address so the button opens an email", false},
	{EmailWithoutMailtoLinkHrefs, "Text link to an email address without mailto:", "Add mailto: before the email address so the link opens an email", false},
	{EmailWithoutMailtoImageHrefs, "Image links to an email address without mailto:", "Add mailto: before the email address so the image opens an email", false},
	{MissingSocialIconHrefs, "Missing social icon link", "Social icons won't work without href value", false},
}

// defaultContactProperties always exist (§9.3).
var defaultContactProperties = []string{"firstName", "lastName", "email", "notes", "source", "userGroup", "userId", "subscribed", "createdAt"}

// alwaysSet contact properties never need a fallback: every contact has them.
var alwaysSet = map[string]bool{"email": true, "subscribed": true, "createdAt": true}

// Check runs every Guardian rule on in.
func Check(in Input) Result {
	c := &checker{in: in, items: map[string][]Item{}, seen: map[string]bool{}}
	c.variables()
	c.links()
	return c.result()
}

type checker struct {
	in    Input
	items map[string][]Item
	seen  map[string]bool
}

func (c *checker) add(rule string, it Item) {
	key := rule + "\x00" + it.Label + "\x00" + it.CodeName
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	c.items[rule] = append(c.items[rule], it)
}

func (c *checker) addVar(rule, name string) { c.add(rule, Item{Label: name, CodeName: name}) }

func (c *checker) result() Result {
	r := Result{Errors: []Rule{}, Warnings: []Rule{}}
	for _, info := range catalogue {
		items := c.items[info.name]
		if len(items) == 0 {
			continue
		}
		rule := Rule{Rule: info.name, Title: info.title, Description: info.description, Items: items}
		isErr := info.err
		if c.in.StrictFallbacks && (info.name == MissingFallbackContactProperties || info.name == MissingFallbackEventProperties) {
			isErr = true
		}
		if isErr {
			r.Errors = append(r.Errors, rule)
		} else {
			r.Warnings = append(r.Warnings, rule)
		}
	}
	return r
}

// usedVariables returns the variables of the body and the settings
// fields, in a stable order.
func (c *checker) usedVariables() []lmx.Variable {
	var vs []lmx.Variable
	if c.in.Doc != nil {
		vs = append(vs, c.in.Doc.Variables()...)
	}
	for _, s := range []string{c.in.Subject, c.in.PreviewText, c.in.FromName, c.in.FromEmail, c.in.ReplyToEmail, c.in.CcEmail, c.in.BccEmail} {
		vs = append(vs, lmx.VariablesIn(s)...)
	}
	return vs
}

func set(names ...[]string) map[string]bool {
	m := map[string]bool{}
	for _, ns := range names {
		for _, n := range ns {
			m[n] = true
		}
	}
	return m
}

func (c *checker) variables() {
	in := c.in
	contactOK := in.Kind == Campaign || in.Kind == Workflow
	eventOK := in.Kind == Workflow
	dataOK := in.Kind == Transactional || in.Kind == SystemTransactional
	var knownContact, knownEvent map[string]bool
	if in.ContactProperties != nil {
		knownContact = set(defaultContactProperties, in.ContactProperties)
	}
	if in.EventProperties != nil {
		knownEvent = set(in.EventProperties)
	}
	required := set(in.RequiredDataVariables)
	arrays := set(in.ArrayDataVariables)
	usedData := map[string]bool{}

	for _, v := range c.usedVariables() {
		switch v.Namespace {
		case lmx.NamespaceContact:
			switch {
			case !contactOK, !lmx.ValidName(v.Name), knownContact != nil && !knownContact[v.Name]:
				c.addVar(UnsupportedContactProperties, v.Name)
			case !alwaysSet[v.Name]:
				if _, ok := in.ContactPropertiesFallbacks[v.Name]; !ok {
					c.addVar(MissingFallbackContactProperties, v.Name)
				}
			}
		case lmx.NamespaceEvent:
			switch {
			case !eventOK, knownEvent != nil && !knownEvent[v.Name]:
				c.addVar(UnsupportedEventProperties, v.Name)
			default:
				if _, ok := in.EventPropertiesFallbacks[v.Name]; !ok {
					c.addVar(MissingFallbackEventProperties, v.Name)
				}
			}
		case lmx.NamespaceData:
			root, _, _ := strings.Cut(v.Name, ".")
			switch {
			case !dataOK:
				c.addVar(UnsupportedDataVariables, v.Name)
			case arrays[root]:
				c.addVar(BareArrayNodes, v.Name)
			case !lmx.ValidName(v.Name):
				c.addVar(InvalidCustomDataVariables, v.Name)
			case in.Kind == SystemTransactional && !required[v.Name]:
				c.addVar(UnsupportedDataVariables, v.Name)
			}
			usedData[v.Name] = true
		}
	}
	if in.Kind == SystemTransactional {
		for _, name := range in.RequiredDataVariables {
			if !usedData[name] {
				c.addVar(MissingRequiredDataVariables, name)
			}
		}
	}
}

// hrefKind classifies a link target.
type hrefKind int

const (
	hrefOK hrefKind = iota
	hrefMissing
	hrefInvalid
	hrefYouTubeShort
	hrefBareEmail
)

func (c *checker) links() {
	if c.in.Doc == nil {
		return
	}
	c.in.Doc.Walk(func(n *lmx.Node) bool {
		switch n.Tag {
		case "Button":
			c.href(n, n.TextContent(), "Button", MissingButtonHrefs, InvalidButtonHrefs, ShortenedYouTubeButtonHrefs, EmailWithoutMailtoButtonHrefs)
		case "Link":
			c.href(n, n.TextContent(), "Link", MissingLinkHrefs, InvalidLinkHrefs, ShortenedYouTubeLinkHrefs, EmailWithoutMailtoLinkHrefs)
		case "Image":
			if href, ok := n.Attr("href"); ok && strings.TrimSpace(href) != "" {
				label := n.AttrOr("alt", "")
				if label == "" {
					label = n.AttrOr("src", "Image")
				}
				c.href(n, label, "Image", "", "", ShortenedYouTubeImageHrefs, EmailWithoutMailtoImageHrefs)
			}
		case "Icon":
			if strings.TrimSpace(n.AttrOr("href", "")) == "" {
				c.add(MissingSocialIconHrefs, Item{Label: n.AttrOr("name", "Icon")})
			}
		}
		return true
	})
}

func (c *checker) href(n *lmx.Node, label, def, missing, invalid, youtube, mailto string) {
	if label == "" {
		label = def
	}
	href := n.AttrOr("href", "")
	rule := ""
	switch classify(href) {
	case hrefMissing:
		rule = missing
	case hrefInvalid:
		rule = invalid
	case hrefYouTubeShort:
		rule = youtube
	case hrefBareEmail:
		rule = mailto
	}
	if rule != "" {
		c.add(rule, Item{Label: label})
	}
}

// classify decides what is wrong with a link target, if anything.
// Variables count as valid content: a whole-variable href cannot be
// checked before sending.
func classify(href string) hrefKind {
	h := strings.TrimSpace(href)
	if h == "" {
		return hrefMissing
	}
	vars := lmx.VariablesIn(h)
	if len(vars) == 1 && h == vars[0].Placeholder() {
		return hrefOK
	}
	startsWithVar := len(vars) > 0 && strings.HasPrefix(h, vars[0].Placeholder())
	for _, v := range vars {
		h = strings.ReplaceAll(h, v.Placeholder(), "var")
	}
	if startsWithVar {
		return hrefOK // e.g. {data.baseUrl}/path
	}
	if looksLikeEmail(h) {
		return hrefBareEmail
	}
	if strings.ContainsAny(h, " \t\n\r<>\"") {
		return hrefInvalid
	}
	scheme, rest, ok := strings.Cut(h, ":")
	if !ok {
		return hrefInvalid // "example.com", "/path", "#"
	}
	switch strings.ToLower(scheme) {
	case "mailto", "tel", "sms":
		if strings.Trim(rest, "/") == "" {
			return hrefInvalid
		}
		return hrefOK
	case "http", "https":
		u, err := url.Parse(h)
		if err != nil || u.Host == "" {
			return hrefInvalid
		}
		host := strings.ToLower(u.Hostname())
		if host != "localhost" && !strings.Contains(host, ".") && host != "var" {
			return hrefInvalid
		}
		if strings.HasPrefix(host, ".") || strings.HasSuffix(host, ".") || strings.Contains(host, "..") {
			return hrefInvalid
		}
		if host == "youtu.be" || host == "www.youtu.be" {
			return hrefYouTubeShort
		}
		return hrefOK
	}
	return hrefInvalid
}

// looksLikeEmail reports whether s is a bare address like a@b.co.
func looksLikeEmail(s string) bool {
	at := strings.IndexByte(s, '@')
	if at <= 0 || strings.Count(s, "@") != 1 || strings.ContainsAny(s, " /:?#<>\"") {
		return false
	}
	dom := s[at+1:]
	dot := strings.LastIndexByte(dom, '.')
	return dot > 0 && dot < len(dom)-1
}

// Unsupported returns the variables of vs that an email of kind k can
// never use (wrong namespace, or a contact property missing from
// contactProperties when that is non-nil). The HTTP layer uses it to
// reject a component update with 422 and invalidTags (§5.12).
func Unsupported(k Kind, vs []lmx.Variable, contactProperties []string) []lmx.Variable {
	var known map[string]bool
	if contactProperties != nil {
		known = set(defaultContactProperties, contactProperties)
	}
	var out []lmx.Variable
	for _, v := range vs {
		ok := true
		switch v.Namespace {
		case lmx.NamespaceContact:
			ok = (k == Campaign || k == Workflow) && (known == nil || known[v.Name])
		case lmx.NamespaceEvent:
			ok = k == Workflow
		case lmx.NamespaceData:
			ok = k == Transactional || k == SystemTransactional
		}
		if !ok {
			out = append(out, v)
		}
	}
	return out
}
