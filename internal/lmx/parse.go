package lmx

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Diagnostic is one problem found in LMX source, with its 1-based line
// and column (counted in characters).
type Diagnostic struct {
	Line int    `json:"line"`
	Col  int    `json:"col"`
	Rule string `json:"rule"`    // machine-readable kind, e.g. "unknownTag"
	Msg  string `json:"message"` // what is wrong and how to fix it
}

func (d Diagnostic) String() string { return fmt.Sprintf("%d:%d: %s", d.Line, d.Col, d.Msg) }

// Warning is a non-fatal problem: unknown attributes, out-of-range or
// invalid values (clamped or ignored), suspicious variable syntax.
type Warning = Diagnostic

// Error rules (SyntaxError.Errors[i].Rule).
const (
	RuleSyntax           = "syntax"
	RuleUnknownTag       = "unknownTag"
	RuleInvalidNesting   = "invalidNesting"
	RuleMissingAttribute = "missingAttribute"
	RuleTextNotAllowed   = "textNotAllowed"
	RuleDuplicateStyle   = "duplicateStyle"
	RuleTooDeep          = "tooDeep"
	RuleUnknownIcon      = "unknownIcon"
	RuleChildCount       = "childCount"
	RuleUnknownComponent = "unknownComponent"
	RuleComponentCycle   = "componentCycle"
)

// Warning rules.
const (
	RuleUnknownAttribute   = "unknownAttribute"
	RuleInvalidValue       = "invalidAttributeValue"
	RuleOutOfRange         = "attributeOutOfRange"
	RuleDuplicateAttribute = "duplicateAttribute"
	RuleVariableNotAllowed = "variableNotAllowed"
	RuleVariableSyntax     = "variableSyntax"
	RuleUnsafeURL          = "unsafeUrl"
	RuleUnknownEntity      = "unknownEntity"
	RuleIgnored            = "ignored"
)

// SyntaxError reports why LMX cannot be compiled (HTTP 422). The embedded
// Diagnostic is the first problem; Errors holds all of them (at most
// maxErrors) in source order.
type SyntaxError struct {
	Diagnostic
	Errors []Diagnostic
}

func (e *SyntaxError) Error() string {
	s := "lmx: " + e.Diagnostic.String()
	if len(e.Errors) > 1 {
		s += fmt.Sprintf(" (and %d more)", len(e.Errors)-1)
	}
	return s
}

const (
	maxErrors = 50
	maxDepth  = 40
)

// Parse parses an email body. The returned warnings are non-fatal; a
// non-nil error is a *SyntaxError and the Doc is nil.
func Parse(src string) (*Doc, []Warning, error) {
	return parse(src, false)
}

// ParseComponent parses a component body (§6.5): like Parse, but <Style/>
// is not allowed.
func ParseComponent(src string) (*Doc, []Warning, error) {
	return parse(src, true)
}

type parser struct {
	src       string // original source (valid UTF-8)
	lines     []int  // byte offsets of line starts in src
	ins       []int  // offsets in the decoded text where "amp;" was inserted
	component bool

	doc   *Doc
	stack []*frame
	errs  []Diagnostic
	warns []Warning
}

type frame struct {
	n    *Node
	spec *elemSpec // nil for unknown tags: their content is not checked
}

func parse(src string, component bool) (*Doc, []Warning, error) {
	if !utf8.ValidString(src) {
		src = strings.ToValidUTF8(src, "\uFFFD")
	}
	if strings.HasPrefix(src, "\uFEFF") {
		src = "   " + src[3:] // keep offsets; whitespace is ignored at the top
	}
	p := &parser{src: src, component: component, doc: &Doc{}}
	p.lines = append(p.lines, 0)
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			p.lines = append(p.lines, i+1)
		}
	}
	fixed := p.fixEntities(src)
	p.run(fixed)
	sort.SliceStable(p.errs, func(i, j int) bool { return posLess(p.errs[i], p.errs[j]) })
	sort.SliceStable(p.warns, func(i, j int) bool { return posLess(p.warns[i], p.warns[j]) })
	if len(p.errs) > 0 {
		errs := p.errs
		if len(errs) > maxErrors {
			errs = errs[:maxErrors]
		}
		return nil, p.warns, &SyntaxError{Diagnostic: errs[0], Errors: errs}
	}
	return p.doc, p.warns, nil
}

func posLess(a, b Diagnostic) bool {
	if a.Line != b.Line {
		return a.Line < b.Line
	}
	return a.Col < b.Col
}

// pos converts a byte offset in the original source to a Pos.
func (p *parser) pos(off int) Pos {
	if off < 0 {
		off = 0
	}
	if off > len(p.src) {
		off = len(p.src)
	}
	line := sort.Search(len(p.lines), func(i int) bool { return p.lines[i] > off }) - 1
	col := utf8.RuneCountInString(p.src[p.lines[line]:off]) + 1
	return Pos{Line: line + 1, Col: col}
}

// origOffset maps an offset in the entity-fixed text back to the source.
func (p *parser) origOffset(off int) int {
	k := sort.SearchInts(p.ins, off)
	return off - 4*k
}

func (p *parser) errorf(pos Pos, rule, format string, args ...any) {
	if len(p.errs) > maxErrors*2 {
		return
	}
	p.errs = append(p.errs, Diagnostic{Line: pos.Line, Col: pos.Col, Rule: rule, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) warnf(pos Pos, rule, format string, args ...any) {
	if len(p.warns) > 1000 {
		return
	}
	p.warns = append(p.warns, Diagnostic{Line: pos.Line, Col: pos.Col, Rule: rule, Msg: fmt.Sprintf(format, args...)})
}

// fixEntities makes the source acceptable to a strict XML decoder without
// changing its meaning for people: a bare '&' (as in URLs with several
// query parameters) becomes "&amp;", and so does the '&' of an unknown
// entity (with a warning). HTML entities such as &nbsp; are decoded by the
// decoder itself. Comments, CDATA sections and processing instructions are
// left alone.
func (p *parser) fixEntities(src string) string {
	if strings.IndexByte(src, '&') < 0 {
		return src
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '<':
			for _, r := range [...][2]string{{"<!--", "-->"}, {"<![CDATA[", "]]>"}, {"<?", "?>"}} {
				if strings.HasPrefix(src[i:], r[0]) {
					if e := strings.Index(src[i+len(r[0]):], r[1]); e >= 0 {
						i += len(r[0]) + e + len(r[1]) - 1
					} else {
						i = len(src) - 1
					}
					break
				}
			}
		case '&':
			ok, name := entityAt(src[i+1:])
			if ok {
				continue
			}
			if name != "" {
				p.warnf(p.pos(i), RuleUnknownEntity, "unknown entity &%s; is kept as text; write &amp;%s; if that is intended", name, name)
			}
			b.WriteString(src[last : i+1])
			p.ins = append(p.ins, b.Len()-1)
			b.WriteString("amp;")
			last = i + 1
		}
	}
	if last == 0 {
		return src
	}
	b.WriteString(src[last:])
	// p.ins holds the fixed-text offsets of each inserted '&'; an offset
	// after it is shifted by 4 for every insertion before it.
	for k := range p.ins {
		p.ins[k]++ // the shift applies from the byte after '&'
	}
	return b.String()
}

// entityAt reports whether s (the text after '&') starts a reference the
// XML decoder resolves. name is the entity name if s looks like a named
// reference.
func entityAt(s string) (ok bool, name string) {
	if strings.HasPrefix(s, "#") {
		j := 1
		hex := len(s) > 1 && (s[1] == 'x' || s[1] == 'X')
		if hex {
			j = 2
		}
		k := j
		for k < len(s) && k-j < 8 && (s[k] >= '0' && s[k] <= '9' || hex && (s[k] >= 'a' && s[k] <= 'f' || s[k] >= 'A' && s[k] <= 'F')) {
			k++
		}
		if k == j || k >= len(s) || s[k] != ';' || s[1] == 'X' {
			return false, ""
		}
		base := 10
		if hex {
			base = 16
		}
		n, err := strconv.ParseUint(s[j:k], base, 32)
		if err != nil || n == 0 || n > utf8.MaxRune || !isXMLChar(rune(n)) {
			return false, ""
		}
		return true, ""
	}
	k := 0
	for k < len(s) && k < 40 && (s[k] >= 'a' && s[k] <= 'z' || s[k] >= 'A' && s[k] <= 'Z' || k > 0 && s[k] >= '0' && s[k] <= '9') {
		k++
	}
	if k == 0 || k >= len(s) || s[k] != ';' {
		return false, ""
	}
	name = s[:k]
	switch name {
	case "amp", "lt", "gt", "quot", "apos":
		return true, name
	}
	if _, ok := xml.HTMLEntity[name]; ok {
		return true, name
	}
	return false, name
}

func isXMLChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

func (p *parser) run(fixed string) {
	d := xml.NewDecoder(strings.NewReader(fixed))
	d.Strict = true
	d.Entity = xml.HTMLEntity
	for {
		start := p.origOffset(int(d.InputOffset()))
		tok, err := d.RawToken()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			off := p.origOffset(int(d.InputOffset()))
			var se *xml.SyntaxError
			msg := err.Error()
			if errors.As(err, &se) {
				msg = friendlyXMLError(se.Msg)
				if se.Msg != "unexpected EOF" && off > 0 {
					off-- // point at the offending character, not after it
				}
			}
			p.errorf(p.pos(off), RuleSyntax, "%s", msg)
			return
		}
		pos := p.pos(start)
		switch t := tok.(type) {
		case xml.StartElement:
			if len(p.stack) >= maxDepth {
				p.errorf(pos, RuleTooDeep, "elements are nested more than %d deep", maxDepth)
				p.stack = nil // the rest would only add noise
				return
			}
			p.start(t, pos)
		case xml.EndElement:
			p.end(t, pos)
		case xml.CharData:
			p.text(string(t), pos)
		case xml.Comment, xml.ProcInst:
			// ignored
		case xml.Directive:
			p.warnf(pos, RuleIgnored, "<!%s> is ignored", firstWord(string(t)))
		}
	}
	for i := len(p.stack) - 1; i >= 0; i-- {
		f := p.stack[i]
		p.errorf(p.pos(len(p.src)), RuleSyntax, "<%s> opened at line %d, column %d is never closed; add </%s>", f.n.Tag, f.n.Pos.Line, f.n.Pos.Col, f.n.Tag)
	}
	p.stack = nil
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

func friendlyXMLError(msg string) string {
	switch {
	case strings.HasPrefix(msg, "expected element name after <"):
		return "a '<' in text must be written as &lt;"
	case strings.HasPrefix(msg, "unescaped < inside quoted string"):
		return "a '<' in an attribute value must be written as &lt;"
	case strings.HasPrefix(msg, "unquoted or missing attribute value"), strings.HasPrefix(msg, "attribute name without = in element"):
		return "attribute values must be quoted, e.g. width=\"400\""
	case msg == "unexpected EOF":
		return "unexpected end of input: a tag, comment or attribute is not finished"
	case strings.HasPrefix(msg, "invalid XML name"), strings.HasPrefix(msg, "expected attribute name"):
		return msg + " (attribute names are letters, e.g. href=\"…\")"
	case strings.HasPrefix(msg, "unexpected end element"):
		return msg + " (is a closing tag missing its opening tag?)"
	}
	return msg
}

func (p *parser) top() *frame {
	if len(p.stack) == 0 {
		return nil
	}
	return p.stack[len(p.stack)-1]
}

func (p *parser) hasAncestor(tag string) bool {
	for _, f := range p.stack {
		if f.n.Tag == tag {
			return true
		}
	}
	return false
}

func (p *parser) start(t xml.StartElement, pos Pos) {
	tag := t.Name.Local
	if t.Name.Space != "" {
		tag = t.Name.Space + ":" + t.Name.Local
	}
	n := &Node{Type: ElementNode, Tag: tag, Pos: pos}
	spec := elements[tag]
	parent := p.top()
	f := &frame{n: n, spec: spec}

	// Content of unknown elements is not checked to avoid a cascade.
	checking := parent == nil || parent.spec != nil
	if spec == nil {
		if checking {
			if s := suggestTag(tag); s != "" {
				p.errorf(pos, RuleUnknownTag, "unknown tag <%s>; did you mean <%s>?", tag, s)
			} else {
				p.errorf(pos, RuleUnknownTag, "unknown tag <%s>", tag)
			}
		}
		p.push(parent, f)
		return
	}
	if checking {
		p.checkPlacement(parent, tag, pos)
	}
	p.attrs(n, spec, t.Attr)
	for _, r := range spec.required {
		if _, ok := n.Attr(r); !ok {
			p.errorf(pos, RuleMissingAttribute, "<%s> needs a %s attribute, e.g. %s", tag, r, exampleAttr(tag, r))
		}
	}
	if tag == "Icon" {
		if name, ok := n.Attr("name"); ok && !knownIcons[name] {
			p.errorf(pos, RuleUnknownIcon, "unknown icon name %q; use a Font Awesome name such as twitter, linkedin, github or envelope", name)
		}
	}
	if tag == "Style" && parent == nil {
		if p.doc.Style != nil {
			p.errorf(pos, RuleDuplicateStyle, "only one <Style/> is allowed; the first is at line %d", p.doc.Style.Pos.Line)
		} else {
			p.doc.Style = n
		}
		p.stack = append(p.stack, f)
		return
	}
	p.push(parent, f)
}

func exampleAttr(tag, attr string) string {
	switch tag + "." + attr {
	case "Image.src":
		return `<Image src="https://example.com/logo.png" />`
	case "Component.componentId":
		return `<Component componentId="cmp_123" />`
	case "Icon.name":
		return `<Icon name="twitter" href="https://x.com/…" />`
	case "Link.href":
		return `<Link href="https://example.com">text</Link>`
	}
	return attr + `="…"`
}

func (p *parser) push(parent *frame, f *frame) {
	if parent == nil {
		p.doc.Blocks = append(p.doc.Blocks, f.n)
	} else {
		parent.n.Children = append(parent.n.Children, f.n)
	}
	p.stack = append(p.stack, f)
}

// checkPlacement applies the content model of the parent to a child tag.
func (p *parser) checkPlacement(parent *frame, tag string, pos Pos) {
	spec := elements[tag]
	if parent == nil {
		switch {
		case tag == "Style" && p.component:
			p.errorf(pos, RuleInvalidNesting, "a component cannot contain <Style/>; styles belong to the email")
		case spec.block:
		case tag == "ListItem":
			p.errorf(pos, RuleInvalidNesting, "<ListItem> must be inside <OrderedList> or <UnorderedList>")
		case tag == "ColumnItem":
			p.errorf(pos, RuleInvalidNesting, "<ColumnItem> must be inside <Columns>")
		case tag == "Icon":
			p.errorf(pos, RuleInvalidNesting, "<Icon/> must be inside <Icons>")
		default:
			p.errorf(pos, RuleInvalidNesting, "<%s> cannot be at the top level; put it inside a block such as <Paragraph>", tag)
		}
		return
	}
	pt := parent.n.Tag
	switch parent.spec.content {
	case cmNone:
		p.errorf(pos, RuleInvalidNesting, "<%s/> cannot have children (found <%s>); close it with />", pt, tag)
	case cmRaw:
		p.errorf(pos, RuleInvalidNesting, "<%s> holds literal text only (found <%s>); write < as &lt;", pt, tag)
	case cmText:
		p.errorf(pos, RuleInvalidNesting, "<%s> text cannot contain <%s>; only text and variables are allowed", pt, tag)
	case cmInline:
		switch {
		case !spec.inline:
			p.errorf(pos, RuleInvalidNesting, "<%s> cannot be inside <%s>; only text, variables, <Br/> and inline tags (Strong, Em, Underline, Strike, Code, Text, Link) are allowed there", tag, pt)
		case tag == "Link" && p.hasAncestor("Link"):
			p.errorf(pos, RuleInvalidNesting, "<Link> cannot be inside another <Link>")
		}
	case cmListItems:
		if tag != "ListItem" {
			p.errorf(pos, RuleInvalidNesting, "<%s> can only contain <ListItem> (found <%s>)", pt, tag)
		}
	case cmColumnItems:
		if tag != "ColumnItem" {
			p.errorf(pos, RuleInvalidNesting, "<Columns> can only contain <ColumnItem> (found <%s>)", tag)
		}
	case cmIcons:
		if tag != "Icon" {
			p.errorf(pos, RuleInvalidNesting, "<Icons> can only contain <Icon/> (found <%s>)", tag)
		}
	case cmBlocks:
		switch {
		case tag == "Style":
			p.errorf(pos, RuleInvalidNesting, "<Style/> must be at the top level, not inside <%s>", pt)
		case !spec.block:
			if tag == "ListItem" || tag == "ColumnItem" || tag == "Icon" {
				p.checkPlacement(nil, tag, pos)
			} else {
				p.errorf(pos, RuleInvalidNesting, "<%s> cannot be directly inside <%s>; put it inside a block such as <Paragraph>", tag, pt)
			}
		case tag == "Columns" && p.hasAncestor("Columns"):
			p.errorf(pos, RuleInvalidNesting, "<Columns> cannot be nested inside another <Columns>")
		case tag == "Section" && p.hasAncestor("Section"):
			p.errorf(pos, RuleInvalidNesting, "<Section> cannot be nested inside another <Section>")
		case tag == "Component" && p.hasAncestor("Component"):
			p.errorf(pos, RuleInvalidNesting, "<Component> cannot be inside another <Component>")
		}
	}
}

// attrs checks and normalises attributes onto n.
func (p *parser) attrs(n *Node, spec *elemSpec, attrs []xml.Attr) {
	for _, a := range attrs {
		name := a.Name.Local
		if a.Name.Space != "" {
			name = a.Name.Space + ":" + a.Name.Local
		}
		as, ok := spec.attrs[name]
		if !ok {
			switch {
			case n.Tag == "Button" && name == "size":
				p.warnf(n.Pos, RuleUnknownAttribute, "<Button size> is a legacy attribute and has no effect; use fontSize, innerXPadding and innerYPadding")
			case suggestAttr(spec, name) != "":
				p.warnf(n.Pos, RuleUnknownAttribute, "unknown attribute %s on <%s> is ignored; did you mean %s?", name, n.Tag, suggestAttr(spec, name))
			default:
				p.warnf(n.Pos, RuleUnknownAttribute, "unknown attribute %s on <%s> is ignored", name, n.Tag)
			}
			continue
		}
		if _, dup := n.Attr(name); dup {
			p.warnf(n.Pos, RuleDuplicateAttribute, "attribute %s appears more than once on <%s>; the last value is used", name, n.Tag)
		}
		if v, ok := p.checkValue(n, name, a.Value, as); ok {
			n.setAttr(name, v)
		} else {
			n.delAttr(name)
		}
	}
}

func (p *parser) checkValue(n *Node, name, v string, as attrSpec) (string, bool) {
	bad := func(format string, args ...any) (string, bool) {
		p.warnf(n.Pos, RuleInvalidValue, "%s on <%s>: %s; the attribute is ignored", name, n.Tag, fmt.Sprintf(format, args...))
		return "", false
	}
	switch as.kind {
	case akNum, akSignedNum:
		f, err := parseNum(v)
		if err != nil {
			return bad("%q is not a number", v)
		}
		if as.min != 0 || as.max != 0 {
			if f < as.min || f > as.max {
				c := clamp(f, as.min, as.max)
				p.warnf(n.Pos, RuleOutOfRange, "%s=%q on <%s> is outside %s–%s; %s is used", name, v, n.Tag, fmtNum(as.min), fmtNum(as.max), fmtNum(c))
				f = c
			}
		}
		return fmtNum(f), true
	case akInt:
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || i < -1_000_000 || i > 1_000_000 {
			return bad("%q is not a whole number", v)
		}
		return strconv.Itoa(i), true
	case akHex:
		c, ok := normHex(v)
		if !ok {
			return bad("%q is not a hex colour like #1f2937", v)
		}
		return c, true
	case akEnum:
		for _, e := range as.enum {
			if strings.EqualFold(strings.TrimSpace(v), e) {
				return e, true
			}
		}
		return bad("%q is not one of %s", v, strings.Join(as.enum, ", "))
	case akBool:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			return "true", true
		case "false":
			return "false", true
		}
		return bad(`%q is not "true" or "false"`, v)
	case akURL:
		v = strings.TrimSpace(v)
		if vs := VariablesIn(v); len(vs) > 0 {
			hint := ""
			if n.Tag == "Image" {
				hint = "; put dynamic image URLs in dynamicSrc"
			}
			p.warnf(n.Pos, RuleVariableNotAllowed, "variables are not allowed in %s on <%s>%s", name, n.Tag, hint)
		}
		if !urlIsSafe(v) {
			p.warnf(n.Pos, RuleUnsafeURL, "%s on <%s> uses a URL scheme that is not allowed (only http, https, mailto, tel, sms, cid); it is replaced by #", name, n.Tag)
			return "#", true
		}
		return v, true
	case akDynURL:
		v = strings.TrimSpace(v)
		p.checkVarSyntax(n, v)
		segs, _ := splitVars(v)
		if len(segs) > 0 && !segs[0].isVar && !staticPrefixSafe(segs[0].text) {
			p.warnf(n.Pos, RuleUnsafeURL, "%s on <%s> uses a URL scheme that is not allowed (only http, https, mailto, tel, sms); it is replaced by #", name, n.Tag)
			return "#", true
		}
		return v, true
	case akDynText:
		p.checkVarSyntax(n, v)
		return v, true
	case akWidths:
		parts := strings.Split(v, ",")
		out := make([]string, 0, len(parts))
		for _, s := range parts {
			f, err := parseNum(s)
			if err != nil || f <= 0 || f > 100 {
				return bad("%q must be comma-separated percentages such as \"50,50\"", v)
			}
			out = append(out, fmtNum(f))
		}
		return strings.Join(out, ","), true
	case akFont:
		c, ok := normFont(v)
		if !ok {
			return bad("%q is not a font name", v)
		}
		return c, true
	}
	return v, true
}

func (p *parser) checkVarSyntax(n *Node, s string) {
	if strings.IndexByte(s, '{') < 0 {
		return
	}
	_, msgs := splitVars(s)
	for _, m := range msgs {
		p.warnf(n.Pos, RuleVariableSyntax, "%s", m)
	}
}

func (p *parser) end(t xml.EndElement, pos Pos) {
	tag := t.Name.Local
	if t.Name.Space != "" {
		tag = t.Name.Space + ":" + t.Name.Local
	}
	top := p.top()
	if top == nil {
		p.errorf(pos, RuleSyntax, "closing tag </%s> has no matching opening tag", tag)
		return
	}
	if top.n.Tag != tag {
		// Recover: close up to a matching open element if there is one.
		idx := -1
		for i := len(p.stack) - 1; i >= 0; i-- {
			if p.stack[i].n.Tag == tag {
				idx = i
				break
			}
		}
		if idx < 0 {
			p.errorf(pos, RuleSyntax, "closing tag </%s> does not match <%s> opened at line %d, column %d", tag, top.n.Tag, top.n.Pos.Line, top.n.Pos.Col)
			return
		}
		for i := len(p.stack) - 1; i > idx; i-- {
			f := p.stack[i]
			p.errorf(f.n.Pos, RuleSyntax, "<%s> is not closed before </%s> at line %d, column %d; add </%s> or write <%s … />", f.n.Tag, tag, pos.Line, pos.Col, f.n.Tag, f.n.Tag)
			p.finish(f)
		}
		p.stack = p.stack[:idx+1]
	}
	f := p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	p.finish(f)
}

// finish runs the checks that need all children of an element.
func (p *parser) finish(f *frame) {
	if f.spec == nil {
		return
	}
	n := f.n
	others := false // children already reported as misplaced
	count := func(tag string) int {
		c := 0
		for _, ch := range n.Children {
			if ch.Type == ElementNode {
				if ch.Tag == tag {
					c++
				} else {
					others = true
				}
			}
		}
		return c
	}
	switch f.spec.content {
	case cmInline, cmText:
		if f.spec.block || n.Tag == "ListItem" {
			p.normalizeInline(n)
		}
	case cmRaw:
		var b strings.Builder
		for _, c := range n.Children {
			b.WriteString(c.Text)
		}
		n.Children = nil
		if s := dedent(b.String()); s != "" {
			n.Children = []*Node{{Type: TextNode, Text: s, Pos: n.Pos}}
		}
	case cmListItems:
		if count("ListItem") == 0 && !others {
			p.errorf(n.Pos, RuleChildCount, "<%s> needs at least one <ListItem>", n.Tag)
		}
	case cmColumnItems:
		c := count("ColumnItem")
		if (c < 2 || c > 4) && !others {
			p.errorf(n.Pos, RuleChildCount, "<Columns> needs 2 to 4 <ColumnItem> children, found %d", c)
		}
		if w, ok := n.Attr("widths"); ok && c >= 2 {
			ws := strings.Split(w, ",")
			sum := 0.0
			for _, s := range ws {
				f, _ := strconv.ParseFloat(s, 64)
				sum += f
			}
			if len(ws) != c || sum < 98 || sum > 102 {
				p.warnf(n.Pos, RuleInvalidValue, "widths=%q on <Columns> must list %d percentages adding up to 100; equal widths are used", w, c)
				n.delAttr("widths")
			}
		}
	case cmIcons:
		c := count("Icon")
		if (c < 1 || c > 100) && !others {
			p.errorf(n.Pos, RuleChildCount, "<Icons> needs 1 to 100 <Icon/> children, found %d", c)
		}
	}
	if n.Tag == "Section" {
		if _, ok := n.Attr("href"); ok && hasInteractive(n.Children) {
			p.warnf(n.Pos, RuleIgnored, "href on <Section> is ignored because the section contains links or buttons (links cannot be nested)")
			n.delAttr("href")
		}
	}
}

// hasInteractive reports whether any node renders an <a>.
func hasInteractive(ns []*Node) bool {
	for _, n := range ns {
		if n.Type != ElementNode {
			continue
		}
		switch n.Tag {
		case "Link", "Icon", "Component":
			return true
		case "Button", "Image":
			if _, ok := n.Attr("href"); ok {
				return true
			}
		}
		if hasInteractive(n.Children) {
			return true
		}
	}
	return false
}

func (p *parser) text(s string, pos Pos) {
	f := p.top()
	blank := strings.TrimSpace(s) == ""
	if f == nil {
		if !blank {
			p.errorf(p.textPos(s, pos), RuleTextNotAllowed, "text %q is outside any block; wrap it in <Paragraph>…</Paragraph>", abbrev(s))
		}
		return
	}
	if f.spec == nil {
		return
	}
	switch f.spec.content {
	case cmInline, cmText, cmRaw:
		n := f.n
		if k := len(n.Children); k > 0 && n.Children[k-1].Type == TextNode {
			n.Children[k-1].Text += s
			return
		}
		n.Children = append(n.Children, &Node{Type: TextNode, Text: s, Pos: p.textPos(s, pos)})
	default:
		if !blank {
			p.errorf(p.textPos(s, pos), RuleTextNotAllowed, "<%s> cannot contain text (%q); put text inside a block such as <Paragraph>", f.n.Tag, abbrev(s))
		}
	}
}

// textPos moves pos past leading whitespace of s.
func (p *parser) textPos(s string, pos Pos) Pos {
	for _, r := range s {
		switch r {
		case '\n':
			pos.Line++
			pos.Col = 1
		case ' ', '\t', '\r':
			pos.Col++
		default:
			return pos
		}
	}
	return pos
}

func abbrev(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > 40 {
		r := []rune(s)
		s = string(r[:40]) + "…"
	}
	return s
}

// normalizeInline collapses whitespace the way HTML renders it, trims the
// start and end of the block and around <Br/>, and splits text into text
// and variable nodes.
func (p *parser) normalizeInline(block *Node) {
	var texts []*Node // text nodes in order; nil entries mark <Br/>
	var collect func(n *Node)
	collect = func(n *Node) {
		for _, c := range n.Children {
			switch c.Type {
			case TextNode:
				texts = append(texts, c)
			case VarNode:
				texts = append(texts, &Node{Type: VarNode})
			case ElementNode:
				if c.Tag == "Br" {
					texts = append(texts, nil)
				}
				collect(c)
			}
		}
	}
	collect(block)
	space := true // at the start of a line: drop leading spaces
	for _, t := range texts {
		if t == nil {
			space = true
			continue
		}
		if t.Type == VarNode {
			space = false
			continue
		}
		var b strings.Builder
		for _, r := range t.Text {
			if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
				if !space {
					b.WriteByte(' ')
					space = true
				}
				continue
			}
			b.WriteRune(r)
			space = false
		}
		t.Text = b.String()
	}
	// Trim trailing spaces before <Br/> and at the end.
	trim := true
	for i := len(texts) - 1; i >= 0; i-- {
		t := texts[i]
		switch {
		case t == nil:
			trim = true
		case t.Type == VarNode:
			trim = false
		case trim:
			t.Text = strings.TrimRight(t.Text, " ")
			if t.Text != "" {
				trim = false
			}
		}
	}
	p.splitTextVars(block)
}

// splitTextVars replaces text nodes with text and variable nodes and
// drops empty text nodes.
func (p *parser) splitTextVars(n *Node) {
	out := n.Children[:0:0]
	for _, c := range n.Children {
		switch c.Type {
		case TextNode:
			if c.Text == "" {
				continue
			}
			segs, msgs := splitVars(c.Text)
			for _, m := range msgs {
				p.warnf(c.Pos, RuleVariableSyntax, "%s", m)
			}
			for _, s := range segs {
				if s.isVar {
					out = append(out, &Node{Type: VarNode, Var: s.v, Pos: c.Pos})
				} else {
					out = append(out, &Node{Type: TextNode, Text: s.text, Pos: c.Pos})
				}
			}
		case ElementNode:
			p.splitTextVars(c)
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	n.Children = out
}

// dedent trims blank leading/trailing lines and common indentation of a
// code block.
func dedent(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lines := strings.Split(s, "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return ""
	}
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		k := len(l) - len(strings.TrimLeft(l, " \t"))
		if indent < 0 || k < indent {
			indent = k
		}
	}
	for i, l := range lines {
		if len(l) >= indent {
			lines[i] = strings.TrimRight(l[indent:], " \t")
		} else {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}
