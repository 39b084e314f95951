package httpapi

// Workflow runs (Lasso extension endpoints, canonical /api/lasso/…; not in
// the Loops API): a contact's run through a workflow, its current node and
// the history of the nodes it went through.
//
//	GET /api/lasso/workflows/{id}/runs    the workflow's runs, newest first, paginated as the
//	                                      list endpoints (§3); filters contactId, email, status
//	GET /api/lasso/workflow-runs/{runId}  one run
//
// Another team's workflow or run is a 404.

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/lasso-mail/lasso/internal/accounts"
	"github.com/lasso-mail/lasso/internal/content"
	"github.com/lasso-mail/lasso/internal/workflows"
)

type runStepJSON struct {
	NodeID string  `json:"nodeId"`
	Type   *string `json:"type"`
	At     string  `json:"at"`
	Result string  `json:"result"`
	Detail *string `json:"detail"`
}

type runJSON struct {
	ID           string        `json:"id"`
	WorkflowID   string        `json:"workflowId"`
	ContactID    string        `json:"contactId"`
	ContactEmail *string       `json:"contactEmail"`
	NodeID       string        `json:"nodeId"`
	Status       string        `json:"status"`
	EventID      *string       `json:"eventId"`
	DueAt        *string       `json:"dueAt"`
	CreatedAt    string        `json:"createdAt"`
	UpdatedAt    string        `json:"updatedAt"`
	History      []runStepJSON `json:"history"`
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func runOut(v workflows.RunView) runJSON {
	out := runJSON{ID: v.ID, WorkflowID: v.WorkflowID, ContactID: v.ContactID, ContactEmail: nonEmpty(v.ContactEmail),
		NodeID: v.NodeID, Status: v.Status, EventID: nonEmpty(v.EventID),
		CreatedAt: isoTime(v.CreatedAt), UpdatedAt: isoTime(v.UpdatedAt), History: make([]runStepJSON, len(v.History))}
	if v.DueAt != nil {
		due := isoTime(*v.DueAt)
		out.DueAt = &due
	}
	for i, s := range v.History {
		out.History[i] = runStepJSON{NodeID: s.NodeID, Type: nonEmpty(s.Type), At: isoTime(time.UnixMilli(s.At)),
			Result: s.Result, Detail: nonEmpty(s.Detail)}
	}
	return out
}

func (a *API) listWorkflowRuns(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	p, err := pageOf(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := workflows.RunFilter{ContactID: q.Get("contactId"), Email: q.Get("email"), Status: q.Get("status")}
	l, err := a.Workflows.ListRuns(r.Context(), team.ID, r.PathValue("id"), f, p)
	if err != nil {
		return err
	}
	writeRunsPage(w, r, a.PublicURL, l, f)
	return nil
}

// writeRunsPage is writePage whose nextPage keeps the filters (after cursor
// and perPage), so that following it lists the same runs.
func writeRunsPage(w http.ResponseWriter, r *http.Request, publicURL string, l content.List[workflows.RunView], f workflows.RunFilter) {
	out := paged{Data: make([]any, 0, len(l.Items))}
	for _, it := range l.Items {
		out.Data = append(out.Data, runOut(it))
	}
	out.Pagination = pagination{TotalResults: l.Total, ReturnedResults: len(l.Items), PerPage: l.PerPage}
	if l.PerPage > 0 {
		out.Pagination.TotalPages = (l.Total + l.PerPage - 1) / l.PerPage
	}
	if l.NextCursor != "" {
		c := l.NextCursor
		next := fmt.Sprintf("%s%s?cursor=%s&perPage=%d", publicURL, r.URL.Path, url.QueryEscape(c), l.PerPage)
		for _, kv := range [][2]string{{"contactId", f.ContactID}, {"email", f.Email}, {"status", f.Status}} {
			if kv[1] != "" {
				next += "&" + kv[0] + "=" + url.QueryEscape(kv[1])
			}
		}
		out.Pagination.NextCursor, out.Pagination.NextPage = &c, &next
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *API) getWorkflowRun(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	v, err := a.Workflows.GetRun(r.Context(), team.ID, r.PathValue("runId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, runOut(*v))
	return nil
}
