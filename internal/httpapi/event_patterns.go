package httpapi

import (
	"net/http"

	"github.com/lasso-mail/lasso/internal/accounts"
	"github.com/lasso-mail/lasso/internal/events"
)

// Event patterns (§5.14), read-only: recorded by POST /events/send. They
// need no sending domain. The contract's objects carry no timestamps.

// patternSummary is an EventPatternSummary. incomingWebhookPlatform is null:
// every pattern comes from custom events.
func patternSummary(p events.Pattern) map[string]any {
	return map[string]any{"id": p.ID, "eventName": p.Name, "incomingWebhookPlatform": nil}
}

// patternOut is an EventPattern: the summary plus eventProperties.
func patternOut(p events.Pattern) map[string]any {
	m := patternSummary(p)
	props := make([]map[string]string, 0, len(p.Properties))
	for _, pp := range p.Properties {
		props = append(props, map[string]string{"name": pp.Name, "type": pp.Type})
	}
	m["eventProperties"] = props
	return m
}

func (a *API) listEventPatterns(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	p, err := pageOf(r)
	if err != nil {
		return err
	}
	l, err := a.Events.ListPatterns(r.Context(), team.ID, p.Cursor, p.PerPage)
	if err != nil {
		return err
	}
	writePage(w, r, a.PublicURL, l,
		func(p events.Pattern) any { return patternSummary(p) })
	return nil
}

func (a *API) getEventPattern(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	p, err := a.Events.GetPattern(r.Context(), team.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, patternOut(p))
	return nil
}

// getEventPatternByName serves /event-patterns/by-name/{eventName...}: the
// SDK percent-encodes the name (encodeURIComponent) and the mux hands it
// back decoded; a raw "/" in the name is accepted too. Case-sensitive.
func (a *API) getEventPatternByName(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	p, err := a.Events.GetPatternByName(r.Context(), team.ID, r.PathValue("eventName"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, patternOut(p))
	return nil
}
