package content

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/guardian"
	"github.com/lasso-mail/lasso/internal/ids"
)

// Transactional is a transactional email (§6.9).
type Transactional struct {
	ID, Name, GroupID string
	// DraftMessageID and PublishedMessageID are "" when there is none.
	DraftMessageID, PublishedMessageID string
	// DraftRevisionID is the draft's content revision (filled by create and
	// ensure-draft only).
	DraftRevisionID string
	// DataVariables are the {data.x} names the published message uses.
	DataVariables        []string
	PublishedAt          *time.Time
	CreatedAt, UpdatedAt time.Time
}

func (t Transactional) id() string { return t.ID }

const txCols = `id, name, group_id, draft_message_id, published_message_id, data_variables, published_at, created_at, updated_at`

func scanTransactional(r db.Row) (Transactional, error) {
	var t Transactional
	var group, draft, pub *string
	var vars string
	var pubAt *int64
	var c, u int64
	if err := r.Scan(&t.ID, &t.Name, &group, &draft, &pub, &vars, &pubAt, &c, &u); err != nil {
		return t, err
	}
	if group != nil {
		t.GroupID = *group
	}
	if draft != nil {
		t.DraftMessageID = *draft
	}
	if pub != nil {
		t.PublishedMessageID = *pub
	}
	t.DataVariables = []string{}
	_ = json.Unmarshal([]byte(vars), &t.DataVariables)
	if t.DataVariables == nil {
		t.DataVariables = []string{}
	}
	if pubAt != nil {
		at := fromMS(*pubAt)
		t.PublishedAt = &at
	}
	t.CreatedAt, t.UpdatedAt = fromMS(c), fromMS(u)
	return t, nil
}

var errTransactionalNotFound = apperr.New(apperr.NotFound, "Transactional email not found.")

func (s *Service) transactional(ctx context.Context, q db.Querier, teamID, id string) (Transactional, error) {
	t, err := scanTransactional(q.QueryRow(ctx, `SELECT `+txCols+` FROM transactional_emails WHERE team_id = $1 AND id = $2`, teamID, id))
	if err == db.ErrNoRows {
		return t, errTransactionalNotFound
	}
	return t, err
}

// lockTransactional takes the row lock of a transactional email for the
// rest of tx (serialising draft and publish on PostgreSQL).
func lockTransactional(ctx context.Context, tx db.Tx, teamID, id string) error {
	n, err := tx.Exec(ctx, `UPDATE transactional_emails SET updated_at = updated_at WHERE team_id = $1 AND id = $2`, teamID, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return errTransactionalNotFound
	}
	return nil
}

// Transactionals lists a team's transactional emails, newest first; with
// publishedOnly only those with a published version (deprecated
// GET /v1/transactional).
func (s *Service) Transactionals(ctx context.Context, teamID string, p Page, publishedOnly bool) (List[Transactional], error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return List[Transactional]{}, err
	}
	where := "team_id = $1"
	if publishedOnly {
		where += " AND published_message_id IS NOT NULL"
	}
	return paginate(ctx, s.db, "transactional_emails", txCols, where, []any{teamID}, p,
		func(r db.Rows) (Transactional, error) { return scanTransactional(r) })
}

// Transactional returns one transactional email.
func (s *Service) Transactional(ctx context.Context, teamID, id string) (Transactional, error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return Transactional{}, err
	}
	if err := checkID(id, "transactional email"); err != nil {
		return Transactional{}, err
	}
	return s.transactional(ctx, s.db, teamID, id)
}

func (s *Service) checkTxGroup(ctx context.Context, q db.Querier, teamID, groupID string) error {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM content_groups WHERE team_id = $1 AND kind = $2 AND id = $3`, teamID, GroupTransactional, groupID).Scan(&one)
	if err == db.ErrNoRows {
		return apperr.New(apperr.Invalid, "Transactional group not found.")
	}
	return err
}

// CreateTransactional creates a transactional email (in groupID, or the
// default group when nil) with an empty draft message.
func (s *Service) CreateTransactional(ctx context.Context, teamID, name string, groupID *string) (Transactional, error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return Transactional{}, err
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return Transactional{}, apperr.New(apperr.Invalid, "name is required.")
	}
	var out Transactional
	err := s.db.InTx(ctx, func(tx db.Tx) error {
		gid := ""
		if groupID != nil {
			if err := s.checkTxGroup(ctx, tx, teamID, *groupID); err != nil {
				return err
			}
			gid = *groupID
		} else {
			var err error
			if gid, err = s.defaultGroup(ctx, tx, teamID, GroupTransactional); err != nil {
				return err
			}
		}
		now := s.now()
		t := Transactional{ID: ids.New(), Name: name, GroupID: gid, DataVariables: []string{}, CreatedAt: fromMS(ms(now)), UpdatedAt: fromMS(ms(now))}
		m, err := s.createMessage(ctx, tx, teamID, ParentTransactional, t.ID, nil)
		if err != nil {
			return err
		}
		t.DraftMessageID, t.DraftRevisionID = m.ID, m.ContentRevisionID
		if _, err := tx.Exec(ctx, `INSERT INTO transactional_emails (id, team_id, name, group_id, draft_message_id, data_variables, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, '[]', $6, $6)`, t.ID, teamID, t.Name, gid, m.ID, ms(now)); err != nil {
			return err
		}
		out = t
		return nil
	})
	return out, err
}

// UpdateTransactional renames a transactional email and/or moves it to
// another group.
func (s *Service) UpdateTransactional(ctx context.Context, teamID, id string, name, groupID *string) (Transactional, error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return Transactional{}, err
	}
	if err := checkID(id, "transactional email"); err != nil {
		return Transactional{}, err
	}
	if name == nil && groupID == nil {
		return Transactional{}, apperr.New(apperr.Invalid, "At least one field is required.")
	}
	var out Transactional
	err := s.db.InTx(ctx, func(tx db.Tx) error {
		t, err := s.transactional(ctx, tx, teamID, id)
		if err != nil {
			return err
		}
		if name != nil {
			if t.Name = strings.TrimSpace(*name); t.Name == "" {
				return apperr.New(apperr.Invalid, "name must not be empty.")
			}
		}
		if groupID != nil {
			if err := s.checkTxGroup(ctx, tx, teamID, *groupID); err != nil {
				return err
			}
			t.GroupID = *groupID
		}
		now := s.now()
		t.UpdatedAt = fromMS(ms(now))
		if _, err := tx.Exec(ctx, `UPDATE transactional_emails SET name = $1, group_id = $2, updated_at = $3 WHERE id = $4`, t.Name, t.GroupID, ms(now), t.ID); err != nil {
			return err
		}
		out = t
		return nil
	})
	return out, err
}

// EnsureDraft returns the transactional email's draft, creating it (seeded
// from the published version, or empty) when there is none. Idempotent.
func (s *Service) EnsureDraft(ctx context.Context, teamID, id string) (Transactional, error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return Transactional{}, err
	}
	if err := checkID(id, "transactional email"); err != nil {
		return Transactional{}, err
	}
	var out Transactional
	err := s.db.InTx(ctx, func(tx db.Tx) error {
		if err := lockTransactional(ctx, tx, teamID, id); err != nil {
			return err
		}
		t, err := s.transactional(ctx, tx, teamID, id)
		if err != nil {
			return err
		}
		if t.DraftMessageID != "" {
			m, err := s.message(ctx, tx, teamID, t.DraftMessageID)
			if err != nil {
				return err
			}
			t.DraftRevisionID = m.ContentRevisionID
			out = t
			return nil
		}
		var seed *Message
		if t.PublishedMessageID != "" {
			if seed, err = s.message(ctx, tx, teamID, t.PublishedMessageID); err != nil {
				return err
			}
		}
		m, err := s.createMessage(ctx, tx, teamID, ParentTransactional, t.ID, seed)
		if err != nil {
			return err
		}
		now := s.now()
		if _, err := tx.Exec(ctx, `UPDATE transactional_emails SET draft_message_id = $1, updated_at = $2 WHERE id = $3`, m.ID, ms(now), t.ID); err != nil {
			return err
		}
		t.DraftMessageID, t.DraftRevisionID, t.UpdatedAt = m.ID, m.ContentRevisionID, fromMS(ms(now))
		out = t
		return nil
	})
	return out, err
}

// Publish makes the draft the published version (§5.7): 409 without a
// draft, 422 when Guardian reports errors or no sending domain is verified.
func (s *Service) Publish(ctx context.Context, teamID, id string) (Transactional, error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return Transactional{}, err
	}
	if err := checkID(id, "transactional email"); err != nil {
		return Transactional{}, err
	}
	props, err := s.contactProperties(ctx, teamID)
	if err != nil {
		return Transactional{}, err
	}
	ds, err := s.cfg.Domains.Domains(ctx, teamID)
	if err != nil {
		return Transactional{}, err
	}
	var out Transactional
	err = s.db.InTx(ctx, func(tx db.Tx) error {
		if err := lockTransactional(ctx, tx, teamID, id); err != nil {
			return err
		}
		t, err := s.transactional(ctx, tx, teamID, id)
		if err != nil {
			return err
		}
		if t.DraftMessageID == "" {
			return apperr.New(apperr.Conflict, "No draft to publish.")
		}
		m, err := s.message(ctx, tx, teamID, t.DraftMessageID)
		if err != nil {
			return err
		}
		lib, err := s.loadLibrary(ctx, tx, teamID)
		if err != nil {
			return err
		}
		prep, err := lib.prepare(m.LMX)
		if err != nil {
			return err
		}
		if res := guardian.Check(guardianInput(m, prep.doc, props)); !res.OK() {
			return apperr.New(apperr.Unprocessable, "The draft failed Guardian checks; fix the errors and publish again.").
				With("errors", res.Errors).With("warnings", res.Warnings)
		}
		verified := false
		for _, d := range ds {
			if d.Verified && (m.FromDomain == "" || d.Domain == m.FromDomain) {
				verified = true
			}
		}
		if !verified {
			return apperr.New(apperr.Unprocessable, "The sending domain is not verified.")
		}
		sn, err := jsonText(lib.snapshot(prep.themeID, prep.refs))
		if err != nil {
			return err
		}
		vars := variables(m, prep.doc, "data")
		vj, err := jsonText(vars)
		if err != nil {
			return err
		}
		now := ms(s.now())
		if t.PublishedMessageID != "" {
			if _, err := tx.Exec(ctx, `UPDATE email_messages SET state = $1 WHERE id = $2`, StateArchived, t.PublishedMessageID); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE email_messages SET state = $1, snapshot = $2, theme_id = $3, updated_at = $4 WHERE id = $5`,
			StatePublished, sn, prep.themeID, now, m.ID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE transactional_emails SET published_message_id = $1, draft_message_id = NULL, data_variables = $2,
			published_at = $3, updated_at = $3 WHERE id = $4`, m.ID, vj, now, t.ID); err != nil {
			return err
		}
		at := fromMS(now)
		t.PublishedMessageID, t.DraftMessageID, t.DataVariables, t.PublishedAt, t.UpdatedAt = m.ID, "", vars, &at, at
		out = t
		return nil
	})
	return out, err
}
