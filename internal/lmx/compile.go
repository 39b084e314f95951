package lmx

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Options configure Compile.
type Options struct {
	// Theme is the email's theme; nil uses DefaultTheme. The document's
	// <Style/> attributes override it per key.
	Theme *ThemeStyles
	// Components resolves <Component componentId> references; nil means
	// any reference without local children is an error.
	Components ComponentResolver
	// Subject becomes the HTML <title>; it may contain variables.
	Subject string
	// PreviewText is the hidden preheader shown by inbox lists; it may
	// contain variables.
	PreviewText string
	// Lang is the html lang attribute; default "en".
	Lang string
	// IconBaseURL is where social icon images live:
	// {IconBaseURL}/{name}-{black|gray|white}.png. When empty, <Icon/>
	// renders as a text link.
	IconBaseURL string
	// Footer, when set, is appended below the email body (campaign and
	// workflow emails get an unsubscribe footer, §13).
	Footer *Footer
}

// Footer is the system footer below the body.
type Footer struct {
	// Text is shown first, e.g. the sender's postal address; may contain
	// variables.
	Text string
	// Unsubscribe adds an "Unsubscribe" link to {system.unsubscribe_link}.
	Unsubscribe bool
}

// ContainerWidth is the width in pixels of the email body on desktop.
const ContainerWidth = 600

// maxOutput bounds the static size of a compiled template.
const maxOutput = 16 << 20

var errTooLarge = errors.New("lmx: the rendered email would be larger than 16 MB")

// Compile prepares doc for rendering: it expands components, resolves
// the theme (Options.Theme, then the document's <Style/>), and lays out
// the HTML and plain-text bodies so that rendering only splices in
// variable values. Errors are *SyntaxError for component problems.
func Compile(doc *Doc, opts Options) (*Template, error) {
	if doc == nil {
		return nil, errors.New("lmx: nil document")
	}
	if err := Expand(doc, opts.Components); err != nil {
		return nil, err
	}
	base := DefaultTheme()
	if opts.Theme != nil {
		base = base.Merge(*opts.Theme)
	}
	b := &builder{
		th:       resolveTheme(base, StylesFromDoc(doc)),
		opts:     &opts,
		varIndex: map[Variable]int{},
	}
	b.font = b.th.fontStack()
	b.document(doc)
	if b.err != nil {
		return nil, b.err
	}
	t := &Template{html: b.h.p, text: b.t.p, vars: b.vars, urls: b.urls}
	return t, nil
}

// CompileString parses and compiles src in one step, returning parse
// warnings too.
func CompileString(src string, opts Options) (*Template, []Warning, error) {
	doc, warns, err := Parse(src)
	if err != nil {
		return nil, warns, err
	}
	t, err := Compile(doc, opts)
	return t, warns, err
}

type builder struct {
	h, t     stream
	th       *theme
	opts     *Options
	font     string
	vars     []Variable
	varIndex map[Variable]int
	urls     []urlExpr
	err      error

	tNL     int    // trailing newlines in the text stream
	tPrefix string // prefix for new lines in the text stream (quotes)
}

// ---- low-level output ----

func (b *builder) hs(s string) {
	if b.err != nil {
		return
	}
	if len(b.h.p.arena) > maxOutput {
		b.err = errTooLarge
		return
	}
	b.h.lit(s)
}

func (b *builder) hf(format string, args ...any) { b.hs(fmt.Sprintf(format, args...)) }

// ts writes static text to the plain-text stream, prefixing new lines.
func (b *builder) ts(s string) {
	if s == "" || b.err != nil {
		return
	}
	if b.tPrefix != "" && strings.IndexByte(s, '\n') >= 0 {
		s = strings.ReplaceAll(s, "\n", "\n"+b.tPrefix)
	}
	b.t.lit(s)
	n := len(s) - len(strings.TrimRight(s, "\n"))
	if n == len(s) {
		b.tNL += n
	} else {
		b.tNL = n
	}
}

// tblock starts a new paragraph in the text stream.
func (b *builder) tblock() { b.tbreak(2) }

// tline starts a new line in the text stream.
func (b *builder) tline() { b.tbreak(1) }

func (b *builder) tbreak(n int) {
	if !b.t.any {
		return
	}
	for b.tNL < n {
		b.t.lit("\n")
		b.tNL++
	}
	if b.tPrefix != "" {
		b.t.lit(b.tPrefix)
	}
}

func (b *builder) varIdx(v Variable) int {
	if i, ok := b.varIndex[v]; ok {
		return i
	}
	b.vars = append(b.vars, v)
	b.varIndex[v] = len(b.vars) - 1
	return len(b.vars) - 1
}

// hvar and tvar write a variable to the HTML / text stream.
func (b *builder) hvar(v Variable) { b.h.op(opVarHTML, b.varIdx(v)) }
func (b *builder) tvar(v Variable) {
	b.t.op(opVarRaw, b.varIdx(v))
	b.tNL = 0
}

// hdyn writes text that may contain variables, HTML-escaped.
func (b *builder) hdyn(s string) {
	segs, _ := splitVars(s)
	for _, sg := range segs {
		if sg.isVar {
			b.hvar(sg.v)
		} else {
			b.hs(escapeHTML(sg.text))
		}
	}
}

// tdyn writes text that may contain variables to the text stream.
func (b *builder) tdyn(s string) {
	segs, _ := splitVars(s)
	for _, sg := range segs {
		if sg.isVar {
			b.tvar(sg.v)
		} else {
			b.ts(sg.text)
		}
	}
}

// url returns the index of a URL expression for a dynamic URL, or -1 and
// the safe static URL when it has no variables.
func (b *builder) url(s, fallback string) (int, string) {
	s = strings.TrimSpace(s)
	segs, _ := splitVars(s)
	hasVar := false
	for _, sg := range segs {
		hasVar = hasVar || sg.isVar
	}
	if !hasVar {
		if s == "" || !urlIsSafe(s) {
			return -1, fallback
		}
		return -1, s
	}
	u := urlExpr{fallback: fallback}
	if segs[0].isVar || !prefixDetermines(segs[0].text) {
		u.check = true
	} else if !urlIsSafe(segs[0].text) {
		return -1, fallback
	}
	for _, sg := range segs {
		u.parts = append(u.parts, segment{text: sg.text})
		if sg.isVar {
			u.varIdx = append(u.varIdx, int32(b.varIdx(sg.v)))
		} else {
			u.varIdx = append(u.varIdx, -1)
		}
	}
	b.urls = append(b.urls, u)
	return len(b.urls) - 1, ""
}

// hurl writes a URL attribute value (without quotes) to the HTML stream.
func (b *builder) hurl(idx int, static string) {
	if idx < 0 {
		b.hs(escapeHTML(static))
		return
	}
	b.h.op(opURLHTML, idx)
}

func (b *builder) turl(idx int, static string) {
	if idx < 0 {
		b.ts(static)
		return
	}
	b.t.op(opURLRaw, idx)
	b.tNL = 0
}

// ---- document ----

const headCSS = `:root{color-scheme:light;supported-color-schemes:light}` +
	`body{margin:0!important;padding:0!important;width:100%!important;-webkit-text-size-adjust:100%;-ms-text-size-adjust:100%}` +
	`table,td{mso-table-lspace:0pt;mso-table-rspace:0pt}` +
	`img{border:0;outline:none;text-decoration:none;-ms-interpolation-mode:bicubic}` +
	`a[x-apple-data-detectors]{color:inherit!important;text-decoration:none!important}` +
	// Narrower than the 600 px container (plus its margin): the container
	// becomes fluid. Phone-sized: columns stack.
	`@media only screen and (max-width:620px){` +
	`.lx-outer{padding-left:0!important;padding-right:0!important}` +
	`.lx-container{width:100%!important;max-width:100%!important}` +
	`}` +
	`@media only screen and (max-width:480px){` +
	`.lx-body{padding-left:16px!important;padding-right:16px!important}` +
	`.lx-col{display:block!important;width:100%!important;max-width:100%!important}` +
	`.lx-gap{display:block!important;width:100%!important;height:16px!important}` +
	`}`

func (b *builder) document(doc *Doc) {
	th := b.th
	lang := b.opts.Lang
	if lang == "" {
		lang = "en"
	}
	bg := th.str("backgroundColor")
	body := th.str("bodyColor")
	bx, by := th.num("backgroundXPadding"), th.num("backgroundYPadding")
	px, py := th.num("bodyXPadding"), th.num("bodyYPadding")
	bw := th.num("borderWidth")

	b.hf(`<!DOCTYPE html>`+"\n"+`<html lang="%s" dir="ltr">`+"\n<head>\n", escapeHTML(lang))
	b.hs(`<meta charset="utf-8">` + "\n")
	b.hs(`<meta name="viewport" content="width=device-width, initial-scale=1">` + "\n")
	b.hs(`<meta http-equiv="X-UA-Compatible" content="IE=edge">` + "\n")
	b.hs(`<meta name="x-apple-disable-message-reformatting">` + "\n")
	b.hs(`<meta name="format-detection" content="telephone=no, date=no, address=no, email=no">` + "\n")
	b.hs(`<meta name="color-scheme" content="light">` + "\n")
	b.hs(`<meta name="supported-color-schemes" content="light">` + "\n")
	b.hs("<title>")
	b.hdyn(b.opts.Subject)
	b.hs("</title>\n<style>" + headCSS + "</style>\n</head>\n")
	b.hf(`<body style="margin:0;padding:0;width:100%%;background-color:%s;">`+"\n", bg)
	if b.opts.PreviewText != "" {
		b.hs(`<div style="display:none;font-size:1px;line-height:1px;max-height:0;max-width:0;opacity:0;overflow:hidden;mso-hide:all;color:transparent;">`)
		b.hdyn(b.opts.PreviewText)
		b.hs(strings.Repeat("&#847;&zwnj;&nbsp;", 60))
		b.hs("</div>\n")
	}
	b.hf(`<table role="presentation" width="100%%" cellpadding="0" cellspacing="0" border="0" bgcolor="%s" style="width:100%%;background-color:%s;">`+"\n", bg, bg)
	b.hf(`<tr><td class="lx-outer" align="center" style="padding:%spx %spx;">`+"\n", fmtNum(by), fmtNum(bx))
	b.hf(`<!--[if mso]><table role="presentation" width="%d" align="center" cellpadding="0" cellspacing="0" border="0"><tr><td><![endif]-->`+"\n", ContainerWidth)
	border := ""
	if bw > 0 {
		border = fmt.Sprintf("border:%spx solid %s;", fmtNum(bw), th.str("borderColor"))
	}
	b.hf(`<table role="presentation" class="lx-container" width="%d" cellpadding="0" cellspacing="0" border="0" bgcolor="%s" style="width:100%%;max-width:%dpx;background-color:%s;%sborder-radius:%spx;border-collapse:separate;">`+"\n",
		ContainerWidth, body, ContainerWidth, body, border, fmtNum(th.num("borderRadius")))
	b.hf(`<tr><td class="lx-body" style="padding:%spx %spx;font-family:%s;font-size:%spx;line-height:%spx;color:%s;text-align:left;">`+"\n",
		fmtNum(py), fmtNum(px), escapeHTML(b.font), fmtNum(th.num("textBaseFontSize")), fmtNum(th.num("textBaseLineHeight")), th.str("textBaseColor"))
	inner := ContainerWidth - int(2*px+2*bw)
	if inner < 100 {
		inner = 100
	}
	b.blocks(doc.Blocks, inner)
	b.hs("</td></tr>\n</table>\n")
	b.footer()
	b.hs("<!--[if mso]></td></tr></table><![endif]-->\n</td></tr>\n</table>\n</body>\n</html>\n")
	if b.t.any && b.tNL == 0 {
		b.t.lit("\n")
	}
}

func (b *builder) footer() {
	f := b.opts.Footer
	if f == nil || f.Text == "" && !f.Unsubscribe {
		return
	}
	color := "#6b7280"
	b.hf(`<table role="presentation" width="100%%" cellpadding="0" cellspacing="0" border="0" style="width:100%%;max-width:%dpx;">`, ContainerWidth)
	b.hf(`<tr><td align="center" style="padding:16px 24px;font-family:%s;font-size:12px;line-height:18px;color:%s;text-align:center;">`, escapeHTML(b.font), color)
	b.tblock()
	b.ts("--\n")
	if f.Text != "" {
		for i, line := range strings.Split(f.Text, "\n") {
			if i > 0 {
				b.hs("<br>")
				b.ts("\n")
			}
			b.hdyn(line)
			b.tdyn(line)
		}
	}
	if f.Unsubscribe {
		if f.Text != "" {
			b.hs("<br>")
			b.ts("\n")
		}
		idx, static := b.url("{system.unsubscribe_link}", "#")
		b.hf(`<a href="`)
		b.hurl(idx, static)
		b.hf(`" target="_blank" style="color:%s;text-decoration:underline;">Unsubscribe</a>`, color)
		b.ts("Unsubscribe: ")
		b.turl(idx, static)
	}
	b.hs("</td></tr></table>\n")
	b.ts("\n")
}

// ---- blocks ----

func (b *builder) blocks(ns []*Node, width int) {
	for _, n := range ns {
		if n.Type == ElementNode {
			b.block(n, width)
		}
	}
}

// box is the padding and background of a block.
type box struct {
	pad    [4]float64 // top, right, bottom, left
	bg     string
	radius float64
}

func (b *builder) boxOf(n *Node, def [4]float64) box {
	var bx box
	bx.bg = n.AttrOr("blockColor", "")
	if bx.bg != "" && def == [4]float64{8, 0, 8, 0} {
		def = [4]float64{12, 16, 12, 16}
	}
	bx.pad = def
	for i, name := range [...]string{"paddingTop", "paddingRight", "paddingBottom", "paddingLeft"} {
		if v, ok := n.Attr(name); ok {
			bx.pad[i], _ = strconv.ParseFloat(v, 64)
		}
	}
	if v, ok := n.Attr("blockBorderRadius"); ok {
		bx.radius, _ = strconv.ParseFloat(v, 64)
	}
	return bx
}

var defaultPad = [4]float64{8, 0, 8, 0}

// openBox writes the wrapper table of a block and returns the inner width.
func (b *builder) openBox(bx box, align string, width int) int {
	if align == "" {
		align = "left"
	}
	b.hs(`<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0"`)
	if bx.radius > 0 {
		b.hs(` style="border-collapse:separate;"`)
	}
	b.hs(`><tr><td`)
	if align != "left" {
		b.hs(` align="` + align + `"`)
	}
	if bx.bg != "" {
		b.hs(` bgcolor="` + bx.bg + `"`)
	}
	b.hs(` style="padding:` + cssBox(bx.pad) + `;`)
	if bx.bg != "" {
		b.hs("background-color:" + bx.bg + ";")
	}
	if bx.radius > 0 {
		b.hs("border-radius:" + fmtNum(bx.radius) + "px;")
	}
	if align != "left" {
		b.hs(`text-align:` + align + `;`)
	}
	b.hs(`">`)
	w := width - int(bx.pad[1]+bx.pad[3])
	if w < 1 {
		w = 1
	}
	return w
}

func (b *builder) closeBox() { b.hs("</td></tr></table>\n") }

// cssBox writes a padding value in the shortest CSS form.
func cssBox(p [4]float64) string {
	px := func(f float64) string {
		if f == 0 {
			return "0"
		}
		return fmtNum(f) + "px"
	}
	t, r, bt, l := px(p[0]), px(p[1]), px(p[2]), px(p[3])
	switch {
	case t == r && r == bt && bt == l:
		return t
	case t == bt && r == l:
		return t + " " + r
	case r == l:
		return t + " " + r + " " + bt
	}
	return t + " " + r + " " + bt + " " + l
}

func (b *builder) block(n *Node, width int) {
	if b.err != nil {
		return
	}
	switch n.Tag {
	case "H1", "H2", "H3", "Paragraph", "Quote":
		b.textBlock(n, width)
	case "CodeBlock":
		b.codeBlock(n, width)
	case "Button":
		b.button(n, width)
	case "Image":
		b.image(n, width)
	case "Divider":
		b.divider(n, width)
	case "OrderedList", "UnorderedList":
		b.list(n, width)
	case "Columns":
		b.columns(n, width)
	case "Section":
		b.section(n, width)
	case "Component":
		b.component(n, width)
	case "Icons":
		b.icons(n, width)
	}
}

// textStyle returns the CSS of a text element.
func (b *builder) textStyle(n *Node, kind string) string {
	th := b.th
	prefix := "textBase"
	switch kind {
	case "H1":
		prefix = "heading1"
	case "H2":
		prefix = "heading2"
	case "H3":
		prefix = "heading3"
	}
	size := th.num(prefix + "FontSize")
	lh := fmtNum(th.num(prefix+"LineHeight")) + "px"
	if v, ok := n.Attr("fontSize"); ok {
		fs, _ := strconv.ParseFloat(v, 64)
		if size > 0 {
			lh = fmtNum(float64(int(fs*th.num(prefix+"LineHeight")/size+0.5))) + "px"
		}
		size = fs
	}
	if v, ok := n.Attr("lineHeight"); ok {
		lh = v + "%"
	}
	var s strings.Builder
	fmt.Fprintf(&s, "margin:0;font-family:%s;font-size:%spx;line-height:%s;color:%s;",
		b.font, fmtNum(size), lh, th.str(prefix+"Color"))
	if ls := th.num(prefix + "LetterSpacing"); ls != 0 {
		s.WriteString("letter-spacing:" + fmtNum(ls) + "px;")
	}
	if prefix != "textBase" {
		s.WriteString("font-weight:bold;")
	}
	if a, ok := n.Attr("align"); ok {
		s.WriteString("text-align:" + a + ";")
	}
	return s.String()
}

func (b *builder) textBlock(n *Node, width int) {
	align := n.AttrOr("align", "left")
	b.openBox(b.boxOf(n, defaultPad), align, width)
	style := b.textStyle(n, n.Tag)
	tag := map[string]string{"H1": "h1", "H2": "h2", "H3": "h3", "Paragraph": "p", "Quote": "blockquote"}[n.Tag]
	if n.Tag == "Quote" {
		style += fmt.Sprintf("padding:0 0 0 16px;border-left:4px solid %s;font-style:italic;", b.th.str("dividerColor"))
	}
	b.hf(`<%s style="%s">`, tag, escapeHTML(style))
	b.tblock()
	switch n.Tag {
	case "H1":
		b.ts("# ")
	case "H2":
		b.ts("## ")
	case "H3":
		b.ts("### ")
	case "Quote":
		b.tPrefix = "> "
		b.ts("> ")
	}
	b.inline(n.Children)
	b.tPrefix = ""
	b.hs("</" + tag + ">")
	b.closeBox()
}

func (b *builder) codeBlock(n *Node, width int) {
	b.openBox(b.boxOf(n, defaultPad), "left", width)
	size := 14.0
	lh := "20px"
	if v, ok := n.Attr("fontSize"); ok {
		size, _ = strconv.ParseFloat(v, 64)
		lh = "150%"
	}
	if v, ok := n.Attr("lineHeight"); ok {
		lh = v + "%"
	}
	b.hf(`<pre style="margin:0;padding:12px 16px;background-color:#f3f4f6;color:#111827;border-radius:6px;font-family:Menlo,Consolas,&#39;Courier New&#39;,monospace;font-size:%spx;line-height:%s;white-space:pre-wrap;word-wrap:break-word;overflow-wrap:anywhere;text-align:left;">`, fmtNum(size), lh)
	code := ""
	if len(n.Children) > 0 {
		code = n.Children[0].Text
	}
	b.hs(escapeHTML(code))
	b.hs("</pre>")
	b.closeBox()
	b.tblock()
	b.ts("    " + strings.ReplaceAll(code, "\n", "\n    "))
}

func (b *builder) inline(ns []*Node) {
	for _, c := range ns {
		switch c.Type {
		case TextNode:
			b.hs(escapeHTML(c.Text))
			b.ts(c.Text)
		case VarNode:
			b.hvar(c.Var)
			b.tvar(c.Var)
		case ElementNode:
			b.inlineElem(c)
		}
	}
}

func (b *builder) inlineElem(n *Node) {
	color := ""
	if c, ok := n.Attr("textColor"); ok {
		color = "color:" + c + ";"
	}
	wrap := func(tag, style string) {
		b.hf(`<%s style="%s%s">`, tag, style, color)
		b.inline(n.Children)
		b.hs("</" + tag + ">")
	}
	switch n.Tag {
	case "Br":
		b.hs("<br>")
		b.ts("\n")
	case "Strong":
		wrap("strong", "font-weight:bold;")
	case "Em":
		wrap("em", "font-style:italic;")
	case "Underline":
		wrap("u", "text-decoration:underline;")
	case "Strike":
		wrap("s", "text-decoration:line-through;")
	case "Code":
		wrap("code", "font-family:Menlo,Consolas,&#39;Courier New&#39;,monospace;font-size:0.9em;background-color:#f3f4f6;border-radius:4px;padding:1px 4px;")
	case "Text":
		if color == "" {
			b.inline(n.Children)
			return
		}
		wrap("span", "")
	case "Link":
		b.link(n)
	default:
		b.inline(n.Children)
	}
}

func (b *builder) link(n *Node) {
	href := n.AttrOr("href", "")
	idx, static := b.url(href, "#")
	if strings.TrimSpace(href) == "" {
		b.hf(`<a style="color:%s;text-decoration:underline;">`, b.th.str("textLinkColor"))
	} else {
		b.hs(`<a href="`)
		b.hurl(idx, static)
		b.hs(`" target="_blank"`)
		if n.AttrOr("notrack", "") == "true" {
			b.hs(` data-lasso-notrack="true"`)
		}
		b.hf(` style="color:%s;text-decoration:underline;">`, b.th.str("textLinkColor"))
	}
	b.inline(n.Children)
	b.hs("</a>")
	if strings.TrimSpace(href) == "" {
		return
	}
	label := n.TextContent()
	if idx < 0 && (label == static || "mailto:"+label == static || "tel:"+label == static) {
		return
	}
	if idx >= 0 && label == strings.TrimSpace(href) {
		return // <Link href="{data.url}">{data.url}</Link>
	}
	b.ts(" (")
	b.turl(idx, static)
	b.ts(")")
}

func (b *builder) button(n *Node, width int) {
	th := b.th
	align := n.AttrOr("align", "left")
	b.openBox(b.boxOf(n, defaultPad), align, width)
	bg := n.AttrOr("bgColor", th.str("buttonBodyColor"))
	fg := n.AttrOr("textColor", th.str("buttonTextColor"))
	bc := n.AttrOr("borderColor", th.str("buttonBorderColor"))
	num := func(attr, theme string) string { return n.AttrOr(attr, fmtNum(th.num(theme))) }
	radius := num("borderRadius", "buttonBorderRadius")
	bw := num("borderWidth", "buttonBorderWidth")
	xp, yp := num("innerXPadding", "buttonBodyXPadding"), num("innerYPadding", "buttonBodyYPadding")
	fs := num("fontSize", "buttonTextFontSize")
	format := int(th.num("buttonTextFormat"))
	weight, style := "normal", "normal"
	if format&1 != 0 {
		weight = "bold"
	}
	if format&2 != 0 {
		style = "italic"
	}
	border := ""
	if bw != "0" {
		border = fmt.Sprintf("border:%spx solid %s;", bw, bc)
	}
	b.hf(`<table role="presentation" cellpadding="0" cellspacing="0" border="0" align="%s" style="border-collapse:separate;%s">`, align, alignMargin(align))
	b.hf(`<tr><td align="center" bgcolor="%s" style="background-color:%s;%sborder-radius:%spx;mso-padding-alt:%spx %spx;">`, bg, bg, border, radius, yp, xp)
	href := n.AttrOr("href", "")
	idx, static := b.url(href, "#")
	linkStyle := fmt.Sprintf(`display:inline-block;padding:%spx %spx;font-family:%s;font-size:%spx;line-height:120%%;font-weight:%s;font-style:%s;color:%s;text-decoration:none;border-radius:%spx;`,
		yp, xp, escapeHTML(b.font), fs, weight, style, fg, radius)
	if strings.TrimSpace(href) == "" {
		b.hf(`<span style="%s">`, linkStyle)
	} else {
		b.hs(`<a href="`)
		b.hurl(idx, static)
		b.hs(`" target="_blank"`)
		if n.AttrOr("notrack", "") == "true" {
			b.hs(` data-lasso-notrack="true"`)
		}
		b.hf(` style="%s">`, linkStyle)
	}
	b.tblock()
	b.inline(n.Children)
	if strings.TrimSpace(href) == "" {
		b.hs("</span>")
	} else {
		b.hs("</a>")
		b.ts(": ")
		b.turl(idx, static)
	}
	b.hs("</td></tr></table>")
	b.closeBox()
}

func alignMargin(align string) string {
	switch align {
	case "center":
		return "margin:0 auto;"
	case "right":
		return "margin:0 0 0 auto;"
	}
	return "margin:0;"
}

func (b *builder) image(n *Node, width int) {
	align := n.AttrOr("align", "center")
	inner := b.openBox(b.boxOf(n, defaultPad), align, width)
	w := inner
	if v, ok := n.Attr("width"); ok {
		f, _ := strconv.ParseFloat(v, 64)
		if int(f) < w {
			w = int(f)
		}
	}
	src := n.AttrOr("src", "")
	if !urlIsSafe(src) || strings.TrimSpace(src) == "" {
		src = "#"
	}
	href := n.AttrOr("href", "")
	hidx, hstatic := b.url(href, "#")
	linked := strings.TrimSpace(href) != ""
	if linked {
		b.hs(`<a href="`)
		b.hurl(hidx, hstatic)
		b.hs(`" target="_blank"`)
		if n.AttrOr("notrack", "") == "true" {
			b.hs(` data-lasso-notrack="true"`)
		}
		b.hs(` style="text-decoration:none;">`)
	}
	b.hs(`<img src="`)
	if dyn := n.AttrOr("dynamicSrc", ""); dyn != "" {
		idx, static := b.url(dyn, src)
		b.hurl(idx, static)
	} else {
		b.hs(escapeHTML(src))
	}
	b.hs(`" alt="`)
	alt := n.AttrOr("alt", "")
	b.hdyn(alt)
	border := "border:0;"
	if bw, ok := n.Attr("borderWidth"); ok && bw != "0" {
		border = fmt.Sprintf("border:%spx solid %s;", bw, n.AttrOr("borderColor", b.th.str("borderColor")))
	}
	radius := ""
	if r, ok := n.Attr("borderRadius"); ok {
		radius = "border-radius:" + r + "px;"
	}
	b.hf(`" width="%d" style="display:block;width:100%%;max-width:%dpx;height:auto;%s%soutline:none;text-decoration:none;%s">`, w, w, border, radius, alignMargin(align))
	if linked {
		b.hs("</a>")
	}
	b.closeBox()
	// Plain text: only linked images, as "alt (url)".
	if !linked {
		return
	}
	b.tblock()
	if alt != "" {
		b.tdyn(alt)
		if linked {
			b.ts(" (")
			b.turl(hidx, hstatic)
			b.ts(")")
		}
	} else {
		b.turl(hidx, hstatic)
	}
}

func (b *builder) divider(n *Node, width int) {
	align := n.AttrOr("align", "center")
	b.openBox(b.boxOf(n, defaultPad), align, width)
	pct := n.AttrOr("width", "100")
	bw := n.AttrOr("borderWidth", fmtNum(b.th.num("dividerBorderWidth")))
	color := n.AttrOr("color", b.th.str("dividerColor"))
	b.hf(`<table role="presentation" width="%s%%" cellpadding="0" cellspacing="0" border="0" align="%s" style="width:%s%%;%s"><tr><td style="border-top:%spx solid %s;font-size:0;line-height:0;height:0;">&nbsp;</td></tr></table>`,
		pct, align, pct, alignMargin(align), bw, color)
	b.closeBox()
	b.tblock()
	b.ts("---")
}

func (b *builder) list(n *Node, width int) {
	align := n.AttrOr("align", "left")
	b.openBox(box{pad: defaultPad}, align, width)
	tag := "ul"
	start := 1
	if n.Tag == "OrderedList" {
		tag = "ol"
		if s, ok := n.Attr("start"); ok {
			start, _ = strconv.Atoi(s)
		}
	}
	th := b.th
	pos := ""
	if align != "left" {
		pos = "list-style-position:inside;"
	}
	b.hf(`<%s`, tag)
	if tag == "ol" && start != 1 {
		b.hf(` start="%d"`, start)
	}
	b.hf(` style="margin:0;padding:0 0 0 %dpx;%sfont-family:%s;font-size:%spx;line-height:%spx;color:%s;text-align:%s;">`,
		map[bool]int{true: 0, false: 24}[align != "left"], pos, escapeHTML(b.font), fmtNum(th.num("textBaseFontSize")), fmtNum(th.num("textBaseLineHeight")), th.str("textBaseColor"), align)
	b.tblock()
	num := start
	first := true
	for _, li := range n.Children {
		if li.Type != ElementNode || li.Tag != "ListItem" {
			continue
		}
		style := b.textStyle(li, "li")
		style = strings.Replace(style, "margin:0;", "margin:0 0 4px 0;", 1)
		bx := b.boxOf(li, [4]float64{})
		if bx.bg != "" {
			style += "background-color:" + bx.bg + ";"
		}
		if bx.pad != [4]float64{} && bx.pad != [4]float64{12, 16, 12, 16} || bx.bg != "" {
			style += "padding:" + cssBox(bx.pad) + ";"
		}
		if bx.radius > 0 {
			style += "border-radius:" + fmtNum(bx.radius) + "px;"
		}
		b.hf(`<li style="%s">`, escapeHTML(style))
		if !first {
			b.tline()
		}
		first = false
		if tag == "ol" {
			b.ts(strconv.Itoa(num) + ". ")
			num++
		} else {
			b.ts("- ")
		}
		b.inline(li.Children)
		b.hs("</li>")
	}
	b.hf("</%s>", tag)
	b.closeBox()
}

func (b *builder) columns(n *Node, width int) {
	inner := b.openBox(b.boxOf(n, defaultPad), "left", width)
	var cols []*Node
	for _, c := range n.Children {
		if c.Type == ElementNode && c.Tag == "ColumnItem" {
			cols = append(cols, c)
		}
	}
	if len(cols) == 0 {
		b.closeBox()
		return
	}
	gap := 24
	if g, ok := n.Attr("gap"); ok {
		f, _ := strconv.ParseFloat(g, 64)
		gap = int(f)
	}
	valign := n.AttrOr("verticalAlignment", "top")
	stack := n.AttrOr("stackOnMobile", "true") != "false"
	reverse := stack && n.AttrOr("reverseOnMobile", "false") == "true"
	// Column widths in percent.
	pcts := make([]float64, len(cols))
	for i := range pcts {
		pcts[i] = 100 / float64(len(cols))
	}
	if w, ok := n.Attr("widths"); ok {
		ws := strings.Split(w, ",")
		if len(ws) == len(cols) {
			for i, s := range ws {
				pcts[i], _ = strconv.ParseFloat(s, 64)
			}
		}
	}
	avail := inner - gap*(len(cols)-1)
	if avail < len(cols) {
		avail = len(cols)
	}
	px := make([]int, len(cols))
	used := 0
	for i, p := range pcts {
		px[i] = int(float64(avail) * p / 100)
		used += px[i]
	}
	px[len(px)-1] += avail - used
	order := make([]int, len(cols))
	for i := range order {
		order[i] = i
		if reverse {
			order[i] = len(cols) - 1 - i
		}
	}
	colClass, gapClass := "", ""
	if stack {
		colClass, gapClass = ` class="lx-col"`, ` class="lx-gap"`
	}
	b.hs(`<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="width:100%;">`)
	if reverse {
		b.hs(`<tr dir="rtl">`)
	} else {
		b.hs(`<tr>`)
	}
	// The plain text keeps source order even when the HTML is reversed:
	// each column's text goes to its own stream, joined afterwards.
	texts := make([]stream, len(cols))
	nls := make([]int, len(cols))
	saved, savedNL := b.t, b.tNL
	for k, i := range order {
		if k > 0 {
			b.hf(`<td%s width="%d" style="width:%dpx;font-size:0;line-height:0;">&nbsp;</td>`, gapClass, gap, gap)
		}
		dir := ""
		if reverse {
			dir = ` dir="ltr"`
		}
		b.hf(`<td%s%s width="%d" valign="%s" style="width:%dpx;vertical-align:%s;">`, colClass, dir, px[i], valign, px[i], valign)
		b.t, b.tNL = stream{}, 0
		b.blocks(cols[i].Children, px[i])
		texts[i], nls[i] = b.t, b.tNL
		b.hs("</td>")
	}
	b.t, b.tNL = saved, savedNL
	for i := range texts {
		if texts[i].any {
			b.tblock()
			b.t.appendStream(&texts[i])
			b.tNL = nls[i]
		}
	}
	b.hs("</tr></table>")
	b.closeBox()
}

func (b *builder) section(n *Node, width int) {
	bx := b.boxOf(n, [4]float64{0, 0, 0, 0})
	if bx.bg != "" && !hasAnyAttr(n, "paddingTop", "paddingRight", "paddingBottom", "paddingLeft") {
		bx.pad = [4]float64{16, 16, 16, 16}
	}
	href := strings.TrimSpace(n.AttrOr("href", ""))
	linked := href != "" && !hasInteractive(n.Blocks())
	var idx int
	var static string
	if linked {
		idx, static = b.url(href, "#")
		b.hs(`<a href="`)
		b.hurl(idx, static)
		b.hs(`" target="_blank"`)
		if n.AttrOr("notrack", "") == "true" {
			b.hs(` data-lasso-notrack="true"`)
		}
		b.hs(` style="display:block;color:inherit;text-decoration:none;">`)
	}
	inner := b.openBox(bx, "left", width)
	b.blocks(n.Children, inner)
	b.closeBox()
	if linked {
		b.hs("</a>")
		b.tblock()
		b.turl(idx, static)
	}
}

func hasAnyAttr(n *Node, names ...string) bool {
	for _, name := range names {
		if _, ok := n.Attr(name); ok {
			return true
		}
	}
	return false
}

func (b *builder) component(n *Node, width int) {
	if !hasAnyAttr(n, "blockColor", "blockBorderRadius", "paddingTop", "paddingRight", "paddingBottom", "paddingLeft") {
		b.blocks(n.Blocks(), width)
		return
	}
	inner := b.openBox(b.boxOf(n, [4]float64{}), "left", width)
	b.blocks(n.Blocks(), inner)
	b.closeBox()
}

var iconColorNames = map[string]string{"#000000": "black", "#808080": "gray", "#ffffff": "white"}

func iconLabel(name string) string {
	switch name {
	case "x-twitter", "square-x-twitter":
		return "X"
	case "envelope", "envelope-open", "envelope-square", "square-envelope", "at":
		return "Email"
	case "linkedin", "linkedin-in":
		return "LinkedIn"
	case "github", "github-alt", "square-github":
		return "GitHub"
	case "youtube", "square-youtube":
		return "YouTube"
	case "tiktok":
		return "TikTok"
	case "whatsapp":
		return "WhatsApp"
	}
	name = strings.TrimPrefix(strings.TrimSuffix(strings.TrimSuffix(name, "-square"), "-f"), "square-")
	words := strings.Split(name, "-")
	for i, w := range words {
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

func (b *builder) icons(n *Node, width int) {
	align := n.AttrOr("align", "center")
	b.openBox(b.boxOf(n, defaultPad), align, width)
	size := 24
	if s, ok := n.Attr("size"); ok {
		f, _ := strconv.ParseFloat(s, 64)
		size = int(f)
	}
	gap := 12
	if g, ok := n.Attr("gap"); ok {
		f, _ := strconv.ParseFloat(g, 64)
		gap = int(f)
	}
	color := n.AttrOr("color", "#000000")
	b.hf(`<table role="presentation" cellpadding="0" cellspacing="0" border="0" align="%s" style="%s"><tr>`, align, alignMargin(align))
	first := true
	b.tblock()
	for _, ic := range n.Children {
		if ic.Type != ElementNode || ic.Tag != "Icon" {
			continue
		}
		name := ic.AttrOr("name", "link")
		label := iconLabel(name)
		pad := fmt.Sprintf("0 %dpx 0 0", gap)
		b.hf(`<td style="padding:%s;">`, pad)
		href := strings.TrimSpace(ic.AttrOr("href", ""))
		if href != "" && urlIsSafe(href) {
			b.hs(`<a href="` + escapeHTML(href) + `" target="_blank"`)
			if ic.AttrOr("notrack", "") == "true" {
				b.hs(` data-lasso-notrack="true"`)
			}
			b.hf(` style="text-decoration:none;color:%s;">`, color)
		}
		if base := strings.TrimRight(b.opts.IconBaseURL, "/"); base != "" {
			src := base + "/" + name + "-" + iconColorNames[color] + ".png"
			b.hf(`<img src="%s" alt="%s" width="%d" height="%d" style="display:block;width:%dpx;height:%dpx;border:0;">`,
				escapeHTML(src), escapeHTML(label), size, size, size, size)
		} else {
			b.hf(`<span style="font-family:%s;font-size:14px;line-height:%dpx;color:%s;">%s</span>`, escapeHTML(b.font), size, color, escapeHTML(label))
		}
		if href != "" && urlIsSafe(href) {
			b.hs("</a>")
			if !first {
				b.tline()
			}
			first = false
			b.ts(label + ": " + href)
		}
		b.hs("</td>")
	}
	b.hs("</tr></table>")
	b.closeBox()
}
