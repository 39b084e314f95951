package bounce

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"mime/quotedprintable"
	"strings"
	"unicode/utf8"

	"github.com/emersion/go-message/charset"
)

// Limits that keep hostile input cheap to parse.
const (
	maxDepth = 8
	maxParts = 200
	maxInput = 16 << 20
	// maxRecipients bounds the recipients reported for one message.
	maxRecipients = 100
)

// field is one header field, name as written, value unfolded (not decoded).
type field struct {
	name  string
	value string
}

type header []field

// get returns the first value of the named field ("" if absent).
func (h header) get(name string) string {
	for _, f := range h {
		if strings.EqualFold(f.name, name) {
			return f.value
		}
	}
	return ""
}

// values returns every value of the named field.
func (h header) values(name string) []string {
	var out []string
	for _, f := range h {
		if strings.EqualFold(f.name, name) {
			out = append(out, f.value)
		}
	}
	return out
}

func (h header) has(name string) bool {
	for _, f := range h {
		if strings.EqualFold(f.name, name) {
			return true
		}
	}
	return false
}

// part is one decoded MIME entity.
type part struct {
	header    header
	hasHeader bool
	mediaType string // lower case, "text/plain" when absent
	params    map[string]string
	body      string // transfer-decoded; text/* converted to UTF-8
	rawBody   string // body before transfer decoding
	children  []*part
}

// walk calls fn for p and every descendant, depth first.
func (p *part) walk(fn func(*part) bool) {
	if !fn(p) {
		return
	}
	for _, c := range p.children {
		c.walk(fn)
	}
}

type mimeParser struct {
	parts int
}

// normalizeNewlines turns CRLF and lone CR into LF.
func normalizeNewlines(b []byte) string {
	s := string(b)
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// parseMessage parses raw bytes into a part tree. It never fails: garbage
// becomes a text/plain part with whatever header could be recognised.
func parseMessage(raw []byte) *part {
	if len(raw) > maxInput {
		raw = raw[:maxInput]
	}
	s := strings.TrimLeft(normalizeNewlines(raw), "\n\t ")
	// mbox "From " separator line.
	if strings.HasPrefix(s, "From ") {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	mp := &mimeParser{}
	return mp.parseEntity(s, 0, "text/plain")
}

// isHeaderLine reports whether line looks like "Name: value".
func headerName(line string) (string, bool) {
	i := strings.IndexByte(line, ':')
	if i <= 0 || i > 76 {
		return "", false
	}
	name := line[:i]
	for j := 0; j < len(name); j++ {
		c := name[j]
		if c <= ' ' || c >= 127 {
			return "", false
		}
	}
	return name, true
}

// splitHeader splits s into its header fields and body. If s does not start
// with a header field, the header is empty and everything is body.
func splitHeader(s string) (header, string, bool) {
	var h header
	rest := s
	first := true
	for {
		var line string
		i := strings.IndexByte(rest, '\n')
		if i < 0 {
			line, rest = rest, ""
		} else {
			line, rest = rest[:i], rest[i+1:]
		}
		if strings.TrimRight(line, " \t") == "" {
			if first {
				return nil, s, false
			}
			return h, rest, true
		}
		if line[0] == ' ' || line[0] == '\t' {
			if first {
				return nil, s, false
			}
			if len(h) > 0 {
				h[len(h)-1].value += " " + strings.TrimSpace(line)
			}
		} else if name, ok := headerName(line); ok {
			h = append(h, field{name: name, value: strings.TrimSpace(line[len(name)+1:])})
		} else {
			if first {
				return nil, s, false
			}
			// A non-header line ends the header block (missing blank line).
			return h, line + "\n" + rest, true
		}
		first = false
		if rest == "" {
			return h, "", true
		}
	}
}

func parseContentType(v, def string) (string, map[string]string) {
	if strings.TrimSpace(v) == "" {
		return def, map[string]string{}
	}
	mt, params, err := mime.ParseMediaType(v)
	if err == nil {
		return strings.ToLower(mt), params
	}
	// Lenient fallback.
	params = map[string]string{}
	segs := strings.Split(v, ";")
	mt = strings.ToLower(strings.TrimSpace(segs[0]))
	for _, seg := range segs[1:] {
		k, val, ok := strings.Cut(seg, "=")
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		val = strings.TrimSpace(val)
		val = strings.Trim(val, `"'`)
		if k != "" {
			params[k] = val
		}
	}
	if !strings.Contains(mt, "/") {
		mt = def
	}
	return mt, params
}

func (mp *mimeParser) parseEntity(s string, depth int, defType string) *part {
	mp.parts++
	p := &part{}
	h, body, ok := splitHeader(s)
	p.header, p.hasHeader = h, ok
	p.mediaType, p.params = parseContentType(h.get("Content-Type"), defType)
	p.rawBody = body
	cte := strings.ToLower(strings.TrimSpace(h.get("Content-Transfer-Encoding")))
	decoded := decodeTransfer(body, cte)

	switch {
	case strings.HasPrefix(p.mediaType, "multipart/") && depth < maxDepth && mp.parts < maxParts:
		// Multipart bodies are never legitimately transfer-encoded, but use
		// the decoded form if someone did encode it.
		src := body
		if cte == "base64" || cte == "quoted-printable" {
			src = decoded
		}
		p.body = src
		childDef := "text/plain"
		if p.mediaType == "multipart/digest" {
			childDef = "message/rfc822"
		}
		for _, chunk := range splitMultipart(src, p.params["boundary"]) {
			if mp.parts >= maxParts {
				break
			}
			p.children = append(p.children, mp.parseEntity(chunk, depth+1, childDef))
		}
	case isMessageType(p.mediaType) && depth < maxDepth && mp.parts < maxParts:
		p.body = decoded
		inner := strings.TrimLeft(decoded, "\n")
		if inner != "" {
			p.children = append(p.children, mp.parseEntity(inner, depth+1, "text/plain"))
		}
	default:
		p.body = toUTF8(decoded, p.params["charset"])
	}
	return p
}

func isMessageType(mt string) bool {
	switch mt {
	case "message/rfc822", "message/global", "text/rfc822-headers", "message/rfc822-headers",
		"message/global-headers", "message/partial-headers":
		return true
	}
	return false
}

// splitMultipart returns the body parts between boundary lines. With an
// unknown boundary it tries to guess one from the first "--xxx" line.
func splitMultipart(body, boundary string) []string {
	if boundary == "" {
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "--") && len(line) > 3 && !strings.Contains(line, " ") {
				boundary = strings.TrimSuffix(strings.TrimRight(line[2:], " \t"), "--")
				break
			}
		}
		if boundary == "" {
			return []string{body}
		}
	}
	delim := "--" + boundary
	var parts []string
	var cur strings.Builder
	in := false
	lines := strings.Split(body, "\n")
	for _, line := range lines {
		t := strings.TrimRight(line, " \t")
		if strings.HasPrefix(t, delim) {
			tail := t[len(delim):]
			if tail == "" || tail == "--" {
				if in {
					parts = append(parts, strings.TrimSuffix(cur.String(), "\n"))
				}
				cur.Reset()
				if tail == "--" {
					in = false
					continue
				}
				in = true
				continue
			}
		}
		if in {
			cur.WriteString(line)
			cur.WriteByte('\n')
		}
	}
	if in && cur.Len() > 0 {
		parts = append(parts, cur.String())
	}
	if len(parts) == 0 {
		return []string{body}
	}
	return parts
}

func decodeTransfer(body, cte string) string {
	switch cte {
	case "base64":
		return decodeBase64(body)
	case "quoted-printable":
		out, err := io.ReadAll(quotedprintable.NewReader(strings.NewReader(body)))
		if err != nil && len(out) == 0 {
			return body
		}
		return string(out)
	}
	return body
}

// decodeBase64 decodes leniently: it drops characters outside the alphabet
// and stops at the first undecodable quantum.
func decodeBase64(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' {
			b.WriteByte(c)
		}
	}
	clean := b.String()
	if len(clean)%4 == 1 {
		clean = clean[:len(clean)-1]
	}
	out, err := base64.RawStdEncoding.DecodeString(clean)
	if err != nil {
		// Decode as much as possible.
		n := len(clean) / 4 * 4
		out, _ = base64.RawStdEncoding.DecodeString(clean[:n])
	}
	return string(out)
}

// toUTF8 converts s from the named charset to UTF-8, guessing ISO-2022-JP
// when escape sequences are present and no charset is declared.
func toUTF8(s, cs string) string {
	cs = strings.ToLower(strings.Trim(strings.TrimSpace(cs), `"'`))
	if cs == "" && strings.Contains(s, "\x1b$B") {
		cs = "iso-2022-jp"
	}
	switch cs {
	case "", "us-ascii", "ascii", "utf-8", "utf8", "unknown-8bit", "x-unknown":
		if utf8.ValidString(s) {
			return s
		}
		if cs == "" || cs == "us-ascii" || cs == "ascii" {
			cs = "iso-8859-1"
		} else {
			return strings.ToValidUTF8(s, "\uFFFD")
		}
	}
	r, err := charset.Reader(cs, strings.NewReader(s))
	if err != nil {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	out, err := io.ReadAll(r)
	if err != nil && len(out) == 0 {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ToValidUTF8(string(out), "\uFFFD")
}

var wordDecoder = &mime.WordDecoder{CharsetReader: charset.Reader}

// decodeHeader decodes RFC 2047 encoded words, keeping the input on error.
func decodeHeader(v string) string {
	if !strings.Contains(v, "=?") {
		if strings.Contains(v, "\x1b$B") {
			return toUTF8(v, "iso-2022-jp")
		}
		return strings.ToValidUTF8(v, "\uFFFD")
	}
	out, err := wordDecoder.DecodeHeader(v)
	if err != nil {
		return strings.ToValidUTF8(v, "\uFFFD")
	}
	return out
}

// trimBOM removes a UTF-8 byte order mark.
func trimBOM(b []byte) []byte {
	return bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
}
