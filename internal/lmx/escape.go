package lmx

// URL safety and escaping helpers. Everything written into the HTML goes
// through appendHTML (text and attribute values alike; quotes are always
// escaped) so no value can open a tag or leave an attribute.

// Scheme classification states.
const (
	schemeUndetermined = iota
	schemeSafe
	schemeUnsafe
)

// schemeScanner finds the scheme of a URL fed to it piece by piece, the
// way a browser parses it: leading spaces and control characters are
// skipped, tabs and newlines anywhere are ignored, and a relative URL (no
// scheme) is safe. It does not allocate.
type schemeScanner struct {
	buf     [12]byte
	n       int
	started bool
	state   int
}

func (s *schemeScanner) feed(str string) {
	for i := 0; i < len(str) && s.state == schemeUndetermined; i++ {
		c := str[i]
		if c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		if !s.started {
			if c <= ' ' {
				continue
			}
			s.started = true
		}
		switch {
		case c == ':':
			if s.n == 0 {
				s.state = schemeSafe // ":x" is a relative path
			} else if allowedScheme(s.buf[:s.n]) {
				s.state = schemeSafe
			} else {
				s.state = schemeUnsafe
			}
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z',
			s.n > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
			if s.n == len(s.buf) {
				s.state = schemeUnsafe // longer than any scheme we allow
				return
			}
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			s.buf[s.n] = c
			s.n++
		default:
			s.state = schemeSafe // relative URL
		}
	}
}

// safe reports the verdict once all input was fed.
func (s *schemeScanner) safe() bool { return s.state != schemeUnsafe }

func allowedScheme(b []byte) bool {
	switch string(b) {
	case "http", "https", "mailto", "tel", "sms", "cid":
		return true
	}
	return false
}

// urlIsSafe reports whether a complete URL may be used in href or src.
func urlIsSafe(u string) bool {
	var s schemeScanner
	s.feed(u)
	return s.safe()
}

// staticPrefixSafe reports whether a URL starting with the static text
// prefix can be safe: false only if the prefix alone already shows a
// forbidden scheme.
func staticPrefixSafe(prefix string) bool {
	var s schemeScanner
	s.feed(prefix)
	return s.safe()
}

// prefixDetermines reports whether the static prefix fixes the scheme
// regardless of what follows.
func prefixDetermines(prefix string) bool {
	var s schemeScanner
	s.feed(prefix)
	return s.state != schemeUndetermined
}

const hexDigits = "0123456789ABCDEF"

// appendHTML appends s escaped for HTML text and quoted attribute values.
func appendHTML(dst []byte, s string) []byte {
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
		case 0:
			esc = "\uFFFD"
		default:
			continue
		}
		dst = append(dst, s[last:i]...)
		dst = append(dst, esc...)
		last = i + 1
	}
	return append(dst, s[last:]...)
}

// appendURLPart appends a variable's value spliced into a URL attribute:
// characters that are never valid in a URL are percent-encoded, then the
// result is HTML-escaped.
func appendURLPart(dst []byte, s string, html bool) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c <= ' ' || c == 0x7f || c == '"' || c == '<' || c == '>' || c == '`' || c == '\\':
			dst = append(dst, '%', hexDigits[c>>4], hexDigits[c&15])
		case html && c == '&':
			dst = append(dst, "&amp;"...)
		case html && c == '\'':
			dst = append(dst, "%27"...)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func escapeHTML(s string) string { return string(appendHTML(nil, s)) }
