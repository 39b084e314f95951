package dashboard

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/content"
	"github.com/lasso-mail/lasso/internal/workflows"
)

// Read views of what the API builds: transactional emails and workflows.
// Editing stays in the API for now; later issues deepen these pages.

const contentPerPage = 50

type transactionalsPage struct {
	Page
	List content.List[content.Transactional]
	Next string
	// NoDomain: the content API needs a sending domain first.
	NoDomain bool
}

// handleTransactionals handles "GET /transactional".
func (d *Dashboard) handleTransactionals(w http.ResponseWriter, r *http.Request, u *User) {
	data := &transactionalsPage{Page: d.page(r, "Transactional emails", "transactional")}
	ok, err := d.deps.Senders.HasDomain(r.Context(), u.TeamID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	if !ok {
		data.NoDomain = true
		d.render(w, r, http.StatusOK, "transactionals", data)
		return
	}
	list, err := d.deps.Content.Transactionals(r.Context(), u.TeamID, content.Page{PerPage: contentPerPage, Cursor: r.URL.Query().Get("after")}, false)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data.List, data.Next = list, list.NextCursor
	d.render(w, r, http.StatusOK, "transactionals", data)
}

type transactionalPage struct {
	Page
	Email     content.Transactional
	Published *content.Published
	Text      string
}

// handleTransactional handles "GET /transactional/{id}": the published
// version's envelope and its rendered HTML (in a sandboxed frame) and text.
func (d *Dashboard) handleTransactional(w http.ResponseWriter, r *http.Request, u *User) {
	ctx := r.Context()
	t, err := d.deps.Content.Transactional(ctx, u.TeamID, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, notFoundIfInvalid(err))
		return
	}
	data := &transactionalPage{Page: d.page(r, t.Name, "transactional"), Email: t}
	if t.PublishedMessageID != "" {
		pub, err := d.deps.Content.PublishedTransactional(ctx, u.TeamID, t.ID)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		data.Published = pub
		_, data.Text = pub.Template.Render(nil, &pub.Fallbacks)
	}
	d.render(w, r, http.StatusOK, "transactional", data)
}

// handleTransactionalHTML handles "GET /transactional/{id}/html": the
// published HTML with empty data variables (their fallbacks), served for a
// sandboxed frame with no script and no network access.
func (d *Dashboard) handleTransactionalHTML(w http.ResponseWriter, r *http.Request, u *User) {
	pub, err := d.deps.Content.PublishedTransactional(r.Context(), u.TeamID, r.PathValue("id"))
	if err != nil {
		d.notFound(w, r)
		return
	}
	html, _ := pub.Template.Render(nil, &pub.Fallbacks)
	w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(html))
}

// notFoundIfInvalid turns a malformed id (apperr.Invalid) into a 404.
func notFoundIfInvalid(err error) error {
	if msg, ok := apperr.Message(err); ok && errors.Is(err, apperr.Invalid) {
		return apperr.New(apperr.NotFound, "%s", msg)
	}
	return err
}

type workflowsPage struct {
	Page
	List content.List[workflows.Workflow]
	Next string
}

// handleWorkflows handles "GET /workflows".
func (d *Dashboard) handleWorkflows(w http.ResponseWriter, r *http.Request, u *User) {
	list, err := d.deps.Workflows.List(r.Context(), u.TeamID, content.Page{PerPage: contentPerPage, Cursor: r.URL.Query().Get("after")})
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "workflows", &workflowsPage{Page: d.page(r, "Workflows", "workflows"), List: list, Next: list.NextCursor})
}

// treeNode is one node of the workflow tree view.
type treeNode struct {
	ID, Type, Label, Detail string
	// Seen marks a node already shown higher up (a graph may join).
	Seen     bool
	Children []*treeNode
}

type workflowPage struct {
	Page
	Workflow *workflows.Workflow
	Root     *treeNode
	Orphans  []*treeNode
}

// handleWorkflow handles "GET /workflows/{id}": the workflow and its graph
// as a tree from the root node.
func (d *Dashboard) handleWorkflow(w http.ResponseWriter, r *http.Request, u *User) {
	wf, err := d.deps.Workflows.Load(r.Context(), d.deps.DB, u.TeamID, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, notFoundIfInvalid(err))
		return
	}
	data := &workflowPage{Page: d.page(r, wf.Name, "workflows"), Workflow: wf}
	seen := map[string]bool{}
	var build func(id string) *treeNode
	build = func(id string) *treeNode {
		n := wf.Nodes[id]
		if n == nil {
			return &treeNode{ID: id, Type: "missing", Label: "Missing node"}
		}
		t := &treeNode{ID: n.ID, Type: n.Type, Label: nodeLabel(n.Type), Detail: nodeDetail(n)}
		if seen[id] {
			t.Seen = true
			return t
		}
		seen[id] = true
		for _, c := range n.Next {
			t.Children = append(t.Children, build(c))
		}
		return t
	}
	if wf.RootNodeID != "" {
		data.Root = build(wf.RootNodeID)
	}
	for id := range wf.Nodes {
		if !seen[id] {
			data.Orphans = append(data.Orphans, build(id))
		}
	}
	d.render(w, r, http.StatusOK, "workflow", data)
}

func nodeLabel(typ string) string {
	switch typ {
	case workflows.TypeBlankTrigger:
		return "Trigger: manual"
	case workflows.TypeSignupTrigger:
		return "Trigger: contact added"
	case workflows.TypeContactPropertyTrigger:
		return "Trigger: contact property changes"
	case workflows.TypeAddToListTrigger:
		return "Trigger: added to list"
	case workflows.TypeEventTrigger:
		return "Trigger: event"
	case workflows.TypeAudienceFilter:
		return "Audience filter"
	case workflows.TypeTimer:
		return "Wait"
	case workflows.TypeSendEmail:
		return "Send email"
	case workflows.TypeExit:
		return "Exit"
	case workflows.TypeBranch:
		return "Branch"
	case workflows.TypeExperiment:
		return "Experiment"
	case workflows.TypeVariant:
		return "Variant"
	}
	return typ
}

func nodeDetail(n *workflows.Node) string {
	switch n.Type {
	case workflows.TypeTimer:
		if n.Amount == 0 {
			return "no delay"
		}
		unit := map[string]string{"m": "minute", "h": "hour", "d": "day"}[n.Unit]
		if unit == "" {
			unit = n.Unit
		}
		if n.Amount != 1 {
			unit += "s"
		}
		return fmt.Sprintf("%d %s", n.Amount, unit)
	case workflows.TypeSendEmail:
		if n.Subject != "" {
			return "“" + n.Subject + "”"
		}
		return "no subject yet"
	case workflows.TypeEventTrigger:
		if n.EventName != nil {
			return *n.EventName
		}
	case workflows.TypeContactPropertyTrigger:
		if n.ContactPropertyQuery != nil {
			return n.ContactPropertyQuery.Key
		}
	case workflows.TypeAddToListTrigger:
		if n.MailingListID != nil {
			return *n.MailingListID
		}
	case workflows.TypeExperiment:
		if n.SamplingRate > 0 {
			return fmt.Sprintf("%d%% to variants", n.SamplingRate)
		}
	case workflows.TypeVariant:
		if n.IsControl {
			return "control"
		}
	}
	return ""
}
