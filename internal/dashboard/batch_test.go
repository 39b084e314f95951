package dashboard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/testdb"
)

// TestUpsertBatch checks that the import's batch upsert keeps the rules of
// Update: per-row errors, updates of existing contacts, duplicates inside a
// batch, list subscriptions and the webhooks (only with an endpoint).
func TestUpsertBatch(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := start(t, dbURL, nil)
		ctx := context.Background()
		tm, err := e.app.Accounts.EnsureTeam(ctx, "Acme")
		if err != nil {
			t.Fatal(err)
		}
		cs := e.app.Contacts
		if err := cs.CreateProperty(ctx, tm.ID, "seats", contacts.TypeNumber); err != nil {
			t.Fatal(err)
		}
		list, _ := cs.CreateList(ctx, tm.ID, "News", "", false)
		if _, err := cs.Update(ctx, tm.ID, contacts.Upsert{Email: "old@example.com", Props: map[string]any{"firstName": "Old"}}); err != nil {
			t.Fatal(err)
		}
		events := func(name string) int {
			var n int
			if err := e.app.DB.QueryRow(ctx, `SELECT count(*) FROM webhook_messages WHERE team_id = $1 AND event_name = $2`, tm.ID, name).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		subs := map[string]bool{list.ID: true}
		ins := []contacts.Upsert{
			{Email: "A@Example.com", Props: map[string]any{"firstName": "Ann", "seats": json.Number("3")}, MailingLists: subs},
			{Email: "not-an-email"},
			{Email: "b@example.com", Props: map[string]any{"seats": "many"}},
			{Email: "old@example.com", Props: map[string]any{"lastName": "Timer"}, MailingLists: subs},
			{Email: "a@example.com", Props: map[string]any{"lastName": "Again"}},
			{Email: "c@example.com", MailingLists: map[string]bool{"nosuchlist": true}},
			{Email: "d@example.com", UserID: "u-d"},
		}
		res, err := cs.UpsertBatch(ctx, tm.ID, ins)
		if err != nil {
			t.Fatal(err)
		}
		wantCreated := []bool{true, false, false, false, false, false, true}
		wantErr := []bool{false, true, true, false, false, true, false}
		for i, r := range res {
			if r.Created != wantCreated[i] || (r.Err != nil) != wantErr[i] {
				t.Errorf("row %d: %+v", i, r)
			}
			if r.Err != nil {
				if _, ok := apperr.Message(r.Err); !ok {
					t.Errorf("row %d: not a person-readable error: %v", i, r.Err)
				}
			}
		}
		if res[0].ID != res[4].ID {
			t.Fatalf("the duplicate row did not update the contact created before it: %+v", res)
		}
		a, _ := cs.Find(ctx, tm.ID, contacts.Identity{Email: "a@example.com"})
		if a == nil || *a.FirstName != "Ann" || *a.LastName != "Again" || a.Custom["seats"] != float64(3) || len(a.MailingLists) != 1 {
			t.Fatalf("a@: %+v", a)
		}
		old, _ := cs.Find(ctx, tm.ID, contacts.Identity{Email: "old@example.com"})
		if old == nil || *old.FirstName != "Old" || *old.LastName != "Timer" || len(old.MailingLists) != 1 {
			t.Fatalf("old@: %+v", old)
		}
		for _, email := range []string{"b@example.com", "c@example.com"} {
			if c, _ := cs.Find(ctx, tm.ID, contacts.Identity{Email: email}); c != nil {
				t.Fatalf("refused row %s was written", email)
			}
		}
		if n, _ := cs.Count(ctx, tm.ID); n != 3 {
			t.Fatalf("%d contacts, want 3", n)
		}
		// No endpoint: nothing announced.
		if n := events("contact.created"); n != 0 {
			t.Fatalf("%d contact.created without an endpoint", n)
		}

		// With an endpoint: one contact.created per new contact, one
		// subscription event per new membership.
		if _, err := e.app.Webhooks.Set(ctx, tm.ID, "http://127.0.0.1:1/hook", nil); err != nil {
			t.Fatal(err)
		}
		res, err = cs.UpsertBatch(ctx, tm.ID, []contacts.Upsert{
			{Email: "e@example.com", MailingLists: subs},
			{Email: "f@example.com"},
			{Email: "a@example.com", Props: map[string]any{"firstName": "Anna"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if !res[0].Created || !res[1].Created || res[2].Created {
			t.Fatalf("results: %+v", res)
		}
		if c, s := events("contact.created"), events("contact.mailingList.subscribed"); c != 2 || s != 1 {
			t.Fatalf("contact.created %d, subscribed %d; want 2 and 1", c, s)
		}
		var payload string
		if err := e.app.DB.QueryRow(ctx, `SELECT payload FROM webhook_messages WHERE team_id = $1 AND event_name = 'contact.created' ORDER BY created_at, id LIMIT 1`, tm.ID).Scan(&payload); err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		_ = json.Unmarshal([]byte(payload), &body)
		if c, _ := body["contact"].(map[string]any); c == nil || c["email"] == nil {
			t.Fatalf("contact.created payload: %s", payload)
		}
	})
}
