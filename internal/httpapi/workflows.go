package httpapi

// Workflows (§5.15, §5.16, §6.10, §10).
//
// Lasso extension endpoints (not in the Loops API; served under the same
// prefixes, canonical form /api/lasso/…):
//
//	POST /api/lasso/workflows/{id}/start   Draft or paused → Sending (the graph must be runnable)
//	POST /api/lasso/workflows/{id}/pause   Sending → Paused; body {"queueing": true} → PausedAndQueueing
//	POST /api/lasso/workflows/{id}/resume  Paused or PausedAndQueueing → Sending
//
// Each answers 200 with the SimplifiedWorkflow; they need no revision token
// and do not change it.

import (
	"net/http"

	"github.com/lasso-mail/lasso/internal/accounts"
	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/workflows"
)

// workflowsService lets Deps name the workflow service without api.go
// importing the package.
type workflowsService = workflows.Service

type workflowSummaryJSON struct {
	ID        string `json:"id"`
	URL       string `json:"url"`
	Name      string `json:"name"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
}

type workflowJSON struct {
	ID                 string                    `json:"id"`
	URL                string                    `json:"url"`
	Status             string                    `json:"status"`
	Name               string                    `json:"name"`
	Description        *string                   `json:"description,omitempty"`
	MailingListID      *string                   `json:"mailingListId"`
	RootNodeID         string                    `json:"rootNodeId"`
	WorkflowRevisionID *string                   `json:"workflowRevisionId"`
	Nodes              map[string]map[string]any `json:"nodes"`
}

func (a *API) workflowOut(w *workflows.Workflow) workflowJSON {
	out := workflowJSON{ID: w.ID, URL: a.resourceURL("workflows", w.ID), Status: w.Status, Name: w.Name, Description: w.Description,
		MailingListID: w.MailingListID, RootNodeID: w.RootNodeID, WorkflowRevisionID: w.RevisionID, Nodes: map[string]map[string]any{}}
	for id, n := range w.Nodes {
		out.Nodes[id] = simplifiedNode(n)
	}
	return out
}

// simplifiedNode is a node of SimplifiedWorkflow.nodes (§10.1, middle
// column).
func simplifiedNode(n *workflows.Node) map[string]any {
	m := map[string]any{"typeName": n.Type, "nextNodeIds": n.Next}
	switch n.Type {
	case workflows.TypeContactPropertyTrigger:
		m["contactPropertyQuery"], m["reEligible"] = n.ContactPropertyQuery, n.ReEligible
	case workflows.TypeAddToListTrigger:
		m["mailingListId"], m["reEligible"] = n.MailingListID, n.ReEligible
	case workflows.TypeEventTrigger:
		m["eventName"], m["reEligible"] = n.EventName, n.ReEligible
	default:
		typeFields(m, n)
	}
	return m
}

// fullNode is the detail and mutation node shape (§10.2, §10.3).
func fullNode(n *workflows.Node) map[string]any {
	m := map[string]any{"id": n.ID, "workflowId": n.WorkflowID, "typeName": n.Type, "nextNodeIds": n.Next}
	switch n.Type {
	case workflows.TypeContactPropertyTrigger:
		m["contactPropertyQuery"], m["reEligible"] = n.ContactPropertyQuery, n.ReEligible
	case workflows.TypeAddToListTrigger:
		m["mailingListId"], m["reEligible"] = n.MailingListID, n.ReEligible
	case workflows.TypeEventTrigger:
		props := n.EventProperties
		if props == nil {
			props = []workflows.EventProperty{}
		}
		m["eventName"], m["eventProperties"], m["reEligible"] = n.EventName, props, n.ReEligible
	case workflows.TypeAudienceFilter:
		m["audienceSegmentId"], m["appliesDownstream"] = n.AudienceSegmentID, n.AppliesDownstream
		if n.AudienceFilter != nil {
			m["audienceFilter"] = n.AudienceFilter
		} else {
			m["audienceFilter"] = nil
		}
	default:
		typeFields(m, n)
	}
	return m
}

func typeFields(m map[string]any, n *workflows.Node) {
	switch n.Type {
	case workflows.TypeTimer:
		m["amount"], m["unit"] = n.Amount, n.Unit
	case workflows.TypeSendEmail:
		m["emailMessageId"], m["subject"] = n.EmailMessageID, n.Subject
	case workflows.TypeExperiment:
		m["samplingRate"] = n.SamplingRate
	case workflows.TypeVariant:
		m["isControl"] = n.IsControl
	}
}

// mutationNode is a node with the workflow's new revision.
func mutationNode(n *workflows.Node, w *workflows.Workflow) map[string]any {
	m := fullNode(n)
	m["workflowRevisionId"] = w.RevisionID
	return m
}

// revision reads the required expectedRevisionId (string or null).
func revision(m map[string]any) (*string, error) {
	v, ok := m["expectedRevisionId"]
	if !ok {
		return nil, apperr.New(apperr.Invalid, "expectedRevisionId is required (the latest workflowRevisionId, or null).")
	}
	if v == nil {
		return nil, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, apperr.New(apperr.Invalid, "expectedRevisionId must be a string or null.")
	}
	return &s, nil
}

func optBool(m map[string]any, key string) (bool, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, apperr.New(apperr.Invalid, "%s must be a boolean.", key)
	}
	return b, nil
}

// nullableString reads a required key whose value is a string or null.
func nullableString(m map[string]any, key string) (*string, error) {
	if _, ok := m[key]; !ok {
		return nil, apperr.New(apperr.Invalid, "%s is required (a string, or null).", key)
	}
	return strPtr(m, key)
}

func (a *API) listWorkflows(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	p, err := pageOf(r)
	if err != nil {
		return err
	}
	l, err := a.Workflows.List(r.Context(), team.ID, p)
	if err != nil {
		return err
	}
	writePage(w, r, a.PublicURL, l, func(wf workflows.Workflow) any {
		return workflowSummaryJSON{ID: wf.ID, URL: a.resourceURL("workflows", wf.ID), Name: wf.Name, CreatedAt: isoTime(wf.CreatedAt), UpdatedAt: isoTime(wf.UpdatedAt)}
	})
	return nil
}

func (a *API) createWorkflow(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	m, err := contentBody(r, false, "name", "description", "mailingListId")
	if err != nil {
		return err
	}
	var in workflows.CreateInput
	if in.Name, err = reqString(m, "name"); err != nil {
		return err
	}
	if in.Description, err = strPtr(m, "description"); err != nil {
		return err
	}
	if in.MailingListID, err = strPtr(m, "mailingListId"); err != nil {
		return err
	}
	wf, err := a.Workflows.Create(r.Context(), team.ID, in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.workflowOut(wf))
	return nil
}

func (a *API) getWorkflow(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	wf, err := a.Workflows.Get(r.Context(), team.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.workflowOut(wf))
	return nil
}

func (a *API) updateWorkflow(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	m, err := contentBody(r, false, "expectedRevisionId", "name", "description")
	if err != nil {
		return err
	}
	var in workflows.UpdateInput
	if in.ExpectedRevisionID, err = revision(m); err != nil {
		return err
	}
	if in.Name, err = strPtr(m, "name"); err != nil {
		return err
	}
	if in.Description, err = strPtr(m, "description"); err != nil {
		return err
	}
	wf, err := a.Workflows.Update(r.Context(), team.ID, r.PathValue("id"), in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.workflowOut(wf))
	return nil
}

func (a *API) deleteWorkflow(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	m, rev, err := revisedBody(r, "confirmDelete")
	if err != nil {
		return err
	}
	confirm, err := optBool(m, "confirmDelete")
	if err != nil {
		return err
	}
	if err := a.Workflows.Delete(r.Context(), team.ID, r.PathValue("id"), rev, confirm); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) changeWorkflowList(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	m, err := contentBody(r, false, "expectedRevisionId", "mailingListId", "dryRun", "queuedContactPolicy")
	if err != nil {
		return err
	}
	var in workflows.ListChange
	if in.ExpectedRevisionID, err = revision(m); err != nil {
		return err
	}
	if in.MailingListID, err = nullableString(m, "mailingListId"); err != nil {
		return err
	}
	if in.DryRun, err = optBool(m, "dryRun"); err != nil {
		return err
	}
	if in.Policy, err = optString(m, "queuedContactPolicy"); err != nil {
		return err
	}
	res, err := a.Workflows.ChangeMailingList(r.Context(), team.ID, r.PathValue("id"), in)
	if err != nil {
		return err
	}
	out := map[string]any{"status": res.Status, "mailingListId": res.MailingListID, "queuedContactCount": res.QueuedContactCount}
	if res.Workflow != nil {
		out["workflowRevisionId"], out["workflow"] = res.Workflow.RevisionID, a.workflowOut(res.Workflow)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) createWorkflowNode(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	m, err := contentBody(r, false, "expectedRevisionId", "insertMode", "nodeTypeName", "fromNodeId", "toNodeId", "beforeNodeId")
	if err != nil {
		return err
	}
	var in workflows.NodeInsert
	if in.ExpectedRevisionID, err = revision(m); err != nil {
		return err
	}
	if in.Mode, err = reqString(m, "insertMode"); err != nil {
		return err
	}
	if in.Type, err = reqString(m, "nodeTypeName"); err != nil {
		return err
	}
	has := func(k string) bool { _, ok := m[k]; return ok }
	switch in.Mode {
	case workflows.InsertBetween:
		if has("beforeNodeId") {
			return apperr.New(apperr.Invalid, `beforeNodeId is not allowed with insertMode "between".`)
		}
		if in.FromNodeID, err = reqString(m, "fromNodeId"); err != nil {
			return err
		}
		if in.ToNodeID, err = reqString(m, "toNodeId"); err != nil {
			return err
		}
	case workflows.InsertBefore:
		if has("fromNodeId") {
			return apperr.New(apperr.Invalid, `fromNodeId is not allowed with insertMode "before".`)
		}
		if has("toNodeId") == has("beforeNodeId") {
			return apperr.New(apperr.Invalid, `insertMode "before" needs exactly one of toNodeId and beforeNodeId.`)
		}
		key := "toNodeId"
		if has("beforeNodeId") {
			key = "beforeNodeId"
		}
		if in.ToNodeID, err = reqString(m, key); err != nil {
			return err
		}
	case workflows.InsertAfter:
		if has("toNodeId") || has("beforeNodeId") {
			return apperr.New(apperr.Invalid, `insertMode "after" takes only fromNodeId.`)
		}
		if in.FromNodeID, err = reqString(m, "fromNodeId"); err != nil {
			return err
		}
	default:
		return apperr.New(apperr.Invalid, `insertMode must be "between", "before" or "after".`)
	}
	res, err := a.Workflows.CreateNode(r.Context(), team.ID, r.PathValue("id"), in)
	if err != nil {
		return err
	}
	node := mutationNode(res.Node, res.Workflow)
	if len(res.Created) > 0 {
		kids := make([]map[string]any, len(res.Created))
		for i, c := range res.Created {
			kids[i] = fullNode(c)
		}
		node["createdChildNodes"] = kids
	}
	writeJSON(w, http.StatusOK, map[string]any{"node": node, "workflow": a.workflowOut(res.Workflow)})
	return nil
}

func (a *API) getWorkflowNode(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	wf, n, err := a.Workflows.GetNode(r.Context(), team.ID, r.PathValue("id"), r.PathValue("nodeId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mutationNode(n, wf))
	return nil
}

func (a *API) updateWorkflowNode(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	m, rev, err := revisedBody(r, "payload")
	if err != nil {
		return err
	}
	payload, err := optObject(m, "payload")
	if err != nil {
		return err
	}
	res, err := a.Workflows.UpdateNode(r.Context(), team.ID, r.PathValue("id"), r.PathValue("nodeId"), rev, payload)
	if err != nil {
		return err
	}
	a.writeNodeAndWorkflow(w, res)
	return nil
}

// writeNodeAndWorkflow writes the flat mutation node plus "workflow"
// (update and reroute responses).
func (a *API) writeNodeAndWorkflow(w http.ResponseWriter, res workflows.NodeResult) {
	out := mutationNode(res.Node, res.Workflow)
	out["workflow"] = a.workflowOut(res.Workflow)
	writeJSON(w, http.StatusOK, out)
}

func (a *API) deleteWorkflowNode(recursive bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
		m, err := contentBody(r, false, "expectedRevisionId", "dryRun", "queuedContactPolicy")
		if err != nil {
			return err
		}
		in := workflows.NodeDelete{Recursive: recursive}
		if in.ExpectedRevisionID, err = revision(m); err != nil {
			return err
		}
		if in.DryRun, err = optBool(m, "dryRun"); err != nil {
			return err
		}
		if in.Policy, err = optString(m, "queuedContactPolicy"); err != nil {
			return err
		}
		res, err := a.Workflows.DeleteNode(r.Context(), team.ID, r.PathValue("id"), r.PathValue("nodeId"), in)
		if err != nil {
			return err
		}
		out := map[string]any{"status": res.Status, "nodeIds": res.NodeIDs, "queuedContactCount": res.QueuedContactCount}
		if res.Workflow != nil {
			out["workflowRevisionId"], out["workflow"] = res.Workflow.RevisionID, a.workflowOut(res.Workflow)
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
}

func (a *API) addWorkflowBranch(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	_, rev, err := revisedBody(r)
	if err != nil {
		return err
	}
	res, err := a.Workflows.AddBranch(r.Context(), team.ID, r.PathValue("id"), r.PathValue("nodeId"), rev)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"node": mutationNode(res.Node, res.Workflow), "workflow": a.workflowOut(res.Workflow)})
	return nil
}

func (a *API) rerouteWorkflowNode(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	m, rev, err := revisedBody(r, "newTargetNodeId")
	if err != nil {
		return err
	}
	target, err := reqString(m, "newTargetNodeId")
	if err != nil {
		return err
	}
	res, err := a.Workflows.Reroute(r.Context(), team.ID, r.PathValue("id"), r.PathValue("nodeId"), target, rev)
	if err != nil {
		return err
	}
	a.writeNodeAndWorkflow(w, res)
	return nil
}

// setWorkflowStatus serves the Lasso extension endpoints (see the top of
// this file).
func (a *API) setWorkflowStatus(action string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
		keys := []string{}
		if action == "pause" {
			keys = append(keys, "queueing")
		}
		m, err := contentBody(r, true, keys...)
		if err != nil {
			return err
		}
		id := r.PathValue("id")
		var wf *workflows.Workflow
		switch action {
		case "start":
			wf, err = a.Workflows.SetStatus(r.Context(), team.ID, id, workflows.StatusSending)
		case "pause":
			var queueing bool
			if queueing, err = optBool(m, "queueing"); err != nil {
				return err
			}
			status := workflows.StatusPaused
			if queueing {
				status = workflows.StatusPausedAndQueueing
			}
			wf, err = a.Workflows.SetStatus(r.Context(), team.ID, id, status)
		case "resume":
			wf, err = a.Workflows.Resume(r.Context(), team.ID, id)
		}
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, a.workflowOut(wf))
		return nil
	}
}

// revisedBody decodes a body that must carry expectedRevisionId, plus the
// other allowed keys.
func revisedBody(r *http.Request, keys ...string) (map[string]any, *string, error) {
	m, err := contentBody(r, false, append([]string{"expectedRevisionId"}, keys...)...)
	if err != nil {
		return nil, nil, err
	}
	rev, err := revision(m)
	return m, rev, err
}
