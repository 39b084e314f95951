package delivery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"strconv"
	"strings"
)

// Transport hands a composed (and usually DKIM-signed) message to the next
// hop. Implementations: [*Relay], [*MX] and [*Capture].
type Transport interface {
	// Send transfers msg for every recipient in env.To and returns exactly one
	// Result per recipient, in the order of env.To. Send never returns a
	// transport-level error: every failure, including a cancelled ctx, is
	// reported per recipient (temporary unless the failure is known to be
	// permanent). msg must use CRLF line endings.
	Send(ctx context.Context, env Envelope, msg []byte) []Result

	// Close releases pooled connections. It is idempotent; Send after Close
	// still works but does not pool connections any more.
	Close() error
}

// Envelope is the SMTP envelope of one message.
type Envelope struct {
	// From is the return path (MAIL FROM), usually a VERP address such as
	// bounce+<send-id>@bounce.example.com. Empty means the null sender <>.
	From string
	// To lists the recipients (RCPT TO), bare addresses without brackets.
	To []string
}

// Status is the outcome of one delivery attempt for one recipient.
//
// The zero value is StatusTemporary: a result that was never filled in, or an
// error nobody understood, must lead to a retry and never to a bounce.
type Status int

const (
	// StatusTemporary means not delivered yet; retry later (SMTP 4xx,
	// connection, TLS or DNS trouble, timeouts, cancellation, anything unknown).
	StatusTemporary Status = iota
	// StatusDelivered means the next hop accepted responsibility (2xx after DATA).
	StatusDelivered
	// StatusPermanent means the next hop refused for good (SMTP 5xx, NXDOMAIN,
	// null MX, unusable address). Do not retry this message to this recipient.
	StatusPermanent
)

func (s Status) String() string {
	switch s {
	case StatusTemporary:
		return "temporary"
	case StatusDelivered:
		return "delivered"
	case StatusPermanent:
		return "permanent"
	default:
		return "Status(" + strconv.Itoa(int(s)) + ")"
	}
}

// Result is the outcome for one recipient.
type Result struct {
	// Recipient is the address from Envelope.To.
	Recipient string
	// Status says whether to stop (delivered or permanent) or retry (temporary).
	Status Status
	// Code is the SMTP reply code that decided the outcome (250, 451, 550…),
	// or 0 when no server answered: connection, TLS and DNS failures, local
	// errors. Capture reports 250.
	Code int
	// Enhanced is the RFC 3463 enhanced status code ("5.1.1") as sent by the
	// server. When Code is 0 it is synthesised locally (for example 4.4.1 no
	// answer from host, 5.1.2 domain does not exist, 5.1.10 null MX) so that
	// higher layers can classify every result the same way. It may be empty
	// when the server sent none.
	Enhanced string
	// Message is the server's reply text without code and enhanced code, lines
	// joined with a space; for local failures a short generic description.
	Message string
	// Host is the server that produced the reply (MX host name, relay host or
	// "capture"), empty if no server was reached.
	Host string
	// Err is the underlying cause for failures that did not come from an SMTP
	// reply (dial, TLS, DNS, I/O, context). Meant for logs, never for peers.
	Err error
}

// Delivered reports whether the next hop accepted the message.
func (r Result) Delivered() bool { return r.Status == StatusDelivered }

// Temporary reports whether delivery should be retried later.
func (r Result) Temporary() bool { return r.Status == StatusTemporary }

// Permanent reports whether delivery failed for good.
func (r Result) Permanent() bool { return r.Status == StatusPermanent }

// BadAddress reports whether a permanent failure says the address or its
// domain does not exist (a hard bounce that should suppress the address):
// enhanced status 5.1.0, 5.1.1, 5.1.2, 5.1.3, 5.1.6, 5.1.10 or 5.2.1, which
// includes the locally synthesised NXDOMAIN (5.1.2) and null MX (5.1.10)
// results. Other permanent failures (policy, spam, content, size, mailbox
// full) return false; telling those apart from a reply without an enhanced
// code needs the reply text and is left to the caller.
func (r Result) BadAddress() bool {
	if r.Status != StatusPermanent {
		return false
	}
	switch r.Enhanced {
	case "5.1.0", "5.1.1", "5.1.2", "5.1.3", "5.1.6", "5.1.10", "5.2.1":
		return true
	}
	return false
}

func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", r.Recipient, r.Status)
	if r.Code != 0 {
		fmt.Fprintf(&b, " %d", r.Code)
	}
	if r.Enhanced != "" {
		b.WriteString(" " + r.Enhanced)
	}
	if r.Message != "" {
		b.WriteString(" " + r.Message)
	}
	if r.Host != "" {
		b.WriteString(" (" + r.Host + ")")
	}
	if r.Err != nil && r.Code == 0 {
		b.WriteString(": " + r.Err.Error())
	}
	return b.String()
}

// reply is one SMTP reply (or a synthesised local one when code is 0).
type reply struct {
	code     int
	enhanced string
	message  string
	err      error // cause for local failures
	// temp forces a temporary outcome whatever the code says (AUTH failures,
	// 552 on RCPT, session set-up failures).
	temp bool
}

func (p reply) status() Status {
	switch p.code / 100 {
	case 2:
		return StatusDelivered
	case 5:
		if p.temp {
			return StatusTemporary
		}
		return StatusPermanent
	case 0:
		if !p.temp && strings.HasPrefix(p.enhanced, "5.") {
			return StatusPermanent
		}
	}
	// 4xx, and anything odd (1xx, 3xx where a final answer was due, local
	// trouble without a permanent enhanced code): retry.
	return StatusTemporary
}

func (p reply) result(rcpt, host string) Result {
	return Result{
		Recipient: rcpt,
		Status:    p.status(),
		Code:      p.code,
		Enhanced:  p.enhanced,
		Message:   p.message,
		Host:      host,
		Err:       p.err,
	}
}

// localReply builds a synthesised reply for a failure without an SMTP answer.
func localReply(enhanced, message string, err error) reply {
	return reply{enhanced: enhanced, message: message, err: err}
}

// replyFromError turns an error from the SMTP client into a reply. SMTP
// replies (*textproto.Error) keep their code and text; anything else is a
// local failure described by enhanced/message (temporary by construction).
func replyFromError(err error, enhanced, message string) reply {
	var te *textproto.Error
	if errors.As(err, &te) {
		return parseReply(te.Code, te.Msg)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return localReply("4.4.7", "delivery time expired", err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return localReply("4.4.2", "connection timed out", err)
	}
	return localReply(enhanced, message, err)
}

// parseReply splits the text of a reply into enhanced code and message.
// Multi-line texts arrive joined with "\n"; each line may repeat the enhanced
// code (RFC 2034 §4), which is removed.
func parseReply(code int, text string) reply {
	p := reply{code: code}
	lines := strings.Split(text, "\n")
	var parts []string
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if enh, rest, ok := cutEnhanced(l); ok {
			if i == 0 || p.enhanced == "" {
				p.enhanced = enh
			}
			l = rest
		}
		if l != "" {
			parts = append(parts, l)
		}
	}
	p.message = strings.Join(parts, " ")
	return p
}

// cutEnhanced splits "5.1.1 User unknown" into "5.1.1" and "User unknown".
// The class digit must be 2, 4 or 5; subject and detail are 1-3 digits.
func cutEnhanced(s string) (enh, rest string, ok bool) {
	word, rest, _ := strings.Cut(s, " ")
	if len(word) < 5 || (word[0] != '2' && word[0] != '4' && word[0] != '5') || word[1] != '.' {
		return "", s, false
	}
	sub, det, found := strings.Cut(word[2:], ".")
	if !found || !digits(sub) || !digits(det) {
		return "", s, false
	}
	return word, strings.TrimSpace(rest), true
}

func digits(s string) bool {
	if len(s) == 0 || len(s) > 3 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// allResults fills one result per recipient from the same reply.
func allResults(rcpts []string, p reply, host string) []Result {
	out := make([]Result, len(rcpts))
	for i, r := range rcpts {
		out[i] = p.result(r, host)
	}
	return out
}
