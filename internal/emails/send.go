package emails

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/bounce"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/delivery"
	"github.com/lasso-mail/lasso/internal/queue"
)

// Schedule is the delay before each retry of a soft-bounced send: about
// eight hours in all, then the send fails without suppressing anyone.
var Schedule = []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour}

// Worker works send jobs.
type Worker struct {
	queue.WorkerDefaults[SendArgs]
	Service   *Service
	Transport delivery.Transport
	Signer    Signer
	// BounceDomain returns the return-path domain for a sending domain.
	BounceDomain func(fromDomain string) string
	// Unsubscribe returns the List-Unsubscribe target of marketing mail.
	Unsubscribe func(x *Send) *delivery.ListUnsubscribe
	// Track rewrites the HTML of marketing mail for open and click tracking.
	Track func(html string, x *Send) string
}

// NextRetry implements the soft-bounce schedule.
func (w *Worker) NextRetry(job *queue.Job[SendArgs]) time.Time {
	s := w.Service.schedule()
	i := min(max(job.Attempt-1, 0), len(s)-1)
	return time.Now().Add(s[i])
}

// Timeout bounds one delivery attempt.
func (w *Worker) Timeout(*queue.Job[SendArgs]) time.Duration { return 10 * time.Minute }

// Work delivers one send once.
func (w *Worker) Work(ctx context.Context, job *queue.Job[SendArgs]) error {
	s := w.Service
	x, err := s.Get(ctx, s.db, job.Args.SendID)
	if errors.Is(err, apperr.NotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if x.Status != StatusQueued && x.Status != StatusDeferred {
		return nil // done already (a duplicate run after a crash)
	}
	r := s.renderers[x.SourceType]
	if r == nil {
		return s.finish(ctx, x, StatusFailed, "", "no renderer for "+x.SourceType)
	}
	msg, err := r.Render(ctx, x)
	if err != nil {
		if errors.Is(err, apperr.NotFound) || errors.Is(err, apperr.Invalid) || errors.Is(err, apperr.Unprocessable) {
			return s.finish(ctx, x, StatusFailed, "", "render: "+err.Error())
		}
		return err
	}
	fromDomain := msg.FromEmail[strings.LastIndexByte(msg.FromEmail, '@')+1:]
	x.EmailMessageID, x.Subject = msg.EmailMessageID, msg.Subject
	if x.MessageID == "" {
		x.MessageID = delivery.NewMessageID(fromDomain)
	}
	m := &delivery.Message{
		From:        delivery.Address{Name: msg.FromName, Email: msg.FromEmail},
		To:          []delivery.Address{{Email: x.Recipient}},
		Subject:     msg.Subject,
		HTML:        msg.HTML,
		Text:        msg.Text,
		Attachments: msg.Attachments,
		MessageID:   x.MessageID,
		Headers:     []delivery.Header{{Name: "X-Lasso-Send-ID", Value: x.ID}, {Name: "Feedback-ID", Value: x.SourceType + ":" + x.TeamID + ":lasso"}},
	}
	if msg.ReplyTo != "" {
		m.ReplyTo = []delivery.Address{{Email: msg.ReplyTo}}
	}
	if msg.Marketing && w.Unsubscribe != nil {
		m.ListUnsubscribe = w.Unsubscribe(x)
	}
	if msg.Marketing && w.Track != nil {
		m.HTML = w.Track(m.HTML, x)
	}
	raw, err := delivery.Compose(m)
	if err != nil {
		return s.finish(ctx, x, StatusFailed, "", "compose: "+err.Error())
	}
	if w.Signer != nil {
		keys, err := w.Signer.SigningKeys(ctx, x.TeamID, fromDomain)
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if raw, err = delivery.SignDKIM(raw, keys...); err != nil {
				return fmt.Errorf("dkim: %w", err)
			}
		}
	}
	if _, err := s.db.Exec(ctx, `UPDATE sends SET email_message_id = $2, subject = $3, message_id = $4, attempts = attempts + 1, updated_at = $5 WHERE id = $1`,
		x.ID, x.EmailMessageID, x.Subject, x.MessageID, s.now().UnixMilli()); err != nil {
		return err
	}
	bounceDomain := "bounces." + fromDomain
	if w.BounceDomain != nil {
		bounceDomain = w.BounceDomain(fromDomain)
	}
	env := delivery.Envelope{From: ReturnPath(x.ID, bounceDomain), To: []string{x.Recipient}}
	res := w.Transport.Send(ctx, env, raw)[0]
	return w.apply(ctx, job, x, res)
}

// ReturnPath is the VERP envelope sender of a send: bounces name the send.
func ReturnPath(sendID, bounceDomain string) string {
	return "bounce+" + sendID + "@" + bounceDomain
}

// SendIDFromReturnPath extracts the send id from a VERP address.
func SendIDFromReturnPath(addr string) string {
	addr = strings.ToLower(strings.Trim(addr, "<> "))
	local, _, ok := strings.Cut(addr, "@")
	if !ok {
		return ""
	}
	id, ok := strings.CutPrefix(local, "bounce+")
	if !ok || len(id) != 25 {
		return ""
	}
	return id
}

func (w *Worker) apply(ctx context.Context, job *queue.Job[SendArgs], x *Send, res delivery.Result) error {
	s := w.Service
	detail := res.String()
	switch {
	case res.Delivered():
		return s.finish(ctx, x, StatusDelivered, "", detail, res)
	case res.Temporary():
		if job.Attempt >= job.MaxAttempts {
			return s.finish(ctx, x, StatusSoftBounced, "email.softBounced", "retries exhausted: "+detail, res)
		}
		first := x.Status != StatusDeferred
		event := ""
		if first {
			event = "email.softBounced"
		}
		if err := s.finish(ctx, x, StatusDeferred, event, detail, res); err != nil {
			return err
		}
		return fmt.Errorf("soft bounce: %s", detail) // River retries on the schedule
	default:
		if res.BadAddress() || bounce.ClassifySMTP(res.Code, res.Enhanced, res.Message) == bounce.KindHard {
			return s.finish(ctx, x, StatusHardBounced, "email.hardBounced", detail, res)
		}
		return s.finish(ctx, x, StatusSoftBounced, "email.softBounced", detail, res)
	}
}

// finish records a send's new status, its history entry, its webhooks and,
// for a hard bounce, the suppression — in one transaction.
func (s *Service) finish(ctx context.Context, x *Send, status, event, detail string, res ...delivery.Result) error {
	return s.db.InTx(ctx, func(tx db.Tx) error {
		now := s.now().UnixMilli()
		var code *int
		var enh, text *string
		if len(res) > 0 && res[0].Code != 0 {
			code, enh, text = &res[0].Code, &res[0].Enhanced, &res[0].Message
		}
		if _, err := tx.Exec(ctx, `UPDATE sends SET status = $2, last_code = $3, last_enhanced = $4, last_message = $5, updated_at = $6,
			sent_at = CASE WHEN $2 = 'delivered' THEN $6 ELSE sent_at END WHERE id = $1`,
			x.ID, status, code, enh, text, now); err != nil {
			return err
		}
		if err := s.history(ctx, tx, x.ID, status, detail); err != nil {
			return err
		}
		x.Status = status
		switch status {
		case StatusDelivered:
			if err := s.emit(ctx, tx, x, x.SourceType+".email.sent"); err != nil {
				return err
			}
			return s.emit(ctx, tx, x, "email.delivered")
		case StatusHardBounced:
			if err := s.contacts.Suppress(ctx, tx, x.TeamID, strings.ToLower(x.Recipient), "hard_bounce"); err != nil {
				return err
			}
		}
		if event != "" {
			return s.emit(ctx, tx, x, event)
		}
		return nil
	})
}
