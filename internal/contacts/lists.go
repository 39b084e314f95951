package contacts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
)

// List is a mailing list.
type List struct {
	ID          string
	TeamID      string
	Name        string
	Description *string
	IsPublic    bool
	CreatedAt   time.Time
}

// CreateList creates a mailing list (dashboard and CLI; no public API).
func (s *Service) CreateList(ctx context.Context, teamID, name, description string, public bool) (List, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return List{}, apperr.New(apperr.Invalid, "A list name is required.")
	}
	l := List{ID: ids.New(), TeamID: teamID, Name: name, IsPublic: public, CreatedAt: s.now().UTC()}
	if d := strings.TrimSpace(description); d != "" {
		l.Description = &d
	}
	_, err := s.db.Exec(ctx, `INSERT INTO mailing_lists (id, team_id, name, description, is_public, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)`,
		l.ID, teamID, l.Name, l.Description, l.IsPublic, l.CreatedAt.UnixMilli())
	if err != nil {
		return List{}, fmt.Errorf("create list: %w", err)
	}
	return l, nil
}

// UpdateList changes a list's name, description and visibility.
func (s *Service) UpdateList(ctx context.Context, teamID, id, name, description string, public bool) error {
	name = strings.TrimSpace(name)
	if name == "" {
		return apperr.New(apperr.Invalid, "A list name is required.")
	}
	var desc *string
	if d := strings.TrimSpace(description); d != "" {
		desc = &d
	}
	n, err := s.db.Exec(ctx, `UPDATE mailing_lists SET name = $3, description = $4, is_public = $5, updated_at = $6 WHERE id = $1 AND team_id = $2`,
		id, teamID, name, desc, public, s.now().UnixMilli())
	if err != nil {
		return fmt.Errorf("update list: %w", err)
	}
	if n == 0 {
		return apperr.New(apperr.NotFound, "Mailing list not found.")
	}
	return nil
}

// DeleteList deletes a list and its memberships.
func (s *Service) DeleteList(ctx context.Context, teamID, id string) error {
	n, err := s.db.Exec(ctx, `DELETE FROM mailing_lists WHERE id = $1 AND team_id = $2`, id, teamID)
	if err != nil {
		return fmt.Errorf("delete list: %w", err)
	}
	if n == 0 {
		return apperr.New(apperr.NotFound, "Mailing list not found.")
	}
	return nil
}

// GetList returns a list; apperr.NotFound if absent.
func (s *Service) GetList(ctx context.Context, teamID, id string) (List, error) {
	var l List
	var created int64
	err := s.db.QueryRow(ctx, `SELECT id, team_id, name, description, is_public, created_at FROM mailing_lists WHERE id = $1 AND team_id = $2`, id, teamID).
		Scan(&l.ID, &l.TeamID, &l.Name, &l.Description, &l.IsPublic, &created)
	if errors.Is(err, db.ErrNoRows) {
		return List{}, apperr.New(apperr.NotFound, "Mailing list not found.")
	}
	l.CreatedAt = time.UnixMilli(created).UTC()
	return l, err
}

// Lists returns a team's lists, oldest first.
func (s *Service) Lists(ctx context.Context, teamID string) ([]List, error) {
	rows, err := s.db.Query(ctx, `SELECT id, team_id, name, description, is_public, created_at FROM mailing_lists WHERE team_id = $1 ORDER BY created_at, id`, teamID)
	if err != nil {
		return nil, fmt.Errorf("list lists: %w", err)
	}
	defer rows.Close()
	out := []List{}
	for rows.Next() {
		var l List
		var created int64
		if err := rows.Scan(&l.ID, &l.TeamID, &l.Name, &l.Description, &l.IsPublic, &created); err != nil {
			return nil, err
		}
		l.CreatedAt = time.UnixMilli(created).UTC()
		out = append(out, l)
	}
	return out, rows.Err()
}

// GetListTx returns a list of the team in tx; apperr.NotFound if absent.
func (s *Service) GetListTx(ctx context.Context, q db.Querier, teamID, id string) (List, error) {
	var l List
	var created int64
	err := q.QueryRow(ctx, `SELECT id, team_id, name, description, is_public, created_at FROM mailing_lists WHERE id = $1 AND team_id = $2`, id, teamID).
		Scan(&l.ID, &l.TeamID, &l.Name, &l.Description, &l.IsPublic, &created)
	if errors.Is(err, db.ErrNoRows) {
		return List{}, apperr.New(apperr.NotFound, "Mailing list not found.")
	}
	l.CreatedAt = time.UnixMilli(created).UTC()
	return l, err
}
