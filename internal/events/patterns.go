package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
)

// Pattern is an event pattern (§5.14): an event name the team has sent,
// with the properties seen on it and their types.
type Pattern struct {
	ID   string
	Name string
	// Properties are the declared properties in the order they were first
	// seen (then by name). ListPatterns leaves it nil: the summary has none.
	Properties []PatternProperty
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// PatternProperty is one property of a pattern; Type is one of the contact
// property types (string, number, boolean, date).
type PatternProperty struct {
	Name string
	Type string
}

// PatternList is one page of patterns, newest first.
type PatternList = db.List[Pattern]

const patternCols = `id, name, created_at, updated_at`

func scanPattern(r db.Row) (Pattern, error) {
	var p Pattern
	var c, u int64
	if err := r.Scan(&p.ID, &p.Name, &c, &u); err != nil {
		return p, err
	}
	p.CreatedAt, p.UpdatedAt = time.UnixMilli(c).UTC(), time.UnixMilli(u).UTC()
	return p, nil
}

// ListPatterns lists a team's event patterns newest first (created_at, then
// id), perPage at a time, starting at cursor (a NextCursor; "" for the first
// page). An unknown cursor is apperr.Invalid ("Invalid cursor."); perPage is
// checked by the caller and must be positive.
func (s *Service) ListPatterns(ctx context.Context, teamID, cursor string, perPage int) (PatternList, error) {
	out := PatternList{PerPage: perPage, Items: []Pattern{}}
	if perPage < 1 {
		return out, apperr.New(apperr.Invalid, "perPage must be positive.")
	}
	return db.Paginate(ctx, s.db, db.Listing{Table: "event_patterns", Cols: patternCols, Where: `team_id = $1`, Args: []any{teamID}},
		db.Page{PerPage: perPage, Cursor: cursor}, func(r db.Rows) (Pattern, error) { return scanPattern(r) }, func(p Pattern) string { return p.ID })
}

// GetPattern returns one pattern with its properties: apperr.Invalid for
// something that cannot be an id, apperr.NotFound when absent.
func (s *Service) GetPattern(ctx context.Context, teamID, id string) (Pattern, error) {
	if !ids.Valid(id) {
		return Pattern{}, apperr.New(apperr.Invalid, "Invalid event pattern id.")
	}
	return s.getPattern(ctx, `team_id = $1 AND id = $2`, teamID, id)
}

// GetPatternByName returns the pattern of an event name (case-sensitive,
// exactly as sent) with its properties: apperr.NotFound when absent.
func (s *Service) GetPatternByName(ctx context.Context, teamID, name string) (Pattern, error) {
	if name == "" {
		return Pattern{}, apperr.New(apperr.Invalid, "eventName is required.")
	}
	return s.getPattern(ctx, `team_id = $1 AND name = $2`, teamID, name)
}

func (s *Service) getPattern(ctx context.Context, where string, args ...any) (Pattern, error) {
	p, err := scanPattern(s.db.QueryRow(ctx, `SELECT `+patternCols+` FROM event_patterns WHERE `+where, args...))
	if errors.Is(err, db.ErrNoRows) {
		return Pattern{}, apperr.New(apperr.NotFound, "Event pattern not found.")
	}
	if err != nil {
		return Pattern{}, fmt.Errorf("get event pattern: %w", err)
	}
	rows, err := s.db.Query(ctx, `SELECT name, type FROM event_pattern_properties WHERE pattern_id = $1 ORDER BY created_at, name`, p.ID)
	if err != nil {
		return Pattern{}, fmt.Errorf("get event pattern: %w", err)
	}
	defer rows.Close()
	p.Properties = []PatternProperty{}
	for rows.Next() {
		var pp PatternProperty
		if err := rows.Scan(&pp.Name, &pp.Type); err != nil {
			return Pattern{}, err
		}
		p.Properties = append(p.Properties, pp)
	}
	return p, rows.Err()
}
