package tracking

import (
	"bytes"
	stdhtml "html"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// NoTrackAttr marks a link that must not be click-tracked. The lmx renderer
// emits it for notrack="true"; Rewrite removes it.
const NoTrackAttr = "data-lasso-notrack"

// Rewrite returns a copy of the HTML body of one email to one recipient with
// click tracking and the open pixel added:
//
//   - every <a> whose href is an absolute http or https URL points at the
//     signed click redirect (ClickURL) instead, except links carrying
//     NoTrackAttr and links into base's own /t/ and /unsubscribe/ paths (the
//     unsubscribe link is never wrapped);
//   - NoTrackAttr is removed from every <a>;
//   - a 1×1 hidden open pixel (OpenURL) is inserted before the first </body>,
//     or, when there is none, at the end (before any unterminated markup).
//
// Everything else is copied byte for byte. The document is split into tags,
// comments and text exactly as the HTML5 tokenizer of golang.org/x/net/html
// splits it (a fast scanner does it, and the tokenizer itself for documents
// with a <script>), so comments (including Outlook conditional comments),
// <style> and <title> contents, entities and malformed markup come out as
// they went in. Only the attributes Rewrite changes are written, HTML-escaped;
// links inside comments (<!--[if mso]>) or <area> are not tracked.
//
// base is the public URL (--public-url), with or without a trailing slash.
func Rewrite(src []byte, base, sendID string, s *Signer) []byte {
	return AppendRewrite(make([]byte, 0, len(src)+len(src)/4+512), src, base, sendID, s)
}

// AppendRewrite is Rewrite appending to dst, for callers that reuse buffers.
func AppendRewrite(dst, src []byte, base, sendID string, s *Signer) []byte {
	r := newRewriter(base, sendID, s)
	if out, ok := r.scan(dst, src); ok {
		return out
	}
	return r.tokenize(dst, src)
}

func newRewriter(base, sendID string, s *Signer) *rewriter {
	return &rewriter{
		s:         s,
		base:      strings.TrimRight(base, "/"),
		sendID:    sendID,
		escapedID: url.PathEscape(sendID),
	}
}

type rewriter struct {
	s                       *Signer
	base, sendID, escapedID string
	tag, val                []byte
	spans                   []attrSpan
	keys, vals              [][]byte
}

// scan rewrites src with a scanner that splits markup exactly as
// golang.org/x/net/html's Tokenizer does (FuzzRewrite checks that), without
// its per-token and per-attribute allocations. It gives up, returning false,
// on a <script> element, whose end follows rules it does not implement;
// tokenize handles those documents.
func (r *rewriter) scan(dst, src []byte) ([]byte, bool) {
	start := len(dst)
	n := len(src)
	copied := 0 // src[:copied] is in dst
	tail := n   // the pixel's place when there is no </body>
	pixel := false
	i := 0
loop:
	for i < n {
		j := bytes.IndexByte(src[i:], '<')
		if j < 0 || i+j+1 >= n { // a final '<' is text
			break
		}
		p := i + j
		switch c := src[p+1]; {
		case isLetter(c): // start tag
			isA := isTag(src[p:], 1, "a")
			_, gt := lexAttrs(src[p:], nil, false)
			if p+gt >= n {
				tail = p // unterminated tag: dropped by parsers
				break loop
			}
			end := p + gt + 1
			tag := src[p:end]
			i = end
			if isA {
				dst = append(dst, src[copied:p]...)
				dst = r.anchor(dst, tag, nil, 0)
				copied = end
				continue
			}
			switch name := rawTextTag(tag); name {
			case "":
			case "script":
				return dst[:start], false
			case "plaintext":
				tail = p // text up to the end of the input
				break loop
			default:
				k := rawTextEnd(src, end, name)
				if k < 0 {
					tail = p
					break loop
				}
				i = k
			}
		case c == '/':
			if p+2 >= n {
				tail = p
				break loop
			}
			switch c2 := src[p+2]; {
			case c2 == '>': // "</>" is dropped
				i = p + 3
			case isLetter(c2): // end tag, read like a start tag
				_, gt := lexAttrs(src[p+1:], nil, false)
				if p+1+gt >= n {
					tail = p
					break loop
				}
				if !pixel && isTag(src[p:], 2, "body") {
					dst = append(dst, src[copied:p]...)
					dst = r.appendPixel(dst)
					copied, pixel = p, true
				}
				i = p + 1 + gt + 1
			default: // bogus comment
				k := bytes.IndexByte(src[p+2:], '>')
				if k < 0 {
					tail = p
					break loop
				}
				i = p + 2 + k + 1
			}
		case c == '!':
			var k int
			if p+3 < n && src[p+2] == '-' && src[p+3] == '-' {
				k = commentEnd(src, p+4)
			} else if k = bytes.IndexByte(src[p+2:], '>'); k >= 0 { // doctype or bogus comment
				k += p + 3
			}
			if k < 0 {
				tail = p
				break loop
			}
			i = k
		case c == '?': // bogus comment
			k := bytes.IndexByte(src[p+2:], '>')
			if k < 0 {
				tail = p
				break loop
			}
			i = p + 2 + k + 1
		default: // not markup; the tokenizer reconsumes c
			i = p + 1
		}
	}
	if !pixel {
		dst = append(dst, src[copied:tail]...)
		dst = r.appendPixel(dst)
		copied = tail
	}
	return append(dst, src[copied:]...), true
}

// tokenize rewrites src driven by golang.org/x/net/html's Tokenizer.
func (r *rewriter) tokenize(dst, src []byte) []byte {
	z := html.NewTokenizer(bytes.NewReader(src))
	pixel := false
	// lastSafe is where the pixel goes when there is no </body>: the start
	// of the last token at which the tokenizer was in its data state, so
	// that the pixel never lands inside an unterminated comment, tag or
	// <script>/<style>/<title>… element.
	lastSafe, inRaw := 0, false
	for {
		tt := z.Next()
		raw := z.Raw()
		if !inRaw && len(raw) > 0 {
			lastSafe = len(dst)
		} else if tt != html.TextToken {
			inRaw = false // the raw text element's end tag (or EOF)
		}
		switch tt {
		case html.ErrorToken:
			// End of input. raw holds an unterminated tag, if any, which
			// parsers drop.
			dst = append(dst, raw...)
			if !pixel {
				dst = r.insertPixel(dst, lastSafe)
			}
			return dst
		case html.StartTagToken, html.SelfClosingTagToken:
			if isTag(raw, 1, "a") {
				// Work on a copy: the tokenizer may reuse its buffer.
				r.tag = append(r.tag[:0], raw...)
				dst = r.anchor(dst, r.tag, z, tt)
				continue
			}
			inRaw = rawTextTag(raw) != ""
		case html.EndTagToken:
			if !pixel && lastSafe == len(dst) && isTag(raw, 2, "body") {
				dst = r.appendPixel(dst)
				pixel = true
			}
		}
		dst = append(dst, raw...)
	}
}

// rawTextTag returns the name of the start tag raw if it switches the
// tokenizer to raw text or RCDATA (the elements golang.org/x/net/html
// treats so), else "".
func rawTextTag(raw []byte) string {
	if len(raw) < 4 {
		return ""
	}
	var names []string
	switch raw[1] | 0x20 {
	case 'i':
		names = []string{"iframe"}
	case 'n':
		names = []string{"noembed", "noframes", "noscript"}
	case 'p':
		names = []string{"plaintext"}
	case 's':
		names = []string{"script", "style"}
	case 't':
		names = []string{"textarea", "title"}
	case 'x':
		names = []string{"xmp"}
	}
	for _, name := range names {
		if isTag(raw, 1, name) {
			return name
		}
	}
	return ""
}

// rawTextEnd returns the index of the end tag "</name" (any case, followed
// by white space, '/' or '>') that ends a raw text element whose content
// starts at from, or -1.
func rawTextEnd(src []byte, from int, name string) int {
	for i := from; ; {
		k := bytes.Index(src[i:], []byte("</"))
		if k < 0 {
			return -1
		}
		k += i
		if isTag(src[k:], 2, name) {
			return k
		}
		i = k + 2
	}
}

// commentEnd returns the index just past the comment whose "<!--" ends at
// i, or -1 when it runs to the end of the input. It follows
// golang.org/x/net/html's readComment: "-->", "--!>", and "<!-->" or
// "<!--->" right at the start, end a comment.
func commentEnd(src []byte, i int) int {
	dashes, beginning := 0, true
	for ; i < len(src); i++ {
		switch src[i] {
		case '-':
			dashes++
			continue
		case '>':
			if dashes >= 2 || beginning {
				return i + 1
			}
		case '!':
			if dashes >= 2 {
				i++
				if i >= len(src) {
					return -1
				}
				if src[i] == '>' {
					return i + 1
				}
				if src[i] == '-' {
					dashes, beginning = 1, false
					continue
				}
			}
		}
		dashes, beginning = 0, false
	}
	return -1
}

func isLetter(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// appendPixel appends the open pixel.
func (r *rewriter) appendPixel(dst []byte) []byte {
	dst = append(dst, `<img src="`...)
	dst = appendEscaped(dst, r.s.OpenURL(r.base, r.sendID))
	return append(dst, `" width="1" height="1" alt="" style="display:none;width:1px;height:1px;border:0;margin:0;padding:0;overflow:hidden;">`...)
}

// insertPixel inserts the open pixel into dst at offset at.
func (r *rewriter) insertPixel(dst []byte, at int) []byte {
	r.val = r.appendPixel(r.val[:0])
	return slices.Insert(dst, at, r.val...)
}

// anchor writes the <a> start tag tag, rewritten. z, when not nil, is the
// tokenizer positioned on it and tt its token type; when nil, tag comes from
// scan.
func (r *rewriter) anchor(dst, tag []byte, z *html.Tokenizer, tt html.TokenType) []byte {
	r.spans, _ = lexAttrs(tag, r.spans[:0], true)
	r.keys, r.vals = r.keys[:0], r.vals[:0]
	if z == nil && r.safeRemovals(tag) {
		// Scanner path: values are decoded by attrValue when needed.
		for i := range r.spans {
			if sp := &r.spans[i]; sp.saved {
				sp.index = len(r.vals)
				r.vals = append(r.vals, tag[sp.valStart:sp.valEnd])
			}
		}
	} else {
		// The tokenizer's view of the attributes is the reference, and
		// lexAttrs must agree with it for its spans to be used for splicing.
		if z == nil {
			z = html.NewTokenizer(bytes.NewReader(tag))
			tt = z.Next()
		}
		for more := true; more; {
			var k, v []byte
			k, v, more = z.TagAttr()
			if k == nil {
				break
			}
			r.keys = append(r.keys, k)
			r.vals = append(r.vals, v)
		}
		if !r.agree(tag) || !r.safeRemovals(tag) {
			return r.reserialize(dst, tt == html.SelfClosingTagToken)
		}
	}

	var href string
	hrefAt, notrack := -1, false
	for i, sp := range r.spans {
		if !sp.saved {
			continue
		}
		key := tag[sp.keyStart:sp.keyEnd]
		switch {
		case hrefAt < 0 && equalFold(key, "href"):
			hrefAt = i
			if z == nil {
				href = attrValue(r.vals[sp.index])
			} else {
				href = string(r.vals[sp.index])
			}
		case equalFold(key, NoTrackAttr):
			notrack = true
		}
	}
	target, track := "", false
	if hrefAt >= 0 && !notrack {
		target, track = r.trackTarget(href)
	}
	if !track && !notrack {
		return append(dst, tag...) // unchanged
	}

	prev := 0
	for i, sp := range r.spans {
		switch {
		case track && i == hrefAt:
			dst = append(dst, tag[prev:sp.keyStart]...)
			dst = append(dst, `href="`...)
			dst = r.appendClick(dst, target)
			dst = append(dst, '"')
			prev = sp.end
		case equalFold(tag[sp.keyStart:sp.keyEnd], NoTrackAttr):
			start, insertSpace := removalStart(tag, sp)
			dst = append(dst, tag[prev:start]...)
			if insertSpace {
				dst = append(dst, ' ')
			}
			prev = sp.end
		}
	}
	return append(dst, tag[prev:]...)
}

// attrValue decodes a raw attribute value the way the tokenizer's TagAttr
// does: NUL becomes U+FFFD, CR and CRLF become LF, and character references
// are decoded in attribute mode.
func attrValue(raw []byte) string {
	if bytes.IndexAny(raw, "&\x00\r") < 0 {
		return string(raw)
	}
	v := string(raw)
	if strings.IndexByte(v, 0) >= 0 {
		v = strings.ReplaceAll(v, "\x00", "\ufffd")
	}
	if strings.IndexByte(v, '\r') >= 0 {
		v = strings.ReplaceAll(strings.ReplaceAll(v, "\r\n", "\n"), "\r", "\n")
	}
	return unescapeAttr(v)
}

// unescapeAttr decodes character references as the HTML tokenizer does in
// an attribute value. That differs from text (html.UnescapeString) in two
// ways: a named reference without ';' followed by '=' is literal
// ("?a=1&copy=2" keeps "&copy"), and a name that is not a reference is
// literal rather than decoded by its longest prefix ("&copyx" stays).
// Each reference is decoded by html.UnescapeString, and a prefix-only
// decode is detected and undone.
func unescapeAttr(v string) string {
	amp := strings.IndexByte(v, '&')
	if amp < 0 {
		return v
	}
	var b strings.Builder
	b.Grow(len(v))
	for amp >= 0 {
		b.WriteString(v[:amp])
		v = v[amp:] // starts with '&'
		n := 1
		if len(v) > 1 && v[1] == '#' {
			// Numeric: the same in attributes and text.
			n = 2
			if n < len(v) && (v[n] == 'x' || v[n] == 'X') {
				n++
			}
			for n < len(v) && isAlnum(v[n]) {
				n++
			}
			if n < len(v) && v[n] == ';' {
				n++
			}
			b.WriteString(stdhtml.UnescapeString(v[:n]))
		} else {
			for n < len(v) && isAlnum(v[n]) {
				n++
			}
			semi := n < len(v) && v[n] == ';'
			if semi {
				n++
			}
			ref := v[:n]
			out := ref
			if n > 1 && (semi || n == len(v) || v[n] != '=') {
				if d := stdhtml.UnescapeString(ref); d != ref {
					_, size := utf8.DecodeRuneInString(d)
					if rest := d[size:]; rest == "" || !strings.HasSuffix(ref, rest) {
						out = d // the whole name is a reference
					}
				}
			}
			b.WriteString(out)
		}
		v = v[n:]
		amp = strings.IndexByte(v, '&')
	}
	b.WriteString(v)
	return b.String()
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// safeRemovals reports whether every NoTrackAttr of the tag can be cut out
// without the next '=' becoming the value of the attribute before it (as in
// "<a x data-lasso-notrack=1 =y>").
func (r *rewriter) safeRemovals(tag []byte) bool {
	for _, sp := range r.spans {
		if equalFold(tag[sp.keyStart:sp.keyEnd], NoTrackAttr) {
			if k := skipSpace(tag, sp.end); k < len(tag) && tag[k] == '=' {
				return false
			}
		}
	}
	return true
}

// removalStart decides how to cut the attribute sp out of tag without
// changing how the rest tokenizes: it also takes the one whitespace byte in
// front when that is safe, and asks for a space when the attribute directly
// follows a '/' (which would otherwise turn "<a/x>" into "<a/>").
func removalStart(tag []byte, sp attrSpan) (start int, insertSpace bool) {
	ks := sp.keyStart
	if tag[ks-1] == '/' {
		return ks, true
	}
	next := byte('>')
	if sp.end < len(tag) {
		next = tag[sp.end]
	}
	if isSpace(tag[ks-1]) && tag[ks-2] != '/' && (isSpace(next) || next == '>') {
		return ks - 1, false
	}
	return ks, false
}

// agree reports whether lexAttrs found the same attributes as the tokenizer.
func (r *rewriter) agree(tag []byte) bool {
	n := 0
	for i := range r.spans {
		sp := &r.spans[i]
		if !sp.saved {
			continue
		}
		if n >= len(r.keys) {
			return false
		}
		sp.index = n
		if !equalFold(tag[sp.keyStart:sp.keyEnd], string(r.keys[n])) {
			return false
		}
		raw := tag[sp.valStart:sp.valEnd]
		if bytes.IndexAny(raw, "&\x00\r") < 0 && !bytes.Equal(raw, r.vals[n]) {
			return false
		}
		n++
	}
	return n == len(r.keys)
}

// reserialize writes the tag from the tokenizer's attributes. It is the
// fallback for markup lexAttrs does not read the way the tokenizer does;
// attribute names come out lower-cased and values re-escaped.
func (r *rewriter) reserialize(dst []byte, selfClosing bool) []byte {
	var href string
	hrefAt, notrack := -1, false
	for i, k := range r.keys {
		switch string(k) {
		case "href":
			if hrefAt < 0 {
				hrefAt, href = i, string(r.vals[i])
			}
		case NoTrackAttr:
			notrack = true
		}
	}
	target, track := "", false
	if hrefAt >= 0 && !notrack {
		target, track = r.trackTarget(href)
	}
	dst = append(dst, "<a"...)
	for i, k := range r.keys {
		if string(k) == NoTrackAttr || !validAttrName(k) {
			continue
		}
		dst = append(dst, ' ')
		dst = append(dst, k...)
		dst = append(dst, `="`...)
		if track && i == hrefAt {
			dst = r.appendClick(dst, target)
		} else {
			dst = appendEscaped(dst, r.vals[i])
		}
		dst = append(dst, '"')
	}
	if selfClosing {
		dst = append(dst, " /"...)
	}
	return append(dst, '>')
}

// validAttrName reports whether k can be written back as an attribute name
// and read again as the same name (the tokenizer reads a leading '=' as part
// of the name).
func validAttrName(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	for i, c := range k {
		if isSpace(c) || c == '/' || c == '>' || c == '=' && i > 0 || c == 0 {
			return false
		}
	}
	return true
}

func (r *rewriter) appendClick(dst []byte, target string) []byte {
	r.val = r.s.appendClickURL(r.val[:0], r.base, r.escapedID, r.sendID, target)
	return appendEscaped(dst, r.val)
}

// trackTarget cleans an href the way browsers do and reports whether the
// link gets a click redirect.
func (r *rewriter) trackTarget(href string) (string, bool) {
	target := cleanURL(href)
	if !trackable(target) {
		return "", false
	}
	if p := r.base; p != "" && strings.HasPrefix(target, p) {
		rest := target[len(p):]
		if strings.HasPrefix(rest, "/t/") || strings.HasPrefix(rest, "/unsubscribe/") {
			return "", false
		}
	}
	return target, true
}

// cleanURL strips leading and trailing C0 controls and spaces and removes
// ASCII tab and newline, as the URL standard's parser does.
func cleanURL(s string) string {
	i, j := 0, len(s)
	for i < j && s[i] <= ' ' {
		i++
	}
	for j > i && s[j-1] <= ' ' {
		j--
	}
	s = s[i:j]
	if strings.ContainsAny(s, "\t\n\r") {
		s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	}
	return s
}

// attrSpan locates one attribute inside a raw start tag.
type attrSpan struct {
	keyStart, keyEnd int
	valStart, valEnd int  // the value without quotes
	end              int  // just past the attribute (and its closing quote)
	saved            bool // the tokenizer reports it: non-empty and not a duplicate name
	index            int  // its position among the reported attributes
}

// lexAttrs reads the tag at the start of tag ("<a …>…" or "/a …>…") exactly
// as golang.org/x/net/html's Tokenizer.readTag does, and returns the index of
// its closing '>' (len(tag) when there is none) and, when record is set, its
// attributes appended to spans. FuzzRewrite checks it against the tokenizer,
// and so does anchor when values need decoding.
func lexAttrs(tag []byte, spans []attrSpan, record bool) ([]attrSpan, int) {
	n := len(tag)
	i := 2 // past '<' and the first letter of the name
	// Tag name: up to white space (consumed), '/' or '>'.
	for ; i < n; i++ {
		if c := tag[i]; isSpace(c) {
			i++
			break
		} else if c == '/' || c == '>' {
			break
		}
	}
	i = skipSpace(tag, i)
	for i < n && tag[i] != '>' {
		sp := attrSpan{keyStart: i}
		// Key: up to white space, '/', '>' or a '=' that is not its first byte.
		j := i
		for ; j < n; j++ {
			c := tag[j]
			if c == '=' && j == i {
				continue
			}
			if c == '=' || isSpace(c) || c == '/' || c == '>' {
				break
			}
		}
		sp.keyEnd, sp.valStart, sp.valEnd, sp.end = j, j, j, j
		// Value.
		k := skipSpace(tag, j)
		switch {
		case k >= n:
			i = k
		case tag[k] == '/':
			i = k + 1
		case tag[k] != '=':
			i = k
		default:
			k = skipSpace(tag, k+1)
			switch {
			case k >= n:
				sp.end, i = k, k
			case tag[k] == '>':
				sp.end, i = k, k
			case tag[k] == '"' || tag[k] == '\'':
				q := tag[k]
				sp.valStart = k + 1
				e := bytes.IndexByte(tag[k+1:], q)
				if e < 0 {
					sp.valEnd, sp.end, i = n, n, n
				} else {
					sp.valEnd = k + 1 + e
					sp.end, i = sp.valEnd+1, sp.valEnd+1
				}
			default:
				sp.valStart = k
				e := k + 1
				for e < n && !isSpace(tag[e]) && tag[e] != '>' {
					e++
				}
				sp.valEnd, sp.end = e, e
				i = e
				if e < n && isSpace(tag[e]) {
					i = e + 1
				}
			}
		}
		if record {
			spans = append(spans, sp)
		}
		i = skipSpace(tag, i)
	}
	if record {
		markSaved(tag, spans)
	}
	return spans, i
}

// markSaved sets saved on the attributes the tokenizer reports: those with
// a name that no earlier attribute has (ASCII case-insensitively).
func markSaved(tag []byte, spans []attrSpan) {
	var seen map[string]bool
	if len(spans) > 16 {
		seen = make(map[string]bool, len(spans))
	}
	for i := range spans {
		sp := &spans[i]
		key := tag[sp.keyStart:sp.keyEnd]
		if len(key) == 0 {
			continue
		}
		if seen != nil {
			k := string(asciiLower(key))
			if !seen[k] {
				seen[k], sp.saved = true, true
			}
			continue
		}
		sp.saved = true
		for _, o := range spans[:i] {
			if o.saved && equalFoldBytes(tag[o.keyStart:o.keyEnd], key) {
				sp.saved = false
				break
			}
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f'
}

// isTag reports whether raw, from offset off, starts with the tag name name
// (lower case), ASCII case-insensitively, followed by the end of the name.
func isTag(raw []byte, off int, name string) bool {
	if len(raw) < off+len(name)+1 || !equalFold(raw[off:off+len(name)], name) {
		return false
	}
	c := raw[off+len(name)]
	return isSpace(c) || c == '/' || c == '>'
}

// equalFold compares b and the lower-case ASCII s, folding ASCII case in b.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// asciiLower returns a lower-cased (ASCII only, like the tokenizer) copy of b.
func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

func equalFoldBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// appendEscaped appends s escaped for an HTML attribute value or text.
func appendEscaped[T ~string | ~[]byte](dst []byte, s T) []byte {
	last := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		default:
			continue
		}
		dst = append(dst, s[last:i]...)
		dst = append(dst, esc...)
		last = i + 1
	}
	return append(dst, s[last:]...)
}
