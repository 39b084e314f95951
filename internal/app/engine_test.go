package app_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/app"
	"github.com/lasso-mail/lasso/internal/content"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/delivery/deliverytest"
	"github.com/lasso-mail/lasso/internal/events"
	"github.com/lasso-mail/lasso/internal/lmx"
	"github.com/lasso-mail/lasso/internal/testclock"
	"github.com/lasso-mail/lasso/internal/testdb"
	"github.com/lasso-mail/lasso/internal/workflows"
)

// engineServer is relayServer with a clock the test controls and workflow
// timers that re-check it every 50 ms.
func engineServer(t *testing.T, url string, clock *testclock.Clock) (*server, *deliverytest.Sink) {
	t.Helper()
	sink := deliverytest.NewSink(t)
	s := start(t, url, func(c *app.Config) {
		c.SMTPRelay = "smtp://" + sink.Addr + "?tls=none"
		c.Hostname = "mta.lasso.test"
		c.Now = clock.Now
		c.WorkflowTimerPoll = 50 * time.Millisecond
	})
	dom, err := s.app.Senders.Add(context.Background(), s.team, "example.com", true)
	if err != nil {
		t.Fatal(err)
	}
	publishDKIM(t, s, deliverytest.NewDNS(t), dom)
	return s, sink
}

// waitRuns polls the workflow's runs until ok accepts them.
func waitRuns(t *testing.T, s *server, wfID, contactID string, what string, ok func([]*workflows.Run) bool) []*workflows.Run {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		runs, err := s.app.Engine.Runs(context.Background(), wfID, contactID)
		if err != nil {
			t.Fatal(err)
		}
		if ok(runs) {
			return runs
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, r := range runs {
				b.WriteString(r.ContactID + " " + r.Status + " at " + r.NodeID + "; ")
			}
			t.Fatalf("runs never became %s: %s", what, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eventsIdle waits until every events_recorded job has been worked.
func eventsIdle(t *testing.T, s *server) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var n int
		if err := s.app.DB.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'events_recorded' AND state <> 'completed'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events_recorded jobs still pending", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func allWaiting(n int) func([]*workflows.Run) bool {
	return func(rs []*workflows.Run) bool {
		if len(rs) != n {
			return false
		}
		for _, r := range rs {
			if r.Status != workflows.RunQueued || r.DueAt == nil {
				return false
			}
		}
		return true
	}
}

func allDone(n int) func([]*workflows.Run) bool {
	return func(rs []*workflows.Run) bool {
		if len(rs) != n {
			return false
		}
		for _, r := range rs {
			if r.Status == workflows.RunQueued {
				return false
			}
		}
		return true
	}
}

func TestWorkflowEngineEndToEnd(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		clock := testclock.New(time.Now().UTC())
		s, sink := engineServer(t, url, clock)
		ctx := context.Background()
		expect(t, s.do(t, "POST", "/api/v1/contacts/properties", `{"name":"country","type":"string"}`), 200)

		// EventTrigger "signup" → Timer 10 m → Branch [country = FR → Email → Exit | default → Exit].
		c := newWorkflow(t, s, "Onboarding")
		root := c.root()
		c.call("POST", "/nodes/"+root, map[string]any{"payload": map[string]any{"typeName": "EventTrigger", "eventName": "signup"}}, 200)
		tid := c.insert("after", "TimerAction", root)["id"].(string)
		c.call("POST", "/nodes/"+tid, map[string]any{"payload": map[string]any{"amount": 10, "unit": "m"}}, 200)
		bid := c.call("POST", "/nodes", map[string]any{"insertMode": "after", "nodeTypeName": "BranchNode", "fromNodeId": tid}, 200)["node"].(map[string]any)["id"].(string)
		left := c.next(bid)[0]
		c.call("POST", "/nodes/"+left, map[string]any{"payload": map[string]any{"audienceFilter": map[string]any{"match": "all",
			"conditions": []any{map[string]any{"type": "property", "key": "country", "operator": "equals", "value": "FR"}}}}}, 200)
		email := c.insert("between", "SendEmailAction", left, c.next(left)[0])
		mid := email["emailMessageId"].(string)
		msg := s.do(t, "GET", "/api/v1/email-messages/"+mid, "")
		expect(t, msg, 200)
		expect(t, s.do(t, "POST", "/api/v1/email-messages/"+mid, js(t, map[string]any{
			"expectedRevisionId": msg.obj(t)["contentRevisionId"], "subject": "Welcome {contact.firstName}", "fromName": "Acme", "fromEmail": "hello",
			"lmx":                      "<Paragraph>Hi {contact.firstName}, your plan is {event.plan}. Team: {event.team}</Paragraph>",
			"eventPropertiesFallbacks": map[string]any{"team": "none"}})), 200)
		expect(t, s.do(t, "POST", "/api/lasso/workflows/"+c.id+"/start", ""), 200, `"status":"Sending"`)

		// Ann goes left (email), Bob right (nothing); both wait on the timer first.
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"signup","email":"ann@example.org","firstName":"Ann","country":"FR","eventProperties":{"plan":"pro"}}`), 200)
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"signup","email":"bob@example.org","firstName":"Bob","country":"DE","eventProperties":{"plan":"free"}}`), 200)
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"other","email":"cy@example.org"}`), 200)
		waitRuns(t, s, c.id, "", "two waiting runs", allWaiting(2))
		expect(t, s.do(t, "GET", "/api/v1/workflows/"+c.id, ""), 200)
		time.Sleep(200 * time.Millisecond)
		if n := len(sink.Messages()); n != 0 {
			t.Fatalf("%d emails before the timer ended", n)
		}

		clock.Advance(11 * time.Minute)
		m := sink.WaitMessages(t, 1, 15*time.Second)[0]
		if m.To[0] != "ann@example.org" {
			t.Fatalf("email to %v", m.To)
		}
		parsed, err := mail.ReadMessage(bytes.NewReader(m.Data))
		if err != nil {
			t.Fatal(err)
		}
		if subj, _ := new(mime.WordDecoder).DecodeHeader(parsed.Header.Get("Subject")); subj != "Welcome Ann" {
			t.Fatalf("subject %q", subj)
		}
		html, text, _ := parts(t, parsed)
		for _, body := range []string{html, text} {
			if !strings.Contains(body, "Hi Ann, your plan is pro. Team: none") {
				t.Fatalf("variables not filled in: %.400s", body)
			}
		}
		found := s.do(t, "GET", "/api/v1/contacts/find?email=ann%40example.org", "")
		expect(t, found, 200)
		annID := found.body.([]any)[0].(map[string]any)["id"].(string)
		runs := waitRuns(t, s, c.id, "", "done", allDone(2))
		var annRun *workflows.Run
		for _, r := range runs {
			sent := false
			for _, h := range r.History {
				sent = sent || h.Result == workflows.StepSent
			}
			if r.Status != workflows.RunCompleted || sent != (r.ContactID == annID) {
				t.Fatalf("run %s %s history %+v", r.ContactID, r.Status, r.History)
			}
			if r.ContactID == annID {
				annRun = r
			}
		}

		// Once per contact without reEligible, even if the job runs again.
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"signup","email":"ann@example.org","eventProperties":{"plan":"max"}}`), 200)
		eventsIdle(t, s)
		if err := s.app.Engine.Trigger(ctx, []events.Recorded{{EventID: annRun.EventID, TeamID: s.team, ContactID: annID, Name: "signup"}}); err != nil {
			t.Fatal(err)
		}
		if rs, _ := s.app.Engine.Runs(ctx, c.id, annID); len(rs) != 1 {
			t.Fatalf("%d runs for Ann without reEligible", len(rs))
		}

		// reEligible: Ann enters again, once per event.
		expect(t, s.do(t, "POST", "/api/lasso/workflows/"+c.id+"/pause", ""), 200)
		r := s.do(t, "GET", "/api/v1/workflows/"+c.id, "")
		expect(t, r, 200)
		c.wf = r.obj(t)
		c.call("POST", "/nodes/"+root, map[string]any{"payload": map[string]any{"reEligible": true}}, 200)
		expect(t, s.do(t, "POST", "/api/lasso/workflows/"+c.id+"/resume", ""), 200)
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"signup","email":"ann@example.org","eventProperties":{"plan":"max"}}`), 200)
		again := waitRuns(t, s, c.id, annID, "two runs for Ann", func(rs []*workflows.Run) bool { return len(rs) == 2 && rs[1].DueAt != nil })
		for range 2 {
			if err := s.app.Engine.Trigger(ctx, []events.Recorded{{EventID: again[1].EventID, TeamID: s.team, ContactID: annID, Name: "signup"}}); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(11 * time.Minute)
		m = sink.WaitMessages(t, 2, 15*time.Second)[1]
		if !bytes.Contains(m.Data, []byte("your plan is max")) {
			t.Fatalf("second email: %.600s", m.Data)
		}
		waitRuns(t, s, c.id, "", "done", allDone(3))
		time.Sleep(200 * time.Millisecond)
		if n := len(sink.Messages()); n != 2 {
			t.Fatalf("%d emails, want 2", n)
		}
		var queued int
		if err := s.app.DB.QueryRow(ctx, `SELECT count(*) FROM sends WHERE source_type = 'loop' AND source_id = $1`, c.id).Scan(&queued); err != nil || queued != 2 {
			t.Fatalf("%d loop sends (%v)", queued, err)
		}
	})
}

// timerWorkflow builds and starts EventTrigger event → Timer 1 h → Email →
// Exit, the email saying "{event.code} for {contact.firstName}".
func timerWorkflow(t *testing.T, s *server, event string) *wfClient {
	t.Helper()
	c := newWorkflow(t, s, "Timer "+event)
	root := c.root()
	c.call("POST", "/nodes/"+root, map[string]any{"payload": map[string]any{"typeName": "EventTrigger", "eventName": event}}, 200)
	tid := c.insert("after", "TimerAction", root)["id"].(string)
	c.call("POST", "/nodes/"+tid, map[string]any{"payload": map[string]any{"amount": 1, "unit": "h"}}, 200)
	mid := c.insert("after", "SendEmailAction", tid)["emailMessageId"].(string)
	msg := s.do(t, "GET", "/api/v1/email-messages/"+mid, "")
	expect(t, msg, 200)
	expect(t, s.do(t, "POST", "/api/v1/email-messages/"+mid, js(t, map[string]any{
		"expectedRevisionId": msg.obj(t)["contentRevisionId"], "subject": "Code {event.code}", "fromName": "Acme", "fromEmail": "hello",
		"lmx": "<Paragraph>{event.code} for {contact.firstName}</Paragraph>"})), 200)
	expect(t, s.do(t, "POST", "/api/lasso/workflows/"+c.id+"/start", ""), 200, `"status":"Sending"`)
	return c
}

// A run waiting on a timer survives a restart of the server: the timer is
// a durable scheduled job, and the run's state is in the database.
func TestWorkflowTimerSurvivesRestart(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		clock := testclock.New(time.Now().UTC())
		s, sink := engineServer(t, url, clock)
		c := timerWorkflow(t, s, "trial")
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"trial","email":"ann@example.org","firstName":"Ann","eventProperties":{"code":"X42"}}`), 200)
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"trial","email":"bob@example.org","firstName":"Bob","eventProperties":{"code":"Y7"}}`), 200)
		waitRuns(t, s, c.id, "", "two waiting runs", allWaiting(2))

		// Half-way through the timer the process goes away.
		clock.Advance(30 * time.Minute)
		s.stop()
		if n := len(sink.Messages()); n != 0 {
			t.Fatalf("%d emails before the timer ended", n)
		}

		s2 := start(t, url, func(cfg *app.Config) {
			cfg.SMTPRelay = "smtp://" + sink.Addr + "?tls=none"
			cfg.Hostname = "mta.lasso.test"
			cfg.Now = clock.Now
			cfg.WorkflowTimerPoll = 50 * time.Millisecond
		})
		time.Sleep(300 * time.Millisecond) // the jobs run and snooze: the timer has 30 min to go
		if n := len(sink.Messages()); n != 0 {
			t.Fatalf("%d emails after the restart, before the timer ended", n)
		}
		if rs := waitRuns(t, s2, c.id, "", "still waiting", allWaiting(2)); rs[0].DueAt == nil {
			t.Fatal("no due time")
		}
		clock.Advance(31 * time.Minute)
		msgs := sink.WaitMessages(t, 2, 15*time.Second)
		got := map[string]string{}
		for _, m := range msgs {
			got[m.To[0]] = string(m.Data)
		}
		for to, want := range map[string]string{"ann@example.org": "X42 for Ann", "bob@example.org": "Y7 for Bob"} {
			if !strings.Contains(got[to], want) {
				t.Fatalf("email to %s lacks %q: %.500s", to, want, got[to])
			}
		}
		waitRuns(t, s2, c.id, "", "completed", func(rs []*workflows.Run) bool {
			return len(rs) == 2 && rs[0].Status == workflows.RunCompleted && rs[1].Status == workflows.RunCompleted
		})
		time.Sleep(200 * time.Millisecond)
		if n := len(sink.Messages()); n != 2 {
			t.Fatalf("%d emails, want exactly 2", n)
		}
	})
}

// A contact deleted while it waits leaves the workflow at the timer's end
// instead of failing the step for ever.
func TestWorkflowContactDeletedMidRun(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		clock := testclock.New(time.Now().UTC())
		s, sink := engineServer(t, url, clock)
		c := timerWorkflow(t, s, "trial")
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"trial","email":"gone@example.org","eventProperties":{"code":"Z"}}`), 200)
		waitRuns(t, s, c.id, "", "one waiting run", allWaiting(1))
		expect(t, s.do(t, "POST", "/api/v1/contacts/delete", `{"email":"gone@example.org"}`), 200)
		clock.Advance(2 * time.Hour)
		rs := waitRuns(t, s, c.id, "", "exited", func(rs []*workflows.Run) bool { return len(rs) == 1 && rs[0].Status != workflows.RunQueued })
		last := rs[0].History[len(rs[0].History)-1]
		if rs[0].Status != workflows.RunExited || last.Detail != "contact deleted" {
			t.Fatalf("run %s, last step %+v", rs[0].Status, last)
		}
		if n := len(sink.Messages()); n != 0 {
			t.Fatalf("%d emails to a deleted contact", n)
		}
	})
}

// A workflow email is compiled once and reused while nothing it is built
// from changes; a component or theme edit reaches the next send, even at
// the same millisecond (the clock here never moves).
func TestWorkflowMessageFollowsLibrary(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		clock := testclock.New(time.Now().UTC())
		s, _ := engineServer(t, url, clock)
		ctx := context.Background()
		comp := s.do(t, "POST", "/api/v1/components", `{"name":"Sig","lmx":"<Paragraph>Sig one</Paragraph>"}`)
		expect(t, comp, 201)
		compID := comp.obj(t)["id"].(string)
		c := newWorkflow(t, s, "Lib")
		mid := c.insert("after", "SendEmailAction", c.root())["emailMessageId"].(string)
		msg := s.do(t, "GET", "/api/v1/email-messages/"+mid, "")
		expect(t, s.do(t, "POST", "/api/v1/email-messages/"+mid, js(t, map[string]any{
			"expectedRevisionId": msg.obj(t)["contentRevisionId"], "subject": "S", "fromName": "Acme", "fromEmail": "hello",
			"lmx": `<Paragraph>Hi</Paragraph><Component componentId="` + compID + `"/>`})), 200)
		html := func() (string, *content.Published) {
			t.Helper()
			p, err := s.app.Content.WorkflowMessage(ctx, s.team, mid)
			if err != nil {
				t.Fatal(err)
			}
			h, _ := p.Template.Render(&lmx.Values{}, &p.Fallbacks)
			return h, p
		}
		h1, p1 := html()
		if _, again := html(); again != p1 {
			t.Fatal("unchanged message compiled again")
		}
		if !strings.Contains(h1, "Sig one") {
			t.Fatalf("component missing: %.300s", h1)
		}
		expect(t, s.do(t, "POST", "/api/v1/components/"+compID, `{"lmx":"<Paragraph>Sig two</Paragraph>"}`), 200)
		if h, _ := html(); !strings.Contains(h, "Sig two") {
			t.Fatalf("component edit not in the next send: %.300s", h)
		}
		themes := s.do(t, "GET", "/api/v1/themes", "")
		expect(t, themes, 200)
		def := themes.obj(t)["data"].([]any)[0].(map[string]any)["id"].(string)
		expect(t, s.do(t, "POST", "/api/v1/themes/"+def, `{"styles":{"backgroundColor":"#123456"}}`), 200)
		if h, _ := html(); !strings.Contains(strings.ToLower(h), "#123456") {
			t.Fatalf("theme edit not in the next send: %.300s", h)
		}
	})
}

// liveStepJobs counts the workflow_step jobs that are not finished.
func liveStepJobs(t *testing.T, s *server) int {
	t.Helper()
	var n int
	if err := s.app.DB.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'workflow_step' AND state NOT IN ('completed', 'cancelled', 'discarded')`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Pausing holds contacts where they are, without live jobs: a timer that
// ends during the pause sends nothing, PausedAndQueueing admits new
// contacts without moving them, and resuming moves every held contact on.
func TestWorkflowPauseHoldsContacts(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		clock := testclock.New(time.Now().UTC())
		s, sink := engineServer(t, url, clock)
		c := timerWorkflow(t, s, "trial")
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"trial","email":"ann@example.org","firstName":"Ann","eventProperties":{"code":"A"}}`), 200)
		waitRuns(t, s, c.id, "", "one waiting run", allWaiting(1))

		expect(t, s.do(t, "POST", "/api/lasso/workflows/"+c.id+"/pause", `{"queueing":true}`), 200, `"status":"PausedAndQueueing"`)
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"trial","email":"bob@example.org","firstName":"Bob","eventProperties":{"code":"B"}}`), 200)
		eventsIdle(t, s)
		clock.Advance(2 * time.Hour) // Ann's timer ends while paused
		runs := waitRuns(t, s, c.id, "", "two held runs", func(rs []*workflows.Run) bool { return len(rs) == 2 })
		deadline := time.Now().Add(10 * time.Second)
		for liveStepJobs(t, s) > 0 { // Ann's job wakes, sees the pause and ends
			if time.Now().After(deadline) {
				t.Fatalf("%d step jobs still live during the pause", liveStepJobs(t, s))
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		if n := len(sink.Messages()); n != 0 {
			t.Fatalf("%d emails during the pause", n)
		}
		runs, _ = s.app.Engine.Runs(context.Background(), c.id, "")
		for _, r := range runs {
			if r.Status != workflows.RunQueued {
				t.Fatalf("run %s moved during the pause: %s", r.ContactID, r.Status)
			}
		}

		// Resume: Ann's timer is over, she gets her email; Bob starts his wait.
		expect(t, s.do(t, "POST", "/api/lasso/workflows/"+c.id+"/resume", ""), 200, `"status":"Sending"`)
		m := sink.WaitMessages(t, 1, 15*time.Second)[0]
		if m.To[0] != "ann@example.org" {
			t.Fatalf("first email to %v", m.To)
		}
		waitRuns(t, s, c.id, "", "Ann done, Bob waiting", func(rs []*workflows.Run) bool {
			done, waiting := 0, 0
			for _, r := range rs {
				if r.Status == workflows.RunCompleted {
					done++
				} else if r.DueAt != nil {
					waiting++
				}
			}
			return done == 1 && waiting == 1
		})
		clock.Advance(2 * time.Hour)
		msgs := sink.WaitMessages(t, 2, 15*time.Second)
		if msgs[1].To[0] != "bob@example.org" || !bytes.Contains(msgs[1].Data, []byte("B for Bob")) {
			t.Fatalf("second email to %v: %.300s", msgs[1].To, msgs[1].Data)
		}
		waitRuns(t, s, c.id, "", "done", allDone(2))
	})
}

// Resuming a workflow that holds more contacts than one rearm batch gives
// every held run exactly one live job: runs admitted while
// PausedAndQueueing start their wait, in several transactions.
func TestWorkflowResumeManyHeld(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		clock := testclock.New(time.Now().UTC())
		s, _ := engineServer(t, url, clock)
		c := timerWorkflow(t, s, "trial")
		expect(t, s.do(t, "POST", "/api/lasso/workflows/"+c.id+"/pause", `{"queueing":true}`), 200, `"status":"PausedAndQueueing"`)
		const held = 1100 // more than two batches of workflows.rearmBatch
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < held; i += 16 {
					if r := s.do(t, "POST", "/api/v1/events/send", fmt.Sprintf(`{"eventName":"trial","email":"c%d@example.org","eventProperties":{"code":"x"}}`, i)); r.status != 200 {
						t.Errorf("event %d: %d %s", i, r.status, r.raw)
					}
				}
			}()
		}
		wg.Wait()
		eventsIdle(t, s)
		waitRuns(t, s, c.id, "", "held runs", func(rs []*workflows.Run) bool { return len(rs) == held })
		if n := liveStepJobs(t, s); n != 0 {
			t.Fatalf("%d step jobs while paused", n)
		}

		expect(t, s.do(t, "POST", "/api/lasso/workflows/"+c.id+"/resume", ""), 200, `"status":"Sending"`)
		waitRuns(t, s, c.id, "", "every held run waiting on its timer", allWaiting(held))
		deadline := time.Now().Add(15 * time.Second)
		for liveStepJobs(t, s) != held {
			if time.Now().After(deadline) {
				t.Fatalf("%d live step jobs for %d runs", liveStepJobs(t, s), held)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// The runs were released by rearm jobs of 500 runs each (the resume
		// itself inserted one job, not a job per run).
		var rearms int
		if err := s.app.DB.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'workflow_rearm' AND state = 'completed'`).Scan(&rearms); err != nil || rearms != 3 {
			t.Fatalf("%d completed rearm jobs, want 3 (1,100 runs in batches of 500): %v", rearms, err)
		}
	})
}

// Workflow mail leaves only from a verified sending domain, as
// transactional mail does: a domain that lost its verification fails the
// send instead of delivering it.
func TestWorkflowSendNeedsVerifiedDomain(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		clock := testclock.New(time.Now().UTC())
		s, sink := engineServer(t, url, clock)
		ctx := context.Background()
		c := timerWorkflow(t, s, "trial")
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"trial","email":"ann@example.org","firstName":"Ann","eventProperties":{"code":"A"}}`), 200)
		waitRuns(t, s, c.id, "", "one waiting run", allWaiting(1))
		if _, err := s.app.DB.Exec(ctx, `UPDATE sending_domains SET verified = FALSE WHERE domain = 'example.com'`); err != nil {
			t.Fatal(err)
		}
		clock.Advance(2 * time.Hour)
		waitRuns(t, s, c.id, "", "done", allDone(1))
		deadline := time.Now().Add(15 * time.Second)
		for {
			var status string
			err := s.app.DB.QueryRow(ctx, `SELECT status FROM sends WHERE source_type = 'loop' AND source_id = $1`, c.id).Scan(&status)
			if err != nil && !errors.Is(err, db.ErrNoRows) {
				t.Fatal(err)
			}
			if status == "failed" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("send status %q, want failed", status)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if n := len(sink.Messages()); n != 0 {
			t.Fatalf("%d emails from an unverified domain", n)
		}
	})
}
