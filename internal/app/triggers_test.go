package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/testclock"
	"github.com/lasso-mail/lasso/internal/testdb"
	"github.com/lasso-mail/lasso/internal/workflows"
)

// triggerWorkflow makes a workflow "trigger → email → exit" with the given
// trigger payload and starts it.
func triggerWorkflow(t *testing.T, s *server, name string, body map[string]any, trigger map[string]any) *wfClient {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	body["name"] = name
	r := s.do(t, "POST", "/api/v1/workflows", js(t, body))
	expect(t, r, 200, `"status":"Draft"`)
	c := &wfClient{t: t, s: s, wf: r.obj(t)}
	c.id = c.wf["id"].(string)
	root := c.root()
	c.call("POST", "/nodes/"+root, map[string]any{"payload": trigger}, 200)
	email := c.insert("between", "SendEmailAction", root, c.next(root)[0])
	mid := email["emailMessageId"].(string)
	msg := s.do(t, "GET", "/api/v1/email-messages/"+mid, "")
	expect(t, msg, 200)
	expect(t, s.do(t, "POST", "/api/v1/email-messages/"+mid, js(t, map[string]any{
		"expectedRevisionId": msg.obj(t)["contentRevisionId"], "subject": name + " for {contact.email}", "fromName": "Acme", "fromEmail": "hello",
		"lmx": "<Paragraph>Hello from " + name + "</Paragraph>"})), 200)
	expect(t, s.do(t, "POST", "/api/lasso/workflows/"+c.id+"/start", ""), 200, `"status":"Sending"`)
	return c
}

// changesIdle waits until every contact_changed and events_recorded job
// has been worked.
func changesIdle(t *testing.T, s *server) {
	t.Helper()
	eventsIdle(t, s)
	deadline := time.Now().Add(15 * time.Second)
	for {
		var n int
		if err := s.app.DB.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'contact_changed' AND state <> 'completed'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d contact_changed jobs still pending", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func contactID(t *testing.T, s *server, email string) string {
	t.Helper()
	found := s.do(t, "GET", "/api/v1/contacts/find?email="+email, "")
	expect(t, found, 200)
	return found.body.([]any)[0].(map[string]any)["id"].(string)
}

func runCount(t *testing.T, s *server, wfID, contactID string) int {
	t.Helper()
	rs, err := s.app.Engine.Runs(context.Background(), wfID, contactID)
	if err != nil {
		t.Fatal(err)
	}
	return len(rs)
}

func TestContactAddedTrigger(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		clock := testclock.New(time.Now().UTC())
		s, sink := engineServer(t, url, clock)
		c := triggerWorkflow(t, s, "Welcome", nil, map[string]any{"typeName": "SignupTrigger"})

		// Created through the API.
		expect(t, s.do(t, "POST", "/api/v1/contacts/create", `{"email":"ann@example.org"}`), 200)
		if m := sink.WaitMessages(t, 1, 15*time.Second)[0]; m.To[0] != "ann@example.org" {
			t.Fatalf("email to %v", m.To)
		}
		// Created by an event.
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"visit","email":"bob@example.org"}`), 200)
		if m := sink.WaitMessages(t, 2, 15*time.Second)[1]; m.To[0] != "bob@example.org" {
			t.Fatalf("email to %v", m.To)
		}
		waitRuns(t, s, c.id, "", "done", allDone(2))

		// Updating an existing contact adds nobody.
		expect(t, s.do(t, "PUT", "/api/v1/contacts/update", `{"email":"ann@example.org","firstName":"Ann"}`), 200)
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"visit","email":"bob@example.org"}`), 200)
		changesIdle(t, s)
		time.Sleep(200 * time.Millisecond)
		if n := runCount(t, s, c.id, ""); n != 2 {
			t.Fatalf("%d runs, want 2", n)
		}
		if n := len(sink.Messages()); n != 2 {
			t.Fatalf("%d emails, want 2", n)
		}

		// An import made without "trigger workflows" starts nothing.
		res, err := s.app.Contacts.UpsertBatch(context.Background(), s.team, []contacts.Upsert{
			{Email: "quiet@example.org", NoTriggers: true}, {Email: "loud@example.org"}})
		if err != nil || res[0].Err != nil || res[1].Err != nil {
			t.Fatal(err, res)
		}
		changesIdle(t, s)
		waitRuns(t, s, c.id, "", "three runs", func(rs []*workflows.Run) bool { return len(rs) == 3 })
		if n := runCount(t, s, c.id, res[0].ID); n != 0 {
			t.Fatalf("%d runs for a contact imported without triggers", n)
		}
	})
}

func TestContactPropertyTrigger(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		clock := testclock.New(time.Now().UTC())
		s, sink := engineServer(t, url, clock)
		ctx := context.Background()
		expect(t, s.do(t, "POST", "/api/v1/contacts/properties", `{"name":"plan","type":"string"}`), 200)
		c := triggerWorkflow(t, s, "Upgraded", nil, map[string]any{"typeName": "ContactPropertyTrigger",
			"contactPropertyQuery": map[string]any{"key": "plan",
				"was": map[string]any{"value": "free", "operator": "equal"},
				"is":  map[string]any{"value": "pro", "operator": "equal"}}})

		expect(t, s.do(t, "POST", "/api/v1/contacts/create", `{"email":"ann@example.org","plan":"free"}`), 200)
		expect(t, s.do(t, "POST", "/api/v1/contacts/create", `{"email":"bob@example.org","plan":"basic"}`), 200)
		expect(t, s.do(t, "POST", "/api/v1/contacts/create", `{"email":"cy@example.org","plan":"pro"}`), 200)
		ann, bob := contactID(t, s, "ann%40example.org"), contactID(t, s, "bob%40example.org")
		// Non-matching transitions: basic → pro (was), free → basic (is), no change.
		expect(t, s.do(t, "PUT", "/api/v1/contacts/update", `{"email":"bob@example.org","plan":"pro"}`), 200)
		expect(t, s.do(t, "PUT", "/api/v1/contacts/update", `{"email":"ann@example.org","firstName":"Ann"}`), 200)
		expect(t, s.do(t, "PUT", "/api/v1/contacts/update", `{"email":"cy@example.org","plan":"pro"}`), 200)
		changesIdle(t, s)
		if n := runCount(t, s, c.id, ""); n != 0 {
			t.Fatalf("%d runs before the matching transition", n)
		}
		// The matching one: free → pro.
		expect(t, s.do(t, "PUT", "/api/v1/contacts/update", `{"email":"ann@example.org","plan":"pro"}`), 200)
		if m := sink.WaitMessages(t, 1, 15*time.Second)[0]; m.To[0] != "ann@example.org" {
			t.Fatalf("email to %v", m.To)
		}
		waitRuns(t, s, c.id, ann, "done", allDone(1))

		// The same job worked twice starts one run, reEligible or not.
		expect(t, s.do(t, "POST", "/api/lasso/workflows/"+c.id+"/pause", ""), 200)
		r := s.do(t, "GET", "/api/v1/workflows/"+c.id, "")
		expect(t, r, 200)
		c.wf = r.obj(t)
		c.call("POST", "/nodes/"+c.root(), map[string]any{"payload": map[string]any{"reEligible": true}}, 200)
		expect(t, s.do(t, "POST", "/api/lasso/workflows/"+c.id+"/resume", ""), 200)
		ch := workflows.ContactChange{ID: "change-1", Change: contacts.Change{TeamID: s.team, ContactID: bob,
			Props: map[string][2]any{"plan": {"free", "pro"}}, Types: map[string]string{"plan": "string"}}}
		for range 2 {
			if err := s.app.Engine.ContactsChanged(ctx, []workflows.ContactChange{ch}); err != nil {
				t.Fatal(err)
			}
		}
		waitRuns(t, s, c.id, bob, "one run for Bob", allDone(1))
		// Ann re-enters on a new matching transition (reEligible).
		expect(t, s.do(t, "PUT", "/api/v1/contacts/update", `{"email":"ann@example.org","plan":"free"}`), 200)
		expect(t, s.do(t, "PUT", "/api/v1/contacts/update", `{"email":"ann@example.org","plan":"pro"}`), 200)
		waitRuns(t, s, c.id, ann, "two runs for Ann", allDone(2))
		sink.WaitMessages(t, 3, 15*time.Second)
		changesIdle(t, s)
		time.Sleep(200 * time.Millisecond)
		if n := len(sink.Messages()); n != 3 {
			t.Fatalf("%d emails, want 3", n)
		}
	})
}

func TestAddedToListTrigger(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		clock := testclock.New(time.Now().UTC())
		s, sink := engineServer(t, url, clock)
		ctx := context.Background()
		news, err := s.app.Contacts.CreateList(ctx, s.team, "News", "", true)
		if err != nil {
			t.Fatal(err)
		}
		other, err := s.app.Contacts.CreateList(ctx, s.team, "Other", "", true)
		if err != nil {
			t.Fatal(err)
		}
		c := triggerWorkflow(t, s, "Joined", map[string]any{"mailingListId": news.ID}, map[string]any{"typeName": "AddToListTrigger"})

		expect(t, s.do(t, "POST", "/api/v1/contacts/create", `{"email":"ann@example.org"}`), 200)
		expect(t, s.do(t, "PUT", "/api/v1/contacts/update", `{"email":"ann@example.org","mailingLists":{"`+other.ID+`":true}}`), 200)
		changesIdle(t, s)
		if n := runCount(t, s, c.id, ""); n != 0 {
			t.Fatalf("%d runs before joining the list", n)
		}
		expect(t, s.do(t, "PUT", "/api/v1/contacts/update", `{"email":"ann@example.org","mailingLists":{"`+news.ID+`":true}}`), 200)
		if m := sink.WaitMessages(t, 1, 15*time.Second)[0]; m.To[0] != "ann@example.org" {
			t.Fatalf("email to %v", m.To)
		}
		// A contact created on the list enters too.
		expect(t, s.do(t, "POST", "/api/v1/contacts/create", `{"email":"bob@example.org","mailingLists":{"`+news.ID+`":true}}`), 200)
		if m := sink.WaitMessages(t, 2, 15*time.Second)[1]; m.To[0] != "bob@example.org" {
			t.Fatalf("email to %v", m.To)
		}
		waitRuns(t, s, c.id, "", "done", allDone(2))
	})
}
