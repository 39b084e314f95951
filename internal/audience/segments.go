package audience

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
)

// Segment is an audience segment (§6.6): a named, saved filter.
type Segment struct {
	ID          string
	Name        string
	Description *string
	Filter      *Filter
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// JSON renders the contract's AudienceSegment object (§6.6).
func (g Segment) JSON() map[string]any {
	var f any
	if g.Filter != nil {
		f = *g.Filter
	}
	return map[string]any{
		"id":          g.ID,
		"name":        g.Name,
		"description": g.Description,
		"createdAt":   g.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"),
		"updatedAt":   g.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000Z"),
		"filter":      f,
	}
}

// SegmentList is one page of segments, newest first.
type SegmentList = db.List[Segment]

const segmentCols = `id, name, description, filter, created_at, updated_at`

func scanSegment(r db.Row) (Segment, error) {
	var g Segment
	var filter string
	var c, u int64
	if err := r.Scan(&g.ID, &g.Name, &g.Description, &filter, &c, &u); err != nil {
		return g, err
	}
	g.CreatedAt, g.UpdatedAt = time.UnixMilli(c).UTC(), time.UnixMilli(u).UTC()
	// Stored filters were validated on the way in; one that no longer parses
	// is shown as null rather than failing the whole list.
	if f, err := ParseFilter([]byte(filter)); err == nil {
		g.Filter = &f
	}
	return g, nil
}

// CreateSegment creates a segment (§5.13). name is required, at most 255
// characters and unique in the team; description at most 1000 characters
// ("" is stored as null); the filter must validate against the team's
// properties with at least one condition (apperr.Invalid), and its activity
// conditions must name existing campaigns, workflows and workflow emails
// (apperr.NotFound). A duplicate name is apperr.Invalid (§5.13 lists it
// among the 400s).
func (s *Service) CreateSegment(ctx context.Context, teamID, name, description string, f Filter) (Segment, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return Segment{}, invalid("name is required.")
	}
	if utf8.RuneCountInString(name) > 255 {
		return Segment{}, invalid("name must be at most 255 characters.")
	}
	if utf8.RuneCountInString(description) > 1000 {
		return Segment{}, invalid("description must be at most 1000 characters.")
	}
	if err := s.Validate(ctx, teamID, f); err != nil {
		return Segment{}, err
	}
	data, err := json.Marshal(f)
	if err != nil {
		return Segment{}, fmt.Errorf("create segment: %w", err)
	}
	now := s.cfg.Now().UnixMilli()
	g := Segment{ID: ids.New(), Name: name, Filter: &f, CreatedAt: time.UnixMilli(now).UTC(), UpdatedAt: time.UnixMilli(now).UTC()}
	if description != "" {
		g.Description = &description
	}
	_, err = s.db.Exec(ctx, `INSERT INTO audience_segments (id, team_id, name, description, filter, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6)`, g.ID, teamID, g.Name, g.Description, string(data), now)
	if db.IsUnique(err) {
		return Segment{}, invalid("An audience segment named %q already exists.", name)
	}
	if err != nil {
		return Segment{}, fmt.Errorf("create segment: %w", err)
	}
	return g, nil
}

// GetSegment returns one segment: apperr.Invalid for something that cannot
// be an id, apperr.NotFound ("Audience segment not found.") when absent.
func (s *Service) GetSegment(ctx context.Context, teamID, id string) (Segment, error) {
	return s.SegmentIn(ctx, s.db, teamID, id)
}

// SegmentIn is GetSegment through q (a transaction's own connection, so a
// caller holding one never waits for a second).
func (s *Service) SegmentIn(ctx context.Context, q db.Querier, teamID, id string) (Segment, error) {
	if !ids.Valid(id) {
		return Segment{}, invalid("Invalid audience segment id.")
	}
	g, err := scanSegment(q.QueryRow(ctx, `SELECT `+segmentCols+` FROM audience_segments WHERE team_id = $1 AND id = $2`, teamID, id))
	if errors.Is(err, db.ErrNoRows) {
		return g, apperr.New(apperr.NotFound, "Audience segment not found.")
	}
	if err != nil {
		return g, fmt.Errorf("get segment: %w", err)
	}
	return g, nil
}

// ListSegments lists a team's segments newest first, perPage at a time,
// starting at afterCursor (a NextCursor; "" for the first page). An
// unknown cursor is apperr.Invalid ("Invalid cursor."). perPage is checked
// by the caller (10–50 in the API); values below 1 are an error.
func (s *Service) ListSegments(ctx context.Context, teamID, afterCursor string, perPage int) (SegmentList, error) {
	out := SegmentList{PerPage: perPage, Items: []Segment{}}
	if perPage < 1 {
		return out, invalid("perPage must be positive.")
	}
	return db.Paginate(ctx, s.db, db.Listing{Table: "audience_segments", Cols: segmentCols, Where: `team_id = $1`, Args: []any{teamID}},
		db.Page{PerPage: perPage, Cursor: afterCursor}, func(r db.Rows) (Segment, error) { return scanSegment(r) }, func(g Segment) string { return g.ID })
}

// SegmentFilter returns the filter of a segment (for campaigns and workflow
// filter nodes that reference one): apperr.NotFound when absent.
func (s *Service) SegmentFilter(ctx context.Context, teamID, id string) (Filter, error) {
	g, err := s.GetSegment(ctx, teamID, id)
	if err != nil {
		return Filter{}, err
	}
	if g.Filter == nil {
		return Filter{}, fmt.Errorf("segment %s: stored filter does not parse", id)
	}
	return *g.Filter, nil
}
