package content

import (
	"context"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
)

// Group kinds (§5.8).
const (
	GroupCampaign      = "campaign"
	GroupTransactional = "transactional"
)

// Group is a campaign or transactional group (§6.3).
type Group struct {
	ID          string
	Kind        string
	Name        string
	Description string
	IsDefault   bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (g Group) id() string { return g.ID }

const groupCols = `id, kind, name, description, is_default, created_at, updated_at`

func scanGroup(r db.Row) (Group, error) {
	var g Group
	var c, u int64
	if err := r.Scan(&g.ID, &g.Kind, &g.Name, &g.Description, &g.IsDefault, &c, &u); err != nil {
		return g, err
	}
	g.CreatedAt, g.UpdatedAt = fromMS(c), fromMS(u)
	return g, nil
}

func validKind(kind string) error {
	if kind != GroupCampaign && kind != GroupTransactional {
		return apperr.New(apperr.Invalid, "Unknown group kind.")
	}
	return nil
}

func checkGroupName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", apperr.New(apperr.Invalid, "name is required.")
	}
	if strings.EqualFold(name, DefaultGroupName) {
		return "", apperr.New(apperr.Invalid, "The group name %q is reserved.", DefaultGroupName)
	}
	return name, nil
}

// Groups lists a team's groups of kind, newest first.
func (s *Service) Groups(ctx context.Context, teamID, kind string, p Page) (List[Group], error) {
	if err := validKind(kind); err != nil {
		return List[Group]{}, err
	}
	if err := s.Begin(ctx, teamID); err != nil {
		return List[Group]{}, err
	}
	return paginate(ctx, s.db, "content_groups", groupCols, "team_id = $1 AND kind = $2", []any{teamID, kind}, p,
		func(r db.Rows) (Group, error) { return scanGroup(r) })
}

// Group returns one group.
func (s *Service) Group(ctx context.Context, teamID, kind, id string) (Group, error) {
	if err := validKind(kind); err != nil {
		return Group{}, err
	}
	if err := s.Begin(ctx, teamID); err != nil {
		return Group{}, err
	}
	if err := checkID(id, "group"); err != nil {
		return Group{}, err
	}
	return s.group(ctx, s.db, teamID, kind, id)
}

func (s *Service) group(ctx context.Context, q db.Querier, teamID, kind, id string) (Group, error) {
	g, err := scanGroup(q.QueryRow(ctx, `SELECT `+groupCols+` FROM content_groups WHERE team_id = $1 AND kind = $2 AND id = $3`, teamID, kind, id))
	if err == db.ErrNoRows {
		return g, apperr.New(apperr.NotFound, "Group not found.")
	}
	return g, err
}

func (s *Service) defaultGroup(ctx context.Context, q db.Querier, teamID, kind string) (string, error) {
	var id string
	err := q.QueryRow(ctx, `SELECT id FROM content_groups WHERE team_id = $1 AND kind = $2 AND is_default`, teamID, kind).Scan(&id)
	return id, err
}

// CreateGroup creates a group; the reserved name is refused.
func (s *Service) CreateGroup(ctx context.Context, teamID, kind, name, description string) (Group, error) {
	if err := validKind(kind); err != nil {
		return Group{}, err
	}
	if err := s.Begin(ctx, teamID); err != nil {
		return Group{}, err
	}
	name, err := checkGroupName(name)
	if err != nil {
		return Group{}, err
	}
	now := s.now()
	g := Group{ID: ids.New(), Kind: kind, Name: name, Description: description, CreatedAt: fromMS(ms(now)), UpdatedAt: fromMS(ms(now))}
	if _, err := s.db.Exec(ctx, `INSERT INTO content_groups (id, team_id, kind, name, description, is_default, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, FALSE, $6, $6)`, g.ID, teamID, kind, g.Name, g.Description, ms(now)); err != nil {
		return Group{}, err
	}
	return g, nil
}

// UpdateGroup changes a group's name and/or description (nil leaves it).
// The default group cannot be edited.
func (s *Service) UpdateGroup(ctx context.Context, teamID, kind, id string, name, description *string) (Group, error) {
	if err := validKind(kind); err != nil {
		return Group{}, err
	}
	if err := s.Begin(ctx, teamID); err != nil {
		return Group{}, err
	}
	if err := checkID(id, "group"); err != nil {
		return Group{}, err
	}
	if name == nil && description == nil {
		return Group{}, apperr.New(apperr.Invalid, "At least one field is required.")
	}
	var out Group
	err := s.db.InTx(ctx, func(tx db.Tx) error {
		g, err := s.group(ctx, tx, teamID, kind, id)
		if err != nil {
			return err
		}
		if g.IsDefault {
			return apperr.New(apperr.Invalid, "The %s group cannot be edited.", DefaultGroupName)
		}
		if name != nil {
			if g.Name, err = checkGroupName(*name); err != nil {
				return err
			}
		}
		if description != nil {
			g.Description = *description
		}
		now := s.now()
		g.UpdatedAt = fromMS(ms(now))
		if _, err := tx.Exec(ctx, `UPDATE content_groups SET name = $1, description = $2, updated_at = $3 WHERE id = $4`,
			g.Name, g.Description, ms(now), g.ID); err != nil {
			return err
		}
		out = g
		return nil
	})
	return out, err
}
