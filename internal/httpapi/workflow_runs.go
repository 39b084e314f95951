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
	"net/http"
	"time"

	"github.com/lasso-mail/lasso/internal/accounts"
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
	writePage(w, r, a.PublicURL, l, func(v workflows.RunView) any { return runOut(v) },
		[2]string{"contactId", f.ContactID}, [2]string{"email", f.Email}, [2]string{"status", f.Status})
	return nil
}

func (a *API) getWorkflowRun(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	v, err := a.Workflows.GetRun(r.Context(), team.ID, r.PathValue("runId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, runOut(*v))
	return nil
}
