package content

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/guardian"
	"github.com/lasso-mail/lasso/internal/ids"
	"github.com/lasso-mail/lasso/internal/lmx"
)

// Component is a reusable LMX block (§6.5).
type Component struct {
	ID, Name, LMX        string
	CreatedAt, UpdatedAt time.Time
}

func (c Component) id() string { return c.ID }

const componentCols = `id, name, lmx, created_at, updated_at`

func scanComponent(r db.Row) (Component, error) {
	var c Component
	var cr, u int64
	if err := r.Scan(&c.ID, &c.Name, &c.LMX, &cr, &u); err != nil {
		return c, err
	}
	c.CreatedAt, c.UpdatedAt = fromMS(cr), fromMS(u)
	return c, nil
}

// Components lists a team's components, newest first.
func (s *Service) Components(ctx context.Context, teamID string, p Page) (List[Component], error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return List[Component]{}, err
	}
	return paginate(ctx, s.db, "components", componentCols, "team_id = $1", []any{teamID}, p,
		func(r db.Rows) (Component, error) { return scanComponent(r) })
}

func (s *Service) component(ctx context.Context, q db.Querier, teamID, id string) (Component, error) {
	c, err := scanComponent(q.QueryRow(ctx, `SELECT `+componentCols+` FROM components WHERE team_id = $1 AND id = $2`, teamID, id))
	if err == db.ErrNoRows {
		return c, apperr.New(apperr.NotFound, "Component not found.")
	}
	return c, err
}

// Component returns one component.
func (s *Service) Component(ctx context.Context, teamID, id string) (Component, error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return Component{}, err
	}
	if err := checkID(id, "component"); err != nil {
		return Component{}, err
	}
	return s.component(ctx, s.db, teamID, id)
}

func parseComponent(src string) (*lmx.Doc, error) {
	if err := checkLMXSize(src); err != nil {
		return nil, err
	}
	if strings.TrimSpace(src) == "" {
		return nil, apperr.New(apperr.Invalid, "lmx is required.")
	}
	doc, _, err := lmx.ParseComponent(src)
	if err != nil {
		return nil, lmxError(err)
	}
	return doc, nil
}

// CreateComponent creates a component (413 over the LMX limit, 422 when the
// body does not parse).
func (s *Service) CreateComponent(ctx context.Context, teamID, name, body string) (Component, error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return Component{}, err
	}
	if name = strings.TrimSpace(name); name == "" {
		return Component{}, apperr.New(apperr.Invalid, "name is required.")
	}
	if _, err := parseComponent(body); err != nil {
		return Component{}, err
	}
	now := s.now()
	c := Component{ID: ids.New(), Name: name, LMX: body, CreatedAt: fromMS(ms(now)), UpdatedAt: fromMS(ms(now))}
	if _, err := s.db.Exec(ctx, `INSERT INTO components (id, team_id, name, lmx, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)`,
		c.ID, teamID, c.Name, c.LMX, ms(now)); err != nil {
		return Component{}, err
	}
	return c, nil
}

// UpdateComponent renames a component and/or replaces its body. A body
// change reaches every draft email that references the component without
// local overrides (they resolve it when compiled); it is refused with 422
// and invalidTags when it would introduce variables one of those emails
// cannot use. It returns the number of emails the body change affects.
func (s *Service) UpdateComponent(ctx context.Context, teamID, id string, name, body *string) (Component, int, error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return Component{}, 0, err
	}
	if err := checkID(id, "component"); err != nil {
		return Component{}, 0, err
	}
	if name == nil && body == nil {
		return Component{}, 0, apperr.New(apperr.Invalid, "At least one field is required.")
	}
	var vars []lmx.Variable
	if body != nil {
		doc, err := parseComponent(*body)
		if err != nil {
			return Component{}, 0, err
		}
		vars = doc.Variables()
	}
	props, err := s.contactProperties(ctx, teamID)
	if err != nil {
		return Component{}, 0, err
	}
	var out Component
	affected := 0
	err = s.db.InTx(ctx, func(tx db.Tx) error {
		if n, err := tx.Exec(ctx, `UPDATE components SET updated_at = updated_at WHERE team_id = $1 AND id = $2`, teamID, id); err != nil {
			return err
		} else if n == 0 {
			return apperr.New(apperr.NotFound, "Component not found.")
		}
		c, err := s.component(ctx, tx, teamID, id)
		if err != nil {
			return err
		}
		if name != nil {
			if c.Name = strings.TrimSpace(*name); c.Name == "" {
				return apperr.New(apperr.Invalid, "name must not be empty.")
			}
		}
		if body != nil && *body != c.LMX {
			rs, err := tx.Query(ctx, `SELECT m.parent_kind FROM email_message_components r JOIN email_messages m ON m.id = r.message_id
				WHERE r.component_id = $1 AND r.team_id = $2 AND NOT r.overridden AND m.state = $3`, id, teamID, StateDraft)
			if err != nil {
				return err
			}
			var kinds []string
			for rs.Next() {
				var k string
				if err := rs.Scan(&k); err != nil {
					rs.Close()
					return err
				}
				kinds = append(kinds, k)
			}
			rs.Close()
			if err := rs.Err(); err != nil {
				return err
			}
			if err := checkComponentVars(kinds, vars, props); err != nil {
				return err
			}
			affected = len(kinds)
			c.LMX = *body
		}
		now := s.now()
		c.UpdatedAt = fromMS(ms(now))
		_, err = tx.Exec(ctx, `UPDATE components SET name = $1, lmx = $2, updated_at = $3 WHERE id = $4`, c.Name, c.LMX, ms(now), c.ID)
		out = c
		return err
	})
	return out, affected, err
}

// checkComponentVars returns the 422 of §5.12 when vars include variables
// that an email of one of kinds cannot use.
func checkComponentVars(kinds []string, vars []lmx.Variable, props []string) error {
	bad := map[string]bool{}
	onlyContact := true
	seen := map[string]bool{}
	for _, k := range kinds {
		if seen[k] {
			continue
		}
		seen[k] = true
		for _, v := range guardian.Unsupported(guardianKind(k), vars, props) {
			bad[v.Name] = true
			if v.Namespace != lmx.NamespaceContact {
				onlyContact = false
			}
		}
	}
	if len(bad) == 0 {
		return nil
	}
	tags := make([]string, 0, len(bad))
	for k := range bad {
		tags = append(tags, k)
	}
	sort.Strings(tags)
	msg := "Component uses unsupported contact properties."
	if !onlyContact {
		msg = "Component uses variables that emails using it cannot use."
	}
	return apperr.New(apperr.Unprocessable, "%s", msg).With("invalidTags", tags)
}
