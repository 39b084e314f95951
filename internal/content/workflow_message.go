package content

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/lmx"
)

// draftEntry is a compiled workflow message and what it was compiled from.
type draftEntry struct {
	key string
	p   *Published
}

// WorkflowMessage compiles the email message of a workflow's
// SendEmailAction for sending: its current content with the team's current
// theme and components (workflow messages are not published; they are
// edited while the workflow is paused). apperr.NotFound for an unknown id.
//
// The compiled message is reused while its content revision and the team's
// library (themes and components, hashed as stored) are unchanged, so a
// theme or component edit reaches the next send without a compile per
// send.
func (s *Service) WorkflowMessage(ctx context.Context, teamID, id string) (*Published, error) {
	m, err := s.message(ctx, s.db, teamID, id)
	if err != nil {
		return nil, err
	}
	lib, err := libraryVersion(ctx, s.db, teamID)
	if err != nil {
		return nil, err
	}
	key := m.ContentRevisionID + "|" + lib
	s.mu.Lock()
	e, ok := s.drafts[id]
	s.mu.Unlock()
	if ok && e.key == key {
		return e.p, nil
	}
	tmpl, err := s.compile(ctx, s.db, m)
	if err != nil {
		return nil, err
	}
	p := &Published{EmailMessageID: m.ID, Subject: m.Subject, PreviewText: m.PreviewText, FromName: m.FromName,
		FromEmail: m.FromAddress(), ReplyTo: m.ReplyToEmail, Template: tmpl,
		Fallbacks: lmx.Fallbacks{Contact: m.ContactFallbacks, Event: m.EventFallbacks, Data: m.DataFallbacks}}
	s.mu.Lock()
	if len(s.drafts) >= maxCompiled {
		clear(s.drafts)
	}
	s.drafts[id] = draftEntry{key: key, p: p}
	s.mu.Unlock()
	return p, nil
}

// libraryVersion is a hash of the team's themes and components as stored:
// it changes when one is added or its content changes.
func libraryVersion(ctx context.Context, q db.Querier, teamID string) (string, error) {
	h := sha256.New()
	for _, query := range []string{
		`SELECT id, styles, is_default FROM themes WHERE team_id = $1 ORDER BY id`,
		`SELECT id, name || ':' || lmx, FALSE FROM components WHERE team_id = $1 ORDER BY id`,
	} {
		rows, err := q.Query(ctx, query, teamID)
		if err != nil {
			return "", fmt.Errorf("library version: %w", err)
		}
		for rows.Next() {
			var id, body string
			var def bool
			if err := rows.Scan(&id, &body, &def); err != nil {
				rows.Close()
				return "", err
			}
			fmt.Fprintf(h, "%d:%s%d:%s%t\n", len(id), id, len(body), body, def)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return "", err
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
