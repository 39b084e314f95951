package httpapi

import (
	"context"
	"net/http"

	"github.com/lasso-mail/lasso/internal/accounts"
	"github.com/lasso-mail/lasso/internal/content"
	"github.com/lasso-mail/lasso/internal/emails"
)

// transactionalJSON is TransactionalEmailResource (§6.9); the draft
// revision is added by create and ensure-draft.
type transactionalJSON struct {
	ID                      string   `json:"id"`
	URL                     string   `json:"url"`
	Name                    string   `json:"name"`
	DraftEmailMessageID     *string  `json:"draftEmailMessageId"`
	PublishedEmailMessageID *string  `json:"publishedEmailMessageId"`
	TransactionalGroupID    *string  `json:"transactionalGroupId"`
	CreatedAt               string   `json:"createdAt"`
	UpdatedAt               string   `json:"updatedAt"`
	DataVariables           []string `json:"dataVariables"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (a *API) transactionalJSON(t content.Transactional) transactionalJSON {
	return transactionalJSON{ID: t.ID, URL: a.resourceURL("transactional", t.ID), Name: t.Name,
		DraftEmailMessageID: nullable(t.DraftMessageID), PublishedEmailMessageID: nullable(t.PublishedMessageID),
		TransactionalGroupID: nullable(t.GroupID), CreatedAt: isoTime(t.CreatedAt), UpdatedAt: isoTime(t.UpdatedAt),
		DataVariables: t.DataVariables}
}

// draftJSON is TransactionalDraftResponse: the resource with
// draftEmailMessageContentRevisionId always present.
type draftJSON struct {
	transactionalJSON
	DraftEmailMessageContentRevisionID *string `json:"draftEmailMessageContentRevisionId"`
}

func (a *API) draftJSON(t content.Transactional) draftJSON {
	return draftJSON{transactionalJSON: a.transactionalJSON(t), DraftEmailMessageContentRevisionID: nullable(t.DraftRevisionID)}
}

func (a *API) listTransactionalEmails(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	p, err := pageOf(r)
	if err != nil {
		return err
	}
	l, err := a.Content.Transactionals(r.Context(), team.ID, p, false)
	if err != nil {
		return err
	}
	writePage(w, r, a.PublicURL, l, func(t content.Transactional) any { return a.transactionalJSON(t) })
	return nil
}

// listPublishedTransactional is the deprecated GET /v1/transactional:
// published emails only, as {id, name, lastUpdated, dataVariables}.
func (a *API) listPublishedTransactional(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	p, err := pageOf(r)
	if err != nil {
		return err
	}
	l, err := a.Content.Transactionals(r.Context(), team.ID, p, true)
	if err != nil {
		return err
	}
	writePage(w, r, a.PublicURL, l, func(t content.Transactional) any {
		last := t.UpdatedAt
		if t.PublishedAt != nil {
			last = *t.PublishedAt
		}
		return map[string]any{"id": t.ID, "name": t.Name, "lastUpdated": isoTime(last), "dataVariables": t.DataVariables}
	})
	return nil
}

func (a *API) getTransactionalEmail(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	t, err := a.Content.Transactional(r.Context(), team.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.transactionalJSON(t))
	return nil
}

func (a *API) createTransactionalEmail(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	m, err := contentBody(r, false, "name", "transactionalGroupId")
	if err != nil {
		return err
	}
	name, err := reqString(m, "name")
	if err != nil {
		return err
	}
	group, err := strPtr(m, "transactionalGroupId")
	if err != nil {
		return err
	}
	t, err := a.Content.CreateTransactional(r.Context(), team.ID, name, group)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, a.draftJSON(t))
	return nil
}

func (a *API) updateTransactionalEmail(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	m, err := contentBody(r, true, "name", "transactionalGroupId")
	if err != nil {
		return err
	}
	name, err := strPtr(m, "name")
	if err != nil {
		return err
	}
	group, err := strPtr(m, "transactionalGroupId")
	if err != nil {
		return err
	}
	t, err := a.Content.UpdateTransactional(r.Context(), team.ID, r.PathValue("id"), name, group)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.transactionalJSON(t))
	return nil
}

func (a *API) ensureTransactionalDraft(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	if _, err := contentBody(r, true); err != nil {
		return err
	}
	t, err := a.Content.EnsureDraft(r.Context(), team.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.draftJSON(t))
	return nil
}

func (a *API) publishTransactionalEmail(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	if _, err := contentBody(r, true); err != nil {
		return err
	}
	t, err := a.Content.Publish(r.Context(), team.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.transactionalJSON(t))
	return nil
}

// sendMetrics counts the sends of a source (emails.Service).
type sendMetrics interface {
	SourceMetrics(ctx context.Context, teamID, sourceType, sourceID string) (emails.Metrics, error)
}

// transactionalMetrics returns a transactional email's all-time counters,
// counted from the sends made from it.
func (a *API) transactionalMetrics(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	t, err := a.Content.Transactional(r.Context(), team.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	m, err := a.SendMetrics.SourceMetrics(r.Context(), team.ID, emails.SourceTransactional, t.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int64{"sends": m.Sends, "deliveries": m.Deliveries, "spamReports": m.SpamReports,
		"hardBounces": m.HardBounces, "softBounces": m.SoftBounces})
	return nil
}
