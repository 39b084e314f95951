package smtpd

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/emersion/go-smtp"

	"github.com/lasso-mail/lasso/internal/apperr"
)

// replyRule is how one error kind is answered.
type replyRule struct {
	kind     error
	code     int
	enhanced smtp.EnhancedCode
	// fallback is the text when the error carries no client-facing message.
	fallback string
}

// replies maps error kinds to SMTP replies: the one place where that is
// decided. Content and lookup errors are permanent (the client must not retry
// the same message); rate limits and unknown errors are temporary, so the
// client's queue retries. The text is the HTTP API's message for the same
// error.
var replies = []replyRule{
	{apperr.Unauthenticated, 535, smtp.EnhancedCode{5, 7, 8}, "Authentication credentials invalid"},
	{apperr.RateLimited, 451, smtp.EnhancedCode{4, 7, 1}, "Rate limit exceeded, try again later"},
	{apperr.TooLarge, 552, smtp.EnhancedCode{5, 3, 4}, "Message too large"},
	{apperr.Invalid, 550, smtp.EnhancedCode{5, 6, 0}, "Invalid send payload"},
	{apperr.Unprocessable, 550, smtp.EnhancedCode{5, 6, 0}, "Unprocessable send payload"},
	{apperr.NotFound, 550, smtp.EnhancedCode{5, 6, 0}, "Not found"},
	{apperr.Conflict, 554, smtp.EnhancedCode{5, 6, 0}, "Conflict"},
	{apperr.Forbidden, 554, smtp.EnhancedCode{5, 7, 1}, "Not allowed"},
	{apperr.NotImplemented, 554, smtp.EnhancedCode{5, 3, 3}, "Not supported"},
	{apperr.Unavailable, 451, smtp.EnhancedCode{4, 3, 2}, "Service unavailable, try again later"},
}

// replyTemporary answers every error we don't know: retryable, and nothing
// of the error itself reaches the client.
var replyTemporary = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Temporary server error, try again later"}

// replyAuthRequired answers MAIL and RCPT before AUTH (RFC 4954 §6).
var replyAuthRequired = &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Authentication required"}

// replyTooManyAuthFailures ends a connection that keeps guessing keys.
var replyTooManyAuthFailures = &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: "Too many authentication failures, closing connection"}

// replyLineTooLong answers a line longer than the server's limit.
var replyLineTooLong = &smtp.SMTPError{Code: 552, EnhancedCode: smtp.EnhancedCode{5, 3, 4}, Message: "Line too long"}

// replyNoSuchUser answers a RCPT TO the bounce intake doesn't serve.
var replyNoSuchUser = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such recipient here"}

// reply returns the SMTP reply for err: nil for nil (go-smtp then answers
// 250), err itself when it is already an SMTP reply (go-smtp's "552 message
// too large", the ones above), the mapped reply for an apperr kind, and a
// generic 451 otherwise. It never returns a non-SMTP error, which go-smtp
// would show verbatim.
func reply(err error) *smtp.SMTPError {
	if err == nil {
		return nil
	}
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		return se
	}
	if errors.Is(err, smtp.ErrTooLongLine) {
		return replyLineTooLong
	}
	for _, r := range replies {
		if !errors.Is(err, r.kind) {
			continue
		}
		text := r.fallback
		if msg, ok := apperr.Message(err); ok {
			if msg = replyText(msg); msg != "" {
				text = msg
			}
		}
		return &smtp.SMTPError{Code: r.code, EnhancedCode: r.enhanced, Message: text}
	}
	return replyTemporary
}

// enhanced formats a reply's enhanced status code, for logs.
func enhanced(r *smtp.SMTPError) string {
	e := r.EnhancedCode
	return fmt.Sprintf("%d.%d.%d", e[0], e[1], e[2])
}

// maxReplyText keeps a reply line well under the 512 octets of RFC 5321
// §4.5.3.1.5.
const maxReplyText = 400

// replyText makes a message safe for one SMTP reply line: US-ASCII, no
// control characters (no CR/LF to break the reply), collapsed spaces, at most
// maxReplyText bytes.
func replyText(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case r == utf8.RuneError || r < 0x20 || r == 0x7f || r == ' ':
			space = b.Len() > 0
			continue
		case r > 0x7e:
			r = '?'
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
		if b.Len() >= maxReplyText {
			return b.String()[:maxReplyText-3] + "..."
		}
	}
	return b.String()
}
