package smtpd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // decode every charset a client may use

	"github.com/lasso-mail/lasso/internal/apperr"
)

// payloadHint ends the messages of payload errors.
const payloadHint = "the body must be the JSON payload of POST /v1/transactional, for example {\"transactionalId\": \"...\", \"email\": \"...\"}"

func invalidBody(format string, args ...any) error {
	return apperr.New(apperr.Invalid, format, args...)
}

// extractJSON returns the JSON send payload carried by a submitted message
// (Loops SMTP, spec §8): the first text/plain part that is not an
// attachment, else the first text/html part with its tags stripped and
// entities decoded; trimmed; /* … */ and // … comments outside strings
// and trailing commas are tolerated. The result is a compact JSON object.
// Errors are apperr.Invalid with a message meant for the client.
func extractJSON(raw []byte) ([]byte, error) {
	text, err := bodyText(raw)
	if err != nil {
		return nil, err
	}
	return lenientJSON(text)
}

// bodyText returns the text of the part that carries the payload.
func bodyText(raw []byte) (string, error) {
	// A body with no header at all (some scripts send just the JSON).
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return string(t), nil
	}
	e, err := message.Read(bytes.NewReader(raw))
	if err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err) {
		return "", invalidBody("The message could not be parsed (malformed header); %s.", payloadHint)
	}
	var plain, htmlText *string
	walkErr := e.Walk(func(path []int, part *message.Entity, err error) error {
		if plain != nil {
			return errStopWalk
		}
		mt, params, _ := part.Header.ContentType()
		if mt == "" && part.Header.Get("Content-Type") == "" {
			mt = "text/plain" // RFC 2045 §5.2, RFC 2046 §5.1.1: the default
		}
		if strings.HasPrefix(mt, "multipart/") {
			return nil
		}
		if disp, _, _ := part.Header.ContentDisposition(); disp == "attachment" {
			return nil
		}
		switch mt {
		case "text/plain":
			b, rerr := io.ReadAll(part.Body)
			if rerr != nil && len(b) == 0 {
				return nil
			}
			s := string(b)
			if strings.EqualFold(params["format"], "flowed") {
				s = unflow(s, strings.EqualFold(params["delsp"], "yes"))
			}
			plain = &s
			return errStopWalk
		case "text/html":
			if htmlText != nil {
				return nil
			}
			b, rerr := io.ReadAll(part.Body)
			if rerr != nil && len(b) == 0 {
				return nil
			}
			s := htmlToText(string(b))
			htmlText = &s
		}
		return nil
	})
	switch {
	case plain != nil:
		return *plain, nil
	case htmlText != nil:
		return *htmlText, nil
	case walkErr != nil && !errors.Is(walkErr, errStopWalk):
		return "", invalidBody("The message could not be parsed (malformed MIME structure); %s.", payloadHint)
	}
	return "", invalidBody("The message has no text/plain or text/html part; %s.", payloadHint)
}

var errStopWalk = errors.New("stop walk")

// unflow undoes format=flowed (RFC 3676): a line ending in a space continues
// on the next one. Space-stuffing is removed.
func unflow(s string, delSp bool) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	var b strings.Builder
	for i, l := range lines {
		l = strings.TrimPrefix(l, " ")
		flowed := strings.HasSuffix(l, " ") && l != "-- " && i < len(lines)-1
		if flowed && delSp {
			l = l[:len(l)-1]
		}
		b.WriteString(l)
		if !flowed && i < len(lines)-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// htmlToText strips tags, comments and the content of head, script, style
// and title, then decodes entities. Block-level tags become line breaks;
// inline tags vanish, so "<b>dan</b>@loops.so" stays one word.
func htmlToText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	// next returns the offset from i of the next substr (ASCII, any case),
	// or -1. Found positions are remembered, so that the searches of one
	// substr scan s once in all: the stripping stays linear.
	found := map[string]int{}
	next := func(i int, substr string) int {
		if at, ok := found[substr]; ok && (at < 0 || at >= i) {
			if at < 0 {
				return -1
			}
			return at - i
		}
		k := indexFold(s[i:], substr)
		if k < 0 {
			found[substr] = -1
			return -1
		}
		found[substr] = i + k
		return k
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c != '<' || i+1 >= len(s) || !isTagStart(s[i+1]) {
			b.WriteByte(c)
			i++
			continue
		}
		rest := s[i:]
		if strings.HasPrefix(rest, "<!--") {
			end := strings.Index(rest[4:], "-->")
			if end < 0 {
				break
			}
			i += 4 + end + 3
			continue
		}
		n := tagEnd(rest)
		name, closing := tagName(rest)
		i += n
		switch name {
		case "head", "script", "style", "title", "template", "noscript":
			if closing {
				continue
			}
			// Skip to the closing tag; a head also ends where the body starts.
			end := next(i, "</"+name)
			if name == "head" {
				if k := next(i, "<body"); k >= 0 && (end < 0 || k < end) {
					end = k
				}
			}
			if end < 0 {
				i = len(s)
				continue
			}
			i += end
		case "br", "p", "div", "tr", "li", "ul", "ol", "table", "h1", "h2", "h3", "h4", "h5", "h6",
			"pre", "blockquote", "section", "article", "header", "footer", "body", "html", "hr", "center":
			b.WriteByte('\n')
		}
	}
	return html.UnescapeString(b.String())
}

// indexFold is strings.Index for an ASCII substr starting with '<',
// ignoring case, without copying s.
func indexFold(s, substr string) int {
	for i := 0; i+len(substr) <= len(s); {
		k := strings.IndexByte(s[i:], substr[0])
		if k < 0 || i+k+len(substr) > len(s) {
			return -1
		}
		i += k
		if strings.EqualFold(s[i:i+len(substr)], substr) {
			return i
		}
		i++
	}
	return -1
}

func isASCIIAlnum(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

func isTagStart(c byte) bool {
	return c == '/' || c == '!' || c == '?' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// tagEnd returns the length of the tag at the start of s, quotes respected.
func tagEnd(s string) int {
	var quote byte
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			return i + 1
		}
	}
	return len(s)
}

// tagName returns the lowercase name of the tag at the start of s.
func tagName(s string) (name string, closing bool) {
	s = s[1:]
	if strings.HasPrefix(s, "/") {
		closing = true
		s = s[1:]
	}
	end := 0
	for end < len(s) && isASCIIAlnum(s[end]) {
		end++
	}
	return strings.ToLower(s[:end]), closing
}

// lenientJSON cleans text into a compact JSON object, or says why it can't.
func lenientJSON(text string) ([]byte, error) {
	cleaned, err := stripJSONComments(text)
	if err != nil {
		return nil, err
	}
	cleaned = bytes.TrimSpace(cleaned)
	if len(cleaned) == 0 {
		return nil, invalidBody("The message body is empty; %s.", payloadHint)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(cleaned))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, invalidBody("The message body is not valid JSON (%s); %s.", jsonProblem(cleaned, err), payloadHint)
	}
	if rest := bytes.TrimSpace(cleaned[dec.InputOffset():]); len(rest) > 0 {
		line := 1 + bytes.Count(cleaned[:len(cleaned)-len(rest)], []byte("\n"))
		return nil, invalidBody("The message body is not valid JSON (unexpected text after the JSON object at line %d); %s.", line, payloadHint)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, invalidBody("The message body must be a JSON object, not %s; %s.", jsonType(v), payloadHint)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, cleaned); err != nil {
		return nil, invalidBody("The message body is not valid JSON (%s); %s.", jsonProblem(cleaned, err), payloadHint)
	}
	return out.Bytes(), nil
}

func jsonType(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a value"
}

// jsonProblem describes a decoding error with its line.
func jsonProblem(b []byte, err error) string {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		off := min(max(int(se.Offset), 0), len(b))
		line := 1 + bytes.Count(b[:off], []byte("\n"))
		return fmt.Sprintf("%s at line %d", se.Error(), line)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "unexpected end of input"
	}
	return "malformed JSON"
}

// stripJSONComments removes /* … */ and // … comments and trailing commas
// outside strings, and turns Unicode spaces that HTML editors and mailers
// insert (no-break space, zero-width space, BOM) into plain spaces outside
// strings. Line breaks inside comments are kept so line numbers hold.
func stripJSONComments(s string) ([]byte, error) {
	b := make([]byte, 0, len(s))
	inString := false
	for i := 0; i < len(s); {
		c := s[i]
		if inString {
			b = append(b, c)
			i++
			switch c {
			case '\\':
				if i < len(s) {
					b = append(b, s[i])
					i++
				}
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
			b = append(b, c)
			i++
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				line := 1 + strings.Count(s[:i], "\n")
				return nil, invalidBody("The message body is not valid JSON (unterminated /* comment at line %d); %s.", line, payloadHint)
			}
			comment := s[i : i+2+end+2]
			b = append(b, ' ')
			b = append(b, strings.Repeat("\n", strings.Count(comment, "\n"))...)
			i += len(comment)
		case c == '/' && i+1 < len(s) && s[i+1] == '/':
			end := strings.IndexByte(s[i:], '\n')
			if end < 0 {
				end = len(s) - i
			}
			b = append(b, ' ')
			i += end
		case c == '}' || c == ']':
			// Drop a trailing comma: {"a": 1,} and [1, 2,].
			j := len(b) - 1
			for j >= 0 && isJSONSpace(b[j]) {
				j--
			}
			if j >= 0 && b[j] == ',' {
				b = append(b[:j], b[j+1:]...)
			}
			b = append(b, c)
			i++
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == '\u00a0' || r == '\u200b' || r == '\ufeff' || r == '\u2028' || r == '\u2029' || (r != utf8.RuneError && unicode.IsSpace(r)) {
				b = append(b, ' ')
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
		default:
			b = append(b, c)
			i++
		}
	}
	return b, nil
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
