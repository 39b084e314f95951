package delivery

import (
	"bytes"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/mail"
	"path"
	"strings"
	"time"

	"github.com/emersion/go-message"
)

// Address is a mailbox: an optional display name and an address.
type Address struct {
	Name  string
	Email string
}

// String formats a for a header, RFC 2047-encoding a non-ASCII name.
func (a Address) String() string {
	return (&mail.Address{Name: a.Name, Address: a.Email}).String()
}

// Attachment is a file attached to a message (Content-Disposition:
// attachment, base64).
type Attachment struct {
	// Filename as shown to the recipient. Non-ASCII names are RFC 2231
	// encoded. Required.
	Filename string
	// ContentType such as "application/pdf". Defaults to the type for the
	// file extension, else application/octet-stream.
	ContentType string
	// Data is the file content.
	Data []byte
}

// ListUnsubscribe produces the List-Unsubscribe header (RFC 2369) and, with
// OneClick, List-Unsubscribe-Post (RFC 8058). Bulk senders to Gmail and Yahoo
// must offer one-click unsubscription on marketing mail.
type ListUnsubscribe struct {
	// URL is the https URL the receiver POSTs "List-Unsubscribe=One-Click" to
	// (and the recipient may open).
	URL string
	// Mailto is an address that unsubscribes whoever writes to it, with or
	// without the "mailto:" prefix, optionally with ?subject=.
	Mailto string
	// OneClick adds "List-Unsubscribe-Post: List-Unsubscribe=One-Click".
	// Requires an https URL.
	OneClick bool
}

// Header is an extra header field.
type Header struct {
	Name  string
	Value string
}

// Message is everything needed to compose one email.
type Message struct {
	From    Address
	To      []Address
	Cc      []Address
	ReplyTo []Address
	// Subject is RFC 2047-encoded when it is not plain ASCII.
	Subject string
	// Text and HTML are the bodies. With both, the message is
	// multipart/alternative (text first). Line endings may be LF or CRLF.
	Text string
	HTML string
	// Attachments make the message multipart/mixed.
	Attachments []Attachment
	// MessageID is the Message-ID with or without angle brackets. Defaults
	// to NewMessageID(domain of From).
	MessageID string
	// Date defaults to the time of composition.
	Date time.Time
	// ListUnsubscribe, when set, adds the unsubscribe headers (marketing mail).
	ListUnsubscribe *ListUnsubscribe
	// Headers are extra fields such as X-Lasso-Send-ID, Feedback-ID or
	// In-Reply-To, written in order after the standard ones. Fields that
	// Message sets itself (From, To, Subject, Content-Type, …) are refused.
	// Non-ASCII values are RFC 2047-encoded.
	Headers []Header
}

// ErrHeaderInjection is returned by Compose when a header value or name
// contains CR or LF (or a name contains other forbidden characters).
var ErrHeaderInjection = errors.New("delivery: CR or LF in header field")

// reservedHeaders are set by Compose from Message fields; Headers may not
// repeat them.
var reservedHeaders = map[string]bool{
	"from": true, "to": true, "cc": true, "bcc": true, "reply-to": true, "sender": true,
	"subject": true, "date": true, "message-id": true, "mime-version": true,
	"content-type": true, "content-transfer-encoding": true, "content-disposition": true,
	"list-unsubscribe": true, "list-unsubscribe-post": true, "dkim-signature": true,
	"return-path": true,
}

// NewMessageID returns a new unique Message-ID "<random@domain>".
func NewMessageID(domain string) string {
	var b [15]byte
	_, _ = rand.Read(b[:])
	id := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	if domain == "" {
		domain = "localhost"
	}
	return "<" + id + "@" + domain + ">"
}

// Compose renders m as an RFC 5322 message with CRLF line endings and no
// line longer than 998 octets. Text parts are 7bit when they are ASCII with
// short lines, quoted-printable otherwise; attachments are base64.
func Compose(m *Message) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(1024 + len(m.Text) + len(m.HTML)*11/10 + attachmentsSize(m.Attachments))
	if err := compose(&buf, m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func attachmentsSize(atts []Attachment) int {
	n := 0
	for _, a := range atts {
		n += len(a.Data)*4/3 + len(a.Data)/38 + 256
	}
	return n
}

func compose(w io.Writer, m *Message) error {
	var fields []string
	add := func(name, value string) error {
		f, err := formatField(name, value)
		if err != nil {
			return err
		}
		fields = append(fields, f)
		return nil
	}

	from, err := formatAddresses("From", []Address{m.From})
	if err != nil {
		return err
	}
	if len(m.To) == 0 && len(m.Cc) == 0 {
		return errors.New("delivery: message has no To or Cc")
	}
	if err := add("From", from); err != nil {
		return err
	}
	for _, h := range []struct {
		name  string
		addrs []Address
	}{{"To", m.To}, {"Cc", m.Cc}, {"Reply-To", m.ReplyTo}} {
		if len(h.addrs) == 0 {
			continue
		}
		v, err := formatAddresses(h.name, h.addrs)
		if err != nil {
			return err
		}
		if err := add(h.name, v); err != nil {
			return err
		}
	}
	if strings.ContainsAny(m.Subject, "\r\n") {
		return ErrHeaderInjection
	}
	if err := add("Subject", encodeText(m.Subject)); err != nil {
		return err
	}
	date := m.Date
	if date.IsZero() {
		date = time.Now()
	}
	if err := add("Date", date.Format(time.RFC1123Z)); err != nil {
		return err
	}
	id, err := messageID(m)
	if err != nil {
		return err
	}
	if err := add("Message-ID", id); err != nil {
		return err
	}
	if lu := m.ListUnsubscribe; lu != nil {
		v, err := listUnsubscribe(lu)
		if err != nil {
			return err
		}
		if err := add("List-Unsubscribe", v); err != nil {
			return err
		}
		if lu.OneClick {
			if err := add("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"); err != nil {
				return err
			}
		}
	}
	for _, h := range m.Headers {
		if err := checkFieldName(h.Name); err != nil {
			return err
		}
		if reservedHeaders[strings.ToLower(h.Name)] {
			return fmt.Errorf("delivery: header %q is set from Message fields, not Headers", h.Name)
		}
		if strings.ContainsAny(h.Value, "\r\n") {
			return ErrHeaderInjection
		}
		if err := add(h.Name, encodeText(h.Value)); err != nil {
			return err
		}
	}
	if err := add("MIME-Version", "1.0"); err != nil {
		return err
	}

	// Body tree.
	var body part
	text := part{contentType: "text/plain", params: map[string]string{"charset": "utf-8"}, text: m.Text}
	html := part{contentType: "text/html", params: map[string]string{"charset": "utf-8"}, text: m.HTML}
	switch {
	case m.HTML != "" && m.Text != "":
		body = part{contentType: "multipart/alternative", children: []part{text, html}}
	case m.HTML != "":
		body = html
	default:
		body = text
	}
	if len(m.Attachments) > 0 {
		mixed := part{contentType: "multipart/mixed", children: []part{body}}
		for _, a := range m.Attachments {
			p, err := attachmentPart(a)
			if err != nil {
				return err
			}
			mixed.children = append(mixed.children, p)
		}
		body = mixed
	}

	var h message.Header
	for _, f := range body.headerFields() {
		fields = append(fields, f)
	}
	// go-message writes fields in reverse order of insertion.
	for i := len(fields) - 1; i >= 0; i-- {
		h.AddRaw([]byte(fields[i]))
	}
	mw, err := message.CreateWriter(w, h)
	if err != nil {
		return fmt.Errorf("delivery: compose: %w", err)
	}
	if err := body.writeBody(mw); err != nil {
		return fmt.Errorf("delivery: compose: %w", err)
	}
	return mw.Close()
}

// part is one MIME entity of the body tree.
type part struct {
	contentType string
	params      map[string]string
	disposition string // "attachment" or ""
	filename    string
	text        string // text parts
	data        []byte // attachments
	children    []part // multipart
}

func (p *part) encoding() string {
	switch {
	case len(p.children) > 0:
		return ""
	case p.data != nil || p.disposition != "":
		return "base64"
	case is7bit(p.text):
		return "7bit"
	default:
		return "quoted-printable"
	}
}

// headerFields returns the raw Content-* fields of p.
func (p *part) headerFields() []string {
	params := p.params
	if len(p.children) > 0 {
		params = map[string]string{"boundary": newBoundary()}
	}
	fields := []string{mustField("Content-Type", mime.FormatMediaType(p.contentType, params))}
	if enc := p.encoding(); enc != "" {
		fields = append(fields, mustField("Content-Transfer-Encoding", enc))
	}
	if p.disposition != "" {
		fields = append(fields, mustField("Content-Disposition",
			mime.FormatMediaType(p.disposition, map[string]string{"filename": p.filename})))
	}
	return fields
}

func (p *part) writeBody(w *message.Writer) error {
	if len(p.children) > 0 {
		for i := range p.children {
			c := &p.children[i]
			var h message.Header
			fields := c.headerFields()
			for j := len(fields) - 1; j >= 0; j-- {
				h.AddRaw([]byte(fields[j]))
			}
			cw, err := w.CreatePart(h)
			if err != nil {
				return err
			}
			if err := c.writeBody(cw); err != nil {
				return err
			}
			if err := cw.Close(); err != nil {
				return err
			}
		}
		return nil
	}
	if p.data != nil || p.disposition != "" {
		_, err := w.Write(p.data)
		return err
	}
	_, err := io.WriteString(w, normalizeNewlines(p.text))
	return err
}

func attachmentPart(a Attachment) (part, error) {
	if a.Filename == "" {
		return part{}, errors.New("delivery: attachment without filename")
	}
	if strings.ContainsAny(a.Filename, "\r\n") || strings.ContainsAny(a.ContentType, "\r\n") {
		return part{}, ErrHeaderInjection
	}
	ct := a.ContentType
	if ct == "" {
		ct = mime.TypeByExtension(path.Ext(a.Filename))
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return part{}, fmt.Errorf("delivery: attachment %q: content type %q: %w", a.Filename, a.ContentType, err)
	}
	if strings.HasPrefix(mt, "multipart/") {
		return part{}, fmt.Errorf("delivery: attachment %q: multipart content type not allowed", a.Filename)
	}
	params["name"] = a.Filename
	data := a.Data
	if data == nil {
		data = []byte{}
	}
	return part{contentType: mt, params: params, disposition: "attachment", filename: a.Filename, data: data}, nil
}

func newBoundary() string {
	var b [18]byte
	_, _ = rand.Read(b[:])
	return "=_" + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])
}

func messageID(m *Message) (string, error) {
	id := strings.TrimSpace(m.MessageID)
	if id == "" {
		_, domain, _ := strings.Cut(m.From.Email, "@")
		return NewMessageID(domain), nil
	}
	id = strings.TrimSuffix(strings.TrimPrefix(id, "<"), ">")
	left, right, ok := strings.Cut(id, "@")
	if !ok || left == "" || right == "" || strings.ContainsAny(id, " \t\r\n<>\"") || !isASCII(id) {
		return "", fmt.Errorf("delivery: invalid Message-ID %q", m.MessageID)
	}
	return "<" + id + ">", nil
}

func listUnsubscribe(lu *ListUnsubscribe) (string, error) {
	var vals []string
	if lu.URL != "" {
		if !strings.HasPrefix(lu.URL, "https://") && !strings.HasPrefix(lu.URL, "http://") {
			return "", fmt.Errorf("delivery: List-Unsubscribe URL %q is not http(s)", lu.URL)
		}
		if err := checkURIChars(lu.URL); err != nil {
			return "", err
		}
		vals = append(vals, "<"+lu.URL+">")
	}
	if lu.Mailto != "" {
		mt := lu.Mailto
		if !strings.HasPrefix(strings.ToLower(mt), "mailto:") {
			mt = "mailto:" + mt
		}
		if err := checkURIChars(mt); err != nil {
			return "", err
		}
		vals = append(vals, "<"+mt+">")
	}
	if len(vals) == 0 {
		return "", errors.New("delivery: ListUnsubscribe needs a URL or a Mailto")
	}
	if lu.OneClick && !strings.HasPrefix(lu.URL, "https://") {
		return "", errors.New("delivery: one-click unsubscribe (RFC 8058) needs an https URL")
	}
	return strings.Join(vals, ", "), nil
}

// checkURIChars refuses characters that cannot appear in a URI inside <>.
func checkURIChars(u string) error {
	if strings.ContainsAny(u, "\r\n") {
		return ErrHeaderInjection
	}
	for i := 0; i < len(u); i++ {
		if c := u[i]; c <= ' ' || c >= 0x7f || c == '<' || c == '>' || c == '"' {
			return fmt.Errorf("delivery: URI %q contains a character that must be percent-encoded", u)
		}
	}
	return nil
}

func formatAddresses(field string, addrs []Address) (string, error) {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		if strings.ContainsAny(a.Name, "\r\n") || strings.ContainsAny(a.Email, "\r\n") {
			return "", ErrHeaderInjection
		}
		if a.Email == "" {
			return "", fmt.Errorf("delivery: %s address is empty", field)
		}
		if _, err := mail.ParseAddress(a.Email); err != nil {
			return "", fmt.Errorf("delivery: %s address %q: %w", field, a.Email, err)
		}
		out = append(out, a.String())
	}
	return strings.Join(out, ", "), nil
}

// encodeText RFC 2047-encodes an unstructured header value when needed.
func encodeText(s string) string {
	plain := true
	nonASCII := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			nonASCII++
		}
		if (c < ' ' && c != '\t') || c >= 0x7f {
			plain = false
		}
	}
	if plain && !strings.Contains(s, "=?") {
		return s
	}
	if nonASCII*3 > len(s) {
		return mime.BEncoding.Encode("utf-8", s)
	}
	return mime.QEncoding.Encode("utf-8", s)
}

func checkFieldName(name string) error {
	if name == "" {
		return errors.New("delivery: empty header name")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '\r' || c == '\n' {
			return ErrHeaderInjection
		}
		if c <= ' ' || c >= 0x7f || c == ':' {
			return fmt.Errorf("delivery: invalid header name %q", name)
		}
	}
	return nil
}

const (
	foldAt      = 78  // RFC 5322 §2.1.1 "SHOULD"
	maxLineSize = 998 // RFC 5322 §2.1.1 "MUST"
)

// formatField returns "Name: value\r\n", folded at spaces so that lines stay
// within 78 octets when possible and never exceed 998.
func formatField(name, value string) (string, error) {
	if err := checkFieldName(name); err != nil {
		return "", err
	}
	if strings.ContainsAny(value, "\r\n") {
		return "", ErrHeaderInjection
	}
	line := name + ": " + value
	if len(line) <= foldAt {
		return line + "\r\n", nil
	}
	var b strings.Builder
	b.Grow(len(line) + len(line)/foldAt*3 + 2)
	cur := 0 // length of the current physical line
	words := strings.Split(line, " ")
	for i, word := range words {
		if i == 0 {
			b.WriteString(word)
			cur = len(word)
			continue
		}
		// Fold before this word if it does not fit, but never between the
		// field name and the first word of the value.
		if cur+1+len(word) > foldAt && i > 1 && cur > 1 {
			b.WriteString("\r\n")
			cur = 0
		}
		b.WriteByte(' ')
		b.WriteString(word)
		cur += 1 + len(word)
		if cur > maxLineSize {
			return "", fmt.Errorf("delivery: header %s has a word longer than %d octets", name, maxLineSize-1)
		}
	}
	b.WriteString("\r\n")
	return b.String(), nil
}

func mustField(name, value string) string {
	f, err := formatField(name, value)
	if err != nil {
		panic(err) // only used for values we generate
	}
	return f
}

// is7bit reports whether s can be sent as 7bit: ASCII without NUL or bare
// CR, lines no longer than 998 octets.
func is7bit(s string) bool {
	line := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x80 || c == 0:
			return false
		case c == '\n':
			line = 0
			continue
		case c == '\r':
			if i+1 >= len(s) || s[i+1] != '\n' {
				return false
			}
			continue
		}
		line++
		if line > maxLineSize {
			return false
		}
	}
	return true
}

// normalizeNewlines turns CRLF and bare CR into LF; the transfer encoders
// then write CRLF.
func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}
