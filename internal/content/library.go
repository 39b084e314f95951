package content

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/lmx"
)

// MaxLMXBytes is the size limit of an LMX body (§9.1 rule 12).
const MaxLMXBytes = 100 * 1024

// library is a team's themes and components, loaded for one operation.
type library struct {
	themes       map[string]lmx.ThemeStyles
	defaultTheme string
	components   lmx.ComponentMap
}

func (s *Service) loadLibrary(ctx context.Context, q db.Querier, teamID string) (*library, error) {
	lib := &library{themes: map[string]lmx.ThemeStyles{}, components: lmx.ComponentMap{}}
	rows, err := q.Query(ctx, `SELECT id, styles, is_default FROM themes WHERE team_id = $1`, teamID)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id, styles string
		var def bool
		if err := rows.Scan(&id, &styles, &def); err != nil {
			rows.Close()
			return nil, err
		}
		var st lmx.ThemeStyles
		if err := json.Unmarshal([]byte(styles), &st); err != nil {
			rows.Close()
			return nil, fmt.Errorf("theme %s: %w", id, err)
		}
		lib.themes[id] = st
		if def {
			lib.defaultTheme = id
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = q.Query(ctx, `SELECT id, lmx FROM components WHERE team_id = $1`, teamID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, body string
		if err := rows.Scan(&id, &body); err != nil {
			return nil, err
		}
		lib.components[id] = body
	}
	return lib, rows.Err()
}

// theme returns the styles of theme id, or of the default theme.
func (l *library) theme(id string) lmx.ThemeStyles {
	if st, ok := l.themes[id]; ok {
		return st
	}
	return l.themes[l.defaultTheme]
}

func defaultThemeStyles() lmx.ThemeStyles { return lmx.DefaultTheme() }

// componentRef is one component an email message uses.
type componentRef struct {
	id         string
	overridden bool // the reference has local children
}

// prepared is a parsed, expanded email body with what the store keeps
// about it.
type prepared struct {
	doc      *lmx.Doc
	themeID  string
	refs     []componentRef
	warnings []Warning
}

// Warning is a non-fatal LMX problem, returned in update responses'
// warnings[] (§5.10).
type Warning struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	Path     string `json:"path,omitempty"`
	Line     int    `json:"line,omitempty"`
	Col      int    `json:"col,omitempty"`
}

func toWarnings(ws []lmx.Warning) []Warning {
	out := make([]Warning, 0, len(ws))
	for _, w := range ws {
		out = append(out, Warning{Rule: w.Rule, Severity: "warning", Message: w.Msg, Path: "lmx", Line: w.Line, Col: w.Col})
	}
	return out
}

// lmxError turns a parse or expansion error into the 422 of §5.10.
func lmxError(err error) error {
	var se *lmx.SyntaxError
	if errors.As(err, &se) {
		errs := se.Errors
		if len(errs) == 0 {
			errs = []lmx.Diagnostic{se.Diagnostic}
		}
		return apperr.New(apperr.Unprocessable, "LMX failed to compile: line %d, column %d: %s", se.Line, se.Col, se.Msg).
			With("line", se.Line).With("col", se.Col).With("errors", errs)
	}
	return err
}

func checkLMXSize(src string) error {
	if len(src) > MaxLMXBytes {
		return apperr.New(apperr.TooLarge, "LMX is larger than the limit of %d bytes.", MaxLMXBytes).With("maxBytes", MaxLMXBytes)
	}
	return nil
}

// prepare parses and expands an email body against the team's library.
func (l *library) prepare(src string) (*prepared, error) {
	if err := checkLMXSize(src); err != nil {
		return nil, err
	}
	doc, ws, err := lmx.Parse(src)
	if err != nil {
		return nil, lmxError(err)
	}
	if err := lmx.Expand(doc, l.components); err != nil {
		return nil, lmxError(err)
	}
	p := &prepared{doc: doc, warnings: toWarnings(ws)}
	p.themeID = doc.ThemeID()
	if p.themeID == "" {
		p.themeID = l.defaultTheme
	} else if _, ok := l.themes[p.themeID]; !ok {
		w := Warning{Rule: "unknownTheme", Severity: "warning", Message: fmt.Sprintf("themeId %q is not one of your themes; the default theme is used.", p.themeID), Path: "lmx"}
		if doc.Style != nil {
			w.Line, w.Col = doc.Style.Pos.Line, doc.Style.Pos.Col
		}
		p.warnings = append(p.warnings, w)
		p.themeID = l.defaultTheme
	}
	p.refs = componentRefs(doc)
	return p, nil
}

func componentRefs(doc *lmx.Doc) []componentRef {
	seen := map[string]int{}
	var refs []componentRef
	doc.Walk(func(n *lmx.Node) bool {
		if n.Type == lmx.ElementNode && n.Tag == "Component" {
			id, _ := n.Attr("componentId")
			if id == "" {
				return true
			}
			over := len(n.Children) > 0
			if i, ok := seen[id]; ok {
				refs[i].overridden = refs[i].overridden && over
				return true
			}
			seen[id] = len(refs)
			refs = append(refs, componentRef{id: id, overridden: over})
		}
		return true
	})
	return refs
}

// snapshot freezes what a published message's rendering depends on.
type snapshot struct {
	Theme      lmx.ThemeStyles   `json:"theme"`
	Components map[string]string `json:"components"`
}

func (l *library) snapshot(themeID string, refs []componentRef) snapshot {
	sn := snapshot{Theme: l.theme(themeID), Components: map[string]string{}}
	for _, r := range refs {
		if body, ok := l.components[r.id]; ok {
			sn.Components[r.id] = body
		}
	}
	return sn
}
