package contacts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
)

// Quota is the suppression-removal allowance of a team.
type Quota struct {
	Limit     int `json:"limit"`
	Remaining int `json:"remaining"`
}

// SuppressionStatus answers a suppression check.
type SuppressionStatus struct {
	ContactID    string
	Email        string
	UserID       *string
	IsSuppressed bool
	Quota        Quota
}

const quotaWindow = 30 * 24 * time.Hour

// Suppress records that mail must never go to email (hard bounce, spam
// complaint) and unsubscribes the matching contact, in tx.
func (s *Service) Suppress(ctx context.Context, tx db.Tx, teamID, email, reason string) error {
	now := s.now().UnixMilli()
	if _, err := tx.Exec(ctx, `INSERT INTO suppressions (team_id, email, reason, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (team_id, email) DO NOTHING`,
		teamID, email, reason, now); err != nil {
		return fmt.Errorf("suppress: %w", err)
	}
	var id string
	err := tx.QueryRow(ctx, `UPDATE contacts SET subscribed = FALSE, updated_at = $3 WHERE team_id = $1 AND email = $2 AND subscribed = TRUE RETURNING id`, teamID, email, now).Scan(&id)
	if errors.Is(err, db.ErrNoRows) {
		return nil // no contact, or already unsubscribed
	}
	if err != nil {
		return err
	}
	return s.emit(ctx, tx, teamID, "contact.unsubscribed", s.contactPayload(ctx, tx, teamID, id, false, nil))
}

// IsSuppressed reports whether email is suppressed for the team.
func (s *Service) IsSuppressed(ctx context.Context, q db.Querier, teamID, email string) (bool, error) {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM suppressions WHERE team_id = $1 AND email = $2`, teamID, email).Scan(&one)
	if errors.Is(err, db.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func (s *Service) quota(ctx context.Context, q db.Querier, teamID string) (Quota, error) {
	var used int
	since := s.now().Add(-quotaWindow).UnixMilli()
	if err := q.QueryRow(ctx, `SELECT count(*) FROM suppression_removals WHERE team_id = $1 AND created_at > $2`, teamID, since).Scan(&used); err != nil {
		return Quota{}, err
	}
	rem := s.cfg.SuppressionRemovalLimit - used
	if rem < 0 {
		rem = 0
	}
	return Quota{Limit: s.cfg.SuppressionRemovalLimit, Remaining: rem}, nil
}

func (s *Service) suppressionStatus(ctx context.Context, q db.Querier, teamID string, idn Identity) (SuppressionStatus, error) {
	id, err := s.resolve(ctx, q, teamID, idn)
	if err != nil {
		return SuppressionStatus{}, err
	}
	if id == "" {
		return SuppressionStatus{}, apperr.New(apperr.NotFound, "This contact was not found.")
	}
	st := SuppressionStatus{ContactID: id}
	if err := q.QueryRow(ctx, `SELECT email, user_id FROM contacts WHERE id = $1`, id).Scan(&st.Email, &st.UserID); err != nil {
		return SuppressionStatus{}, err
	}
	if st.IsSuppressed, err = s.IsSuppressed(ctx, q, teamID, st.Email); err != nil {
		return SuppressionStatus{}, err
	}
	st.Quota, err = s.quota(ctx, q, teamID)
	return st, err
}

// CheckSuppression returns the suppression state of a contact.
func (s *Service) CheckSuppression(ctx context.Context, teamID string, idn Identity) (SuppressionStatus, error) {
	return s.suppressionStatus(ctx, s.db, teamID, idn)
}

// RemoveSuppression lifts a contact's suppression, within the team's rolling
// 30-day quota.
func (s *Service) RemoveSuppression(ctx context.Context, teamID string, idn Identity) (Quota, error) {
	var q Quota
	err := s.db.InTx(ctx, func(tx db.Tx) error {
		st, err := s.suppressionStatus(ctx, tx, teamID, idn)
		if err != nil {
			return err
		}
		if !st.IsSuppressed {
			return apperr.New(apperr.Invalid, "This contact is not suppressed.")
		}
		if st.Quota.Remaining <= 0 {
			return apperr.New(apperr.Invalid, "Suppression removal quota exceeded: %d removals per 30 days.", st.Quota.Limit).
				With("removalQuota", st.Quota)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM suppressions WHERE team_id = $1 AND email = $2`, teamID, st.Email); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO suppression_removals (id, team_id, email, created_at) VALUES ($1, $2, $3, $4)`,
			ids.New(), teamID, st.Email, s.now().UnixMilli()); err != nil {
			return err
		}
		q = Quota{Limit: st.Quota.Limit, Remaining: st.Quota.Remaining - 1}
		return nil
	})
	return q, err
}
