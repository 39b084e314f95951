package emails

import (
	"context"
	"errors"
	"strings"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/bounce"
	"github.com/lasso-mail/lasso/internal/db"
)

// HandleBounce applies a report that arrived at the return path of a send
// (rcpt is the VERP address bounce+<send id>@…): a hard bounce or complaint
// suppresses the address and unsubscribes the contact; a soft bounce is
// recorded; auto-replies and other mail change nothing. Reports for unknown
// sends are dropped (nil error: the remote MTA must not retry them).
func (s *Service) HandleBounce(ctx context.Context, rcpt string, raw []byte) error {
	id := SendIDFromReturnPath(rcpt)
	if id == "" {
		return nil
	}
	x, err := s.Get(ctx, s.db, id)
	if errors.Is(err, apperr.NotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	r, _ := bounce.ParseWithOptions(raw, bounce.ParseOptions{EnvelopeTo: rcpt})
	return s.ApplyReport(ctx, x, r)
}

// ApplyReport applies a parsed report to a send.
func (s *Service) ApplyReport(ctx context.Context, x *Send, r *bounce.Report) error {
	kind := r.Kind
	detail := strings.TrimSpace(r.Status + " " + r.Diagnostic)
	// A report may name several recipients: use this send's.
	for _, rc := range r.Recipients {
		if strings.EqualFold(rc.Address, x.Recipient) {
			kind = rc.Kind
			detail = strings.TrimSpace(rc.Status + " " + rc.Diagnostic)
		}
	}
	switch kind {
	case bounce.KindHard:
		if x.Status == StatusHardBounced {
			return nil
		}
		return s.finish(ctx, x, StatusHardBounced, "email.hardBounced", "dsn: "+detail)
	case bounce.KindSoft:
		if x.Status == StatusHardBounced || x.Status == StatusComplained {
			return nil
		}
		return s.finish(ctx, x, StatusSoftBounced, "email.softBounced", "dsn: "+detail)
	case bounce.KindComplaint:
		if x.Status == StatusComplained {
			return nil
		}
		return s.db.InTx(ctx, func(tx db.Tx) error {
			if err := s.setStatus(ctx, tx, x, StatusComplained, "complaint: "+r.FeedbackType); err != nil {
				return err
			}
			if err := s.contacts.Suppress(ctx, tx, x.TeamID, strings.ToLower(x.Recipient), "complaint"); err != nil {
				return err
			}
			return s.emit(ctx, tx, x, "email.spamReported")
		})
	}
	return nil // auto-reply, not a bounce
}

func (s *Service) setStatus(ctx context.Context, tx db.Tx, x *Send, status, detail string) error {
	if _, err := tx.Exec(ctx, `UPDATE sends SET status = $2, updated_at = $3 WHERE id = $1`, x.ID, status, s.now().UnixMilli()); err != nil {
		return err
	}
	x.Status = status
	return s.history(ctx, tx, x.ID, status, detail)
}
