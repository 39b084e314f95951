package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/lasso-mail/lasso/internal/content"
	"github.com/lasso-mail/lasso/internal/testdb"
	"github.com/lasso-mail/lasso/internal/workflows"
)

func sp(s string) *string { return &s }

func TestTransactionalAndWorkflowViews(t *testing.T) {
	e := start(t, testdb.URL(t, "sqlite"), nil)
	b := e.setup(t, "Acme", "owner@example.com")
	ctx := context.Background()
	tm, _ := e.app.Accounts.TeamByName(ctx, "Acme")

	// Empty states, linked from the nav.
	want(t, b.get("/"), 200, `href="/transactional"`, `href="/workflows"`)
	want(t, b.get("/transactional"), 200, "need a sending domain")
	want(t, b.get("/workflows"), 200, "No workflow yet")
	if _, err := e.app.Senders.Add(ctx, tm.ID, "acme.example", true); err != nil {
		t.Fatal(err)
	}
	want(t, b.get("/transactional"), 200, "No transactional email yet")

	if err := e.app.Content.Begin(ctx, tm.ID); err != nil {
		t.Fatal(err)
	}
	tx, err := e.app.Content.CreateTransactional(ctx, tm.ID, "Welcome <new>", nil)
	if err != nil {
		t.Fatal(err)
	}
	draft, err := e.app.Content.CreateTransactional(ctx, tm.ID, "Never published", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.app.Content.UpdateMessage(ctx, tm.ID, tx.DraftMessageID, content.MessageUpdate{ExpectedRevisionID: sp(tx.DraftRevisionID),
		Subject: sp("Hello {data.name}"), FromName: sp("Acme"), LMX: sp(`<H1>Hi {data.name}</H1><Paragraph>Your code is {data.code}.</Paragraph>`),
		DataFallbacks: map[string]*string{"name": sp("friend")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.app.Content.Publish(ctx, tm.ID, tx.ID); err != nil {
		t.Fatal(err)
	}

	p := b.get("/transactional")
	want(t, p, 200, "/transactional/"+tx.ID, "Welcome &lt;new&gt;", "published", "Never published", "draft only", "<code>code</code>")
	p = b.get("/transactional/" + tx.ID)
	want(t, p, 200, "Hello {data.name}", `src="/transactional/`+tx.ID+`/html" sandbox`, "Hi friend")
	p = b.get("/transactional/" + tx.ID + "/html")
	want(t, p, 200, "Hi friend", "Your code is")
	resp, err := b.c.Get(e.url + "/transactional/" + tx.ID + "/html")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox") {
		t.Fatalf("html frame CSP %q", csp)
	}
	want(t, b.get("/transactional/"+draft.ID), 200, "no published version")
	want(t, b.get("/transactional/"+draft.ID+"/html"), 404)
	want(t, b.get("/transactional/nope"), 404)

	wf, err := e.app.Workflows.Create(ctx, tm.ID, workflows.CreateInput{Name: "Onboarding", Description: sp("Welcome series")})
	if err != nil {
		t.Fatal(err)
	}
	want(t, b.get("/workflows"), 200, "/workflows/"+wf.ID, "Onboarding", `<span class="badge wait">Draft</span>`)
	p = b.get("/workflows/" + wf.ID)
	want(t, p, 200, "Welcome series", `id="workflow-tree"`, "Trigger: manual", "Exit", `data-node-id="`+wf.RootNodeID+`"`)
	if i, j := strings.Index(p.body, "Trigger: manual"), strings.Index(p.body, ">Exit<"); i < 0 || j < i {
		t.Fatalf("tree order: trigger at %d, exit at %d", i, j)
	}
	want(t, b.get("/workflows/nope"), 404)

	// Another team sees none of it.
	other, _ := e.userIn(t, "Other", "other@example.com")
	want(t, other.get("/transactional/"+tx.ID), 404)
	want(t, other.get("/transactional/"+tx.ID+"/html"), 404)
	want(t, other.get("/workflows/"+wf.ID), 404)
	if p := other.get("/workflows"); strings.Contains(p.body, wf.ID) || p.status != http.StatusOK {
		t.Fatalf("other team's workflows: %d %s", p.status, p.body)
	}
}
