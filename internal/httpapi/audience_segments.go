package httpapi

import (
	"net/http"

	"github.com/lasso-mail/lasso/internal/accounts"
	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/audience"
)

// Audience segments (§5.13, §6.6). Unlike campaigns and email messages they
// need no sending domain.

func (a *API) listAudienceSegments(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	p, err := pageOf(r)
	if err != nil {
		return err
	}
	l, err := a.Audience.ListSegments(r.Context(), team.ID, p.Cursor, p.PerPage)
	if err != nil {
		return err
	}
	writePage(w, r, a.PublicURL, l,
		func(g audience.Segment) any { return g.JSON() })
	return nil
}

func (a *API) getAudienceSegment(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	g, err := a.Audience.GetSegment(r.Context(), team.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, g.JSON())
	return nil
}

func (a *API) createAudienceSegment(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	m, err := contentBody(r, false, "name", "description", "filter")
	if err != nil {
		return err
	}
	name, err := reqString(m, "name")
	if err != nil {
		return err
	}
	desc, err := strPtr(m, "description")
	if err != nil {
		return err
	}
	fv, ok := m["filter"]
	if !ok || fv == nil {
		return apperr.New(apperr.Invalid, "filter is required.")
	}
	if _, ok := fv.(map[string]any); !ok {
		return apperr.New(apperr.Invalid, "filter must be an object with match and conditions.")
	}
	f, err := audience.FilterFromValue(fv)
	if err != nil {
		return err
	}
	d := ""
	if desc != nil {
		d = *desc
	}
	g, err := a.Audience.CreateSegment(r.Context(), team.ID, name, d, f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, g.JSON())
	return nil
}
