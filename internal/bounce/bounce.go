// Package bounce parses returned mail: delivery status notifications
// (RFC 3464 multipart/report and the many non-standard bounce formats of
// Postfix, Exim, sendmail, qmail, Exchange/Office 365, Gmail, Yahoo, Amazon
// SES, Japanese carriers, …), abuse/feedback-loop complaints (RFC 5965 ARF
// and a few proprietary shapes) and RFC 3834 auto-replies.
//
// The package is pure: Parse takes the raw bytes of one message and returns
// a Report; it does no I/O, never panics and only fails for empty input.
//
// Each failed recipient is classified into a fine-grained reason
// ("userunknown", "mailboxfull", "spamdetected", …) and a Kind:
//
//   - KindHard: the address itself is bad (unknown user or mailbox, unknown
//     domain, moved, a domain that accepts no mail). Suppress it.
//   - KindSoft: anything else that failed, even with a 5xx code (spam,
//     policy, reputation, authentication, content, size, full mailbox,
//     disabled account, expired in queue, temporary errors). Do not suppress.
//   - KindComplaint: the recipient complained (ARF, FBL).
//   - KindAutoReply: an out-of-office or other automatic reply.
//   - KindNotBounce: anything else, including success DSNs.
//
// ClassifySMTP applies the same rules to a synchronous SMTP reply so that
// the outbound MTA and the bounce processor agree.
package bounce

import (
	"errors"
	"fmt"
	"html"
	"regexp"
	"strings"
)

// Kind is the coarse classification of a message or of one recipient.
type Kind string

// The kinds a Report or Recipient can have.
const (
	KindHard      Kind = "hard"
	KindSoft      Kind = "soft"
	KindComplaint Kind = "complaint"
	KindAutoReply Kind = "auto-reply"
	KindNotBounce Kind = "not-bounce"
)

// Recipient is one recipient reported by a bounce or complaint.
type Recipient struct {
	Address    string // as reported, not case-folded
	Kind       Kind
	Reason     string // fine-grained reason, see the Reason* constants
	Status     string // RFC 3463 enhanced status code, e.g. "5.1.1"; "" if none
	Diagnostic string // the remote server's reply or the bounce's explanation
	Action     string // DSN Action: failed, delayed, delivered, relayed, expanded
	RemoteMTA  string // host that produced the diagnostic, if known
}

// Report is the result of parsing one message.
type Report struct {
	Kind       Kind // Kind of the first recipient, or of the message
	Reason     string
	Recipients []Recipient
	Status     string // Status of the first recipient
	Diagnostic string // Diagnostic of the first recipient

	// Format names the shape that was recognised: "dsn", "arf",
	// "ses-json", "text", "auto-reply", "none".
	Format string

	// FeedbackType is the ARF Feedback-Type ("abuse", "fraud", …) for
	// complaints.
	FeedbackType string

	// Subject and From of the report message itself (decoded).
	Subject string
	From    string

	// OriginalMessageID is the Message-ID of the returned original message
	// (angle brackets removed), when the bounce includes it.
	OriginalMessageID string
	// OriginalHeaders are the header fields of the returned original
	// message, keyed by canonical name (net/textproto style), values in
	// order. Use it to find X-Lasso-Send-ID and friends.
	OriginalHeaders map[string][]string

	// EnvelopeTo is ParseOptions.EnvelopeTo, echoed back.
	EnvelopeTo string
}

// OriginalHeader returns the first value of an original header field.
func (r *Report) OriginalHeader(name string) string {
	if r == nil || r.OriginalHeaders == nil {
		return ""
	}
	if v := r.OriginalHeaders[canonicalKey(name)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// ParseOptions carries optional context for Parse.
type ParseOptions struct {
	// EnvelopeTo is the envelope recipient the bounce was delivered to
	// (typically a VERP address). It is never reported as a failed
	// recipient and is echoed in Report.EnvelopeTo.
	EnvelopeTo string
}

// ErrEmpty is returned for empty input.
var ErrEmpty = errors.New("bounce: empty message")

// Parse parses one raw message (RFC 5322 bytes, LF or CRLF).
func Parse(raw []byte) (*Report, error) {
	return ParseWithOptions(raw, ParseOptions{})
}

// ParseWithOptions is Parse with extra context.
func ParseWithOptions(raw []byte, opts ParseOptions) (rep *Report, err error) {
	defer func() {
		if p := recover(); p != nil {
			rep = &Report{Kind: KindNotBounce, Format: "none", EnvelopeTo: opts.EnvelopeTo}
			err = fmt.Errorf("bounce: unparseable message: %v", p)
		}
	}()
	if len(strings.TrimSpace(string(raw))) == 0 {
		return &Report{Kind: KindNotBounce, Format: "none", EnvelopeTo: opts.EnvelopeTo}, ErrEmpty
	}
	return parse(raw, opts), nil
}

// message gathers what the detectors need.
type message struct {
	root     *part
	subject  string
	from     string
	original *part   // header part of the returned message, if any
	dsn      []*part // message/delivery-status parts
	arf      []*part // message/feedback-report parts
	texts    []string
	exclude  map[string]bool // addresses that are never failed recipients
	// excludeOrig holds the original's sender addresses: not recipients
	// unless the bounce lists them as such on a line of their own.
	excludeOrig map[string]bool
	opts        ParseOptions
}

func parse(raw []byte, opts ParseOptions) *Report {
	m := &message{root: parseMessage(trimBOM(raw)), opts: opts, exclude: map[string]bool{}, excludeOrig: map[string]bool{}}
	m.subject = decodeHeader(m.root.header.get("Subject"))
	m.from = decodeHeader(m.root.header.get("From"))
	m.collect()

	rep := &Report{Subject: m.subject, From: m.from, EnvelopeTo: opts.EnvelopeTo}
	if m.original != nil {
		rep.OriginalHeaders = headerMap(m.original.header)
		rep.OriginalMessageID = strings.Trim(strings.TrimSpace(m.original.header.get("Message-ID")), "<>")
	}

	switch {
	case m.parseARF(rep):
	case m.parseSES(rep):
	case m.parseDSN(rep):
	case m.isAutoReply() && !m.looksLikeBounce():
		m.parseAutoReply(rep)
	case m.parseText(rep):
	case m.isAutoReply():
		m.parseAutoReply(rep)
	default:
		rep.Kind = KindNotBounce
		rep.Format = "none"
	}
	if rep.Format == "" {
		rep.Format = "none"
	}
	if len(rep.Recipients) > 0 {
		first := rep.Recipients[0]
		if rep.Kind == "" {
			rep.Kind = first.Kind
		}
		if rep.Reason == "" {
			rep.Reason = first.Reason
		}
		rep.Status = first.Status
		rep.Diagnostic = first.Diagnostic
	}
	if rep.Kind == "" {
		rep.Kind = KindNotBounce
	}
	return rep
}

// collect finds the report parts, the returned original and the
// human-readable text of the bounce.
func (m *message) collect() {
	var visit func(p *part, inOriginal bool)
	visit = func(p *part, inOriginal bool) {
		switch {
		case p.mediaType == "message/delivery-status" || p.mediaType == "message/global-delivery-status" ||
			p.mediaType == "text/delivery-status" || p.mediaType == "message/delivery-status-notification":
			if !inOriginal {
				m.dsn = append(m.dsn, p)
			}
			return
		case p.mediaType == "message/feedback-report" || p.mediaType == "text/feedback-report":
			if !inOriginal {
				m.arf = append(m.arf, p)
			}
			return
		case isMessageType(p.mediaType):
			if len(p.children) > 0 && !inOriginal {
				if m.original == nil && p != m.root {
					m.original = p.children[0]
				}
				// Some MTAs wrap the whole report in message/rfc822
				// (forwarded bounces); look inside for report parts.
				c := p.children[0]
				if isReportLike(c) {
					visit(c, false)
					return
				}
				for _, cc := range c.children {
					if cc.mediaType == "message/delivery-status" || cc.mediaType == "message/feedback-report" {
						visit(c, false)
						return
					}
				}
			}
			return
		case strings.HasPrefix(p.mediaType, "multipart/"):
			for _, c := range p.children {
				visit(c, inOriginal)
			}
			return
		case p.mediaType == "text/html":
			if !inOriginal {
				m.texts = append(m.texts, htmlToText(p.body))
			}
			return
		case strings.HasPrefix(p.mediaType, "text/") || p.mediaType == "" || p.mediaType == "application/octet-stream" && p == m.root:
			if !inOriginal {
				if p.mediaType == "text/rfc822-headers" {
					return
				}
				m.texts = append(m.texts, p.body)
			}
		}
	}
	visit(m.root, false)
	if m.original == nil {
		m.original = inlineOriginal(strings.Join(m.texts, "\n"))
	}

	// Addresses that belong to the sender side and are never the failed
	// recipient.
	for _, name := range []string{"From", "To", "Reply-To", "Return-Path", "Sender", "Delivered-To", "Envelope-To", "Cc"} {
		for _, v := range m.root.header.values(name) {
			for _, a := range findAddrs(v) {
				m.exclude[strings.ToLower(a)] = true
			}
		}
	}
	if m.original != nil {
		for _, name := range []string{"From", "Reply-To", "Return-Path", "Sender", "Errors-To"} {
			for _, v := range m.original.header.values(name) {
				for _, a := range findAddrs(v) {
					m.excludeOrig[strings.ToLower(a)] = true
				}
			}
		}
	}
	if m.opts.EnvelopeTo != "" {
		m.exclude[strings.ToLower(strings.Trim(m.opts.EnvelopeTo, "<> "))] = true
	}
}

func isReportLike(p *part) bool {
	return p.mediaType == "multipart/report"
}

var (
	reAddr      = regexp.MustCompile(`[A-Za-z0-9!#$%&'*+/=?^_` + "`" + `{|}~.\-]+@[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?)+`)
	reTag       = regexp.MustCompile(`(?s)<[^>]*>`)
	reHTMLBreak = regexp.MustCompile(`(?i)<(br|/p|/div|/tr|/li|/h\d|/table|p|div|tr|li)\b[^>]*>`)
	reHTMLDrop  = regexp.MustCompile(`(?is)<(script|style|head)\b.*?</(script|style|head)>`)
)

// findAddrs returns the e-mail addresses in s, in order, cleaned.
func findAddrs(s string) []string {
	var out []string
	for _, ix := range reAddr.FindAllStringIndex(s, -1) {
		if ix[0] > 0 && (s[ix[0]-1] == '/' || s[ix[0]-1] == '|' || s[ix[0]-1] == '\\') {
			continue // a path, not an address
		}
		a := cleanAddr(s[ix[0]:ix[1]])
		if a != "" {
			out = append(out, a)
		}
	}
	return out
}

func cleanAddr(a string) string {
	a = strings.TrimSpace(a)
	a = strings.Trim(a, "<>\"'`;,:()[]{}")
	a = strings.TrimRight(a, ".")
	a = strings.TrimLeft(a, ".")
	at := strings.LastIndexByte(a, '@')
	if at <= 0 || at == len(a)-1 || a[0] == '/' || a[0] == '|' {
		return ""
	}
	return a
}

func htmlToText(s string) string {
	s = reHTMLDrop.ReplaceAllString(s, " ")
	s = reHTMLBreak.ReplaceAllString(s, "\n")
	s = reTag.ReplaceAllString(s, " ")
	return html.UnescapeString(s)
}

func canonicalKey(name string) string {
	b := []byte(strings.ToLower(strings.TrimSpace(name)))
	up := true
	for i, c := range b {
		if up && c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		up = c == '-'
	}
	return string(b)
}

func headerMap(h header) map[string][]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string][]string, len(h))
	for _, f := range h {
		k := canonicalKey(f.name)
		out[k] = append(out[k], f.value)
	}
	return out
}

// addRecipient appends r unless the address is already present.
func addRecipient(rs []Recipient, r Recipient) []Recipient {
	for i := range rs {
		if strings.EqualFold(rs[i].Address, r.Address) {
			// Prefer the entry with more information.
			if rs[i].Diagnostic == "" && r.Diagnostic != "" {
				rs[i] = r
			}
			return rs
		}
	}
	return append(rs, r)
}

func collapse(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if max > 0 && len(s) > max {
		cut := max
		for cut > 0 && (s[cut]&0xC0) == 0x80 {
			cut--
		}
		s = s[:cut]
	}
	return s
}
