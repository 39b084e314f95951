package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/lasso-mail/lasso/internal/accounts"
	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/content"
	"github.com/lasso-mail/lasso/internal/lmx"
)

// Themes (§5.11).

type themeJSON struct {
	ID                 string          `json:"id"`
	Name               string          `json:"name"`
	Styles             lmx.ThemeStyles `json:"styles"`
	IsDefault          bool            `json:"isDefault"`
	CreatedAt          string          `json:"createdAt"`
	UpdatedAt          string          `json:"updatedAt"`
	AffectedEmailCount *int            `json:"affectedEmailCount,omitempty"`
}

func themeOut(t content.Theme) themeJSON {
	return themeJSON{ID: t.ID, Name: t.Name, Styles: t.Styles, IsDefault: t.IsDefault, CreatedAt: isoTime(t.CreatedAt), UpdatedAt: isoTime(t.UpdatedAt)}
}

// stylesField decodes an optional ThemeStyles object, refusing unknown keys
// and wrongly typed values.
func stylesField(m map[string]any) (*lmx.ThemeStyles, error) {
	o, err := optObject(m, "styles")
	if err != nil || o == nil {
		return nil, err
	}
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var st lmx.ThemeStyles
	if err := dec.Decode(&st); err != nil {
		return nil, apperr.New(apperr.Invalid, "Invalid styles: %s.", err.Error())
	}
	return &st, nil
}

func (a *API) listThemes(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	p, err := pageOf(r)
	if err != nil {
		return err
	}
	l, err := a.Content.Themes(r.Context(), team.ID, p)
	if err != nil {
		return err
	}
	writePage(w, r, a.PublicURL, l, func(t content.Theme) any { return themeOut(t) })
	return nil
}

func (a *API) getTheme(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	t, err := a.Content.Theme(r.Context(), team.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, themeOut(t))
	return nil
}

func (a *API) createTheme(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	m, err := contentBody(r, false, "name", "styles")
	if err != nil {
		return err
	}
	name, err := reqString(m, "name")
	if err != nil {
		return err
	}
	st, err := stylesField(m)
	if err != nil {
		return err
	}
	if st == nil {
		st = &lmx.ThemeStyles{}
	}
	t, err := a.Content.CreateTheme(r.Context(), team.ID, name, *st)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, themeOut(t))
	return nil
}

func (a *API) updateTheme(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	m, err := contentBody(r, true, "name", "styles")
	if err != nil {
		return err
	}
	name, err := strPtr(m, "name")
	if err != nil {
		return err
	}
	st, err := stylesField(m)
	if err != nil {
		return err
	}
	t, n, err := a.Content.UpdateTheme(r.Context(), team.ID, r.PathValue("id"), name, st)
	if err != nil {
		return err
	}
	out := themeOut(t)
	out.AffectedEmailCount = &n
	writeJSON(w, http.StatusOK, out)
	return nil
}

// Components (§5.12).

type componentJSON struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	LMX                string `json:"lmx"`
	AffectedEmailCount *int   `json:"affectedEmailCount,omitempty"`
}

func componentOut(c content.Component) componentJSON {
	return componentJSON{ID: c.ID, Name: c.Name, LMX: c.LMX}
}

func (a *API) listComponents(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	p, err := pageOf(r)
	if err != nil {
		return err
	}
	l, err := a.Content.Components(r.Context(), team.ID, p)
	if err != nil {
		return err
	}
	writePage(w, r, a.PublicURL, l, func(c content.Component) any { return componentOut(c) })
	return nil
}

func (a *API) getComponent(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	c, err := a.Content.Component(r.Context(), team.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, componentOut(c))
	return nil
}

func (a *API) createComponent(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	m, err := contentBody(r, false, "name", "lmx")
	if err != nil {
		return err
	}
	name, err := reqString(m, "name")
	if err != nil {
		return err
	}
	body, err := reqString(m, "lmx")
	if err != nil {
		return err
	}
	c, err := a.Content.CreateComponent(r.Context(), team.ID, name, body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, componentOut(c))
	return nil
}

func (a *API) updateComponent(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	m, err := contentBody(r, true, "name", "lmx")
	if err != nil {
		return err
	}
	name, err := strPtr(m, "name")
	if err != nil {
		return err
	}
	body, err := strPtr(m, "lmx")
	if err != nil {
		return err
	}
	c, n, err := a.Content.UpdateComponent(r.Context(), team.ID, r.PathValue("id"), name, body)
	if err != nil {
		return err
	}
	out := componentOut(c)
	out.AffectedEmailCount = &n
	writeJSON(w, http.StatusOK, out)
	return nil
}

// Campaign and transactional groups (§5.8).

type groupJSON struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	CreatedAt   string `json:"createdAt"`
	UpdatedAt   string `json:"updatedAt"`
}

func groupOut(g content.Group) groupJSON {
	return groupJSON{ID: g.ID, Name: g.Name, Description: g.Description, CreatedAt: isoTime(g.CreatedAt), UpdatedAt: isoTime(g.UpdatedAt)}
}

func (a *API) listGroups(kind string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
		p, err := pageOf(r)
		if err != nil {
			return err
		}
		l, err := a.Content.Groups(r.Context(), team.ID, kind, p)
		if err != nil {
			return err
		}
		writePage(w, r, a.PublicURL, l, func(g content.Group) any { return groupOut(g) })
		return nil
	}
}

func (a *API) getGroup(kind string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
		g, err := a.Content.Group(r.Context(), team.ID, kind, r.PathValue("id"))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, groupOut(g))
		return nil
	}
}

func (a *API) createGroup(kind string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
		m, err := contentBody(r, false, "name", "description")
		if err != nil {
			return err
		}
		name, err := reqString(m, "name")
		if err != nil {
			return err
		}
		desc, err := optString(m, "description")
		if err != nil {
			return err
		}
		g, err := a.Content.CreateGroup(r.Context(), team.ID, kind, name, desc)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, groupOut(g))
		return nil
	}
}

func (a *API) updateGroup(kind string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
		m, err := contentBody(r, true, "name", "description")
		if err != nil {
			return err
		}
		name, err := strPtr(m, "name")
		if err != nil {
			return err
		}
		desc, err := strPtr(m, "description")
		if err != nil {
			return err
		}
		g, err := a.Content.UpdateGroup(r.Context(), team.ID, kind, r.PathValue("id"), name, desc)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, groupOut(g))
		return nil
	}
}
