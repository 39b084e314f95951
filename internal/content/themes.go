package content

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
	"github.com/lasso-mail/lasso/internal/lmx"
)

// Theme is an email theme (§6.4).
type Theme struct {
	ID, Name             string
	Styles               lmx.ThemeStyles
	IsDefault            bool
	CreatedAt, UpdatedAt time.Time
}

func (t Theme) id() string { return t.ID }

const themeCols = `id, name, styles, is_default, created_at, updated_at`

func scanTheme(r db.Row) (Theme, error) {
	var t Theme
	var styles string
	var c, u int64
	if err := r.Scan(&t.ID, &t.Name, &styles, &t.IsDefault, &c, &u); err != nil {
		return t, err
	}
	if err := json.Unmarshal([]byte(styles), &t.Styles); err != nil {
		return t, err
	}
	t.CreatedAt, t.UpdatedAt = fromMS(c), fromMS(u)
	return t, nil
}

// Themes lists a team's themes, newest first.
func (s *Service) Themes(ctx context.Context, teamID string, p Page) (List[Theme], error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return List[Theme]{}, err
	}
	return paginate(ctx, s.db, "themes", themeCols, "team_id = $1", []any{teamID}, p, func(r db.Rows) (Theme, error) { return scanTheme(r) })
}

func (s *Service) theme(ctx context.Context, q db.Querier, teamID, id string) (Theme, error) {
	t, err := scanTheme(q.QueryRow(ctx, `SELECT `+themeCols+` FROM themes WHERE team_id = $1 AND id = $2`, teamID, id))
	if err == db.ErrNoRows {
		return t, apperr.New(apperr.NotFound, "Theme not found.")
	}
	return t, err
}

// Theme returns one theme.
func (s *Service) Theme(ctx context.Context, teamID, id string) (Theme, error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return Theme{}, err
	}
	if err := checkID(id, "theme"); err != nil {
		return Theme{}, err
	}
	return s.theme(ctx, s.db, teamID, id)
}

func checkStyles(st lmx.ThemeStyles) error {
	if err := st.Validate(); err != nil {
		return apperr.New(apperr.Invalid, "Invalid styles: %s", err.Error())
	}
	return nil
}

// CreateTheme creates a (non-default) theme.
func (s *Service) CreateTheme(ctx context.Context, teamID, name string, styles lmx.ThemeStyles) (Theme, error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return Theme{}, err
	}
	if name = strings.TrimSpace(name); name == "" {
		return Theme{}, apperr.New(apperr.Invalid, "name is required.")
	}
	if err := checkStyles(styles); err != nil {
		return Theme{}, err
	}
	st, err := jsonText(styles)
	if err != nil {
		return Theme{}, err
	}
	now := s.now()
	t := Theme{ID: ids.New(), Name: name, Styles: styles, CreatedAt: fromMS(ms(now)), UpdatedAt: fromMS(ms(now))}
	if _, err := s.db.Exec(ctx, `INSERT INTO themes (id, team_id, name, styles, is_default, created_at, updated_at) VALUES ($1, $2, $3, $4, FALSE, $5, $5)`,
		t.ID, teamID, t.Name, st, ms(now)); err != nil {
		return Theme{}, err
	}
	return t, nil
}

// UpdateTheme renames a theme and/or merges styles into it per key, then
// cascades the style change to the draft email messages that use the theme
// (§5.11): properties an email overrides keep the override, and an override
// that now equals the theme's value is removed from the email's <Style/> so
// that it follows the theme again. It returns the number of emails the
// style change affected.
func (s *Service) UpdateTheme(ctx context.Context, teamID, id string, name *string, styles *lmx.ThemeStyles) (Theme, int, error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return Theme{}, 0, err
	}
	if err := checkID(id, "theme"); err != nil {
		return Theme{}, 0, err
	}
	if name == nil && styles == nil {
		return Theme{}, 0, apperr.New(apperr.Invalid, "At least one field is required.")
	}
	if styles != nil {
		if err := checkStyles(*styles); err != nil {
			return Theme{}, 0, err
		}
	}
	var out Theme
	affected := 0
	err := s.db.InTx(ctx, func(tx db.Tx) error {
		if n, err := tx.Exec(ctx, `UPDATE themes SET updated_at = updated_at WHERE team_id = $1 AND id = $2`, teamID, id); err != nil {
			return err
		} else if n == 0 {
			return apperr.New(apperr.NotFound, "Theme not found.")
		}
		t, err := s.theme(ctx, tx, teamID, id)
		if err != nil {
			return err
		}
		if name != nil {
			if t.Name = strings.TrimSpace(*name); t.Name == "" {
				return apperr.New(apperr.Invalid, "name must not be empty.")
			}
		}
		old := t.Styles
		if styles != nil {
			t.Styles = t.Styles.Merge(*styles)
		}
		st, err := jsonText(t.Styles)
		if err != nil {
			return err
		}
		now := s.now()
		t.UpdatedAt = fromMS(ms(now))
		if _, err := tx.Exec(ctx, `UPDATE themes SET name = $1, styles = $2, updated_at = $3 WHERE id = $4`, t.Name, st, ms(now), t.ID); err != nil {
			return err
		}
		if styles != nil {
			if affected, err = s.cascadeTheme(ctx, tx, teamID, t.ID, old.Map(), t.Styles.Map(), now); err != nil {
				return err
			}
		}
		out = t
		return nil
	})
	return out, affected, err
}

func (s *Service) cascadeTheme(ctx context.Context, tx db.Tx, teamID, themeID string, oldM, newM map[string]string, now time.Time) (int, error) {
	changed := map[string]bool{}
	for k, v := range newM {
		if oldM[k] != v {
			changed[k] = true
		}
	}
	for k := range oldM {
		if _, ok := newM[k]; !ok {
			changed[k] = true
		}
	}
	if len(changed) == 0 {
		return 0, nil
	}
	type row struct{ id, lmx string }
	var rows []row
	rs, err := tx.Query(ctx, `SELECT id, lmx FROM email_messages WHERE team_id = $1 AND theme_id = $2 AND state = $3`, teamID, themeID, StateDraft)
	if err != nil {
		return 0, err
	}
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.id, &r.lmx); err != nil {
			rs.Close()
			return 0, err
		}
		rows = append(rows, r)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return 0, err
	}
	affected := 0
	for _, r := range rows {
		doc, _, err := lmx.Parse(r.lmx)
		if err != nil {
			continue
		}
		over := lmx.StylesFromDoc(doc).Map()
		hit := false
		src := r.lmx
		for k := range changed {
			ov, overridden := over[k]
			switch {
			case !overridden:
				hit = true
			case ov == newM[k]:
				src = removeStyleAttr(src, doc.Style.Pos, k)
				hit = true
			}
		}
		if !hit {
			continue
		}
		affected++
		if src != r.lmx {
			if _, err := tx.Exec(ctx, `UPDATE email_messages SET lmx = $1, content_revision_id = $2, updated_at = $3 WHERE id = $4`,
				src, ids.New(), ms(now), r.id); err != nil {
				return 0, err
			}
		}
	}
	return affected, nil
}

// removeStyleAttr removes attribute name from the <Style …/> element that
// starts at pos in src.
func removeStyleAttr(src string, pos lmx.Pos, name string) string {
	start := offsetOf(src, pos)
	if start < 0 || !strings.HasPrefix(src[start:], "<Style") {
		start = strings.Index(src, "<Style")
		if start < 0 {
			return src
		}
	}
	end := strings.Index(src[start:], ">")
	if end < 0 {
		return src
	}
	end += start + 1
	re := regexp.MustCompile(`\s+` + regexp.QuoteMeta(name) + `\s*=\s*("[^"]*"|'[^']*')`)
	tag := re.ReplaceAllString(src[start:end], "")
	return src[:start] + tag + src[end:]
}

// offsetOf converts a 1-based line and column (in characters) to a byte
// offset, or -1.
func offsetOf(src string, pos lmx.Pos) int {
	line, off := 1, 0
	for line < pos.Line {
		i := strings.IndexByte(src[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
		line++
	}
	for col := 1; col < pos.Col; col++ {
		if off >= len(src) {
			return -1
		}
		_, size := utf8.DecodeRuneInString(src[off:])
		off += size
	}
	return off
}
