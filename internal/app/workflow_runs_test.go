package app_test

import (
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/ids"
	"github.com/lasso-mail/lasso/internal/testclock"
	"github.com/lasso-mail/lasso/internal/testdb"
	"github.com/lasso-mail/lasso/internal/workflows"
)

func isoMS(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// runsPage fetches a page of GET /api/lasso/workflows/{id}/runs.
func runsPage(t *testing.T, s *server, wfID, query string) ([]map[string]any, map[string]any) {
	t.Helper()
	data, p := page(t, s, "/api/lasso/workflows/"+wfID+"/runs"+query)
	out := make([]map[string]any, len(data))
	for i, d := range data {
		out[i] = d.(map[string]any)
	}
	return out, p
}

func runIDs(rs []map[string]any) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r["id"].(string)
	}
	return out
}

// checkRunJSON compares a run of the API with the run as the engine stores it.
func checkRunJSON(t *testing.T, got map[string]any, want *workflows.Run, email string) {
	t.Helper()
	str := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	var due any
	if want.DueAt != nil {
		due = isoMS(*want.DueAt)
	}
	hist := []any{}
	for _, h := range want.History {
		hist = append(hist, map[string]any{"nodeId": h.NodeID, "type": str(h.Type), "at": isoMS(time.UnixMilli(h.At)),
			"result": h.Result, "detail": str(h.Detail)})
	}
	exp := map[string]any{"id": want.ID, "workflowId": want.WorkflowID, "contactId": want.ContactID, "contactEmail": str(email),
		"nodeId": want.NodeID, "status": want.Status, "eventId": str(want.EventID), "dueAt": due,
		"createdAt": isoMS(want.CreatedAt), "updatedAt": isoMS(want.UpdatedAt), "history": hist}
	if !reflect.DeepEqual(got, exp) {
		t.Fatalf("run JSON\n got %v\nwant %v", got, exp)
	}
}

func TestWorkflowRunsAPI(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		t0 := time.Now().UTC().Truncate(time.Millisecond)
		clock := testclock.New(t0)
		s, _ := engineServer(t, dbURL, clock)
		expect(t, s.do(t, "POST", "/api/v1/contacts/properties", `{"name":"country","type":"string"}`), 200)

		// EventTrigger "signup" → AudienceFilter country = FR → Timer 10 m → Exit.
		c := newWorkflow(t, s, "Runs")
		root := c.root()
		c.call("POST", "/nodes/"+root, map[string]any{"payload": map[string]any{"typeName": "EventTrigger", "eventName": "signup"}}, 200)
		fid := c.insert("after", "AudienceFilter", root)["id"].(string)
		c.call("POST", "/nodes/"+fid, map[string]any{"payload": map[string]any{"audienceFilter": map[string]any{"match": "all",
			"conditions": []any{map[string]any{"type": "property", "key": "country", "operator": "equals", "value": "FR"}}}}}, 200)
		tid := c.insert("after", "TimerAction", fid)["id"].(string)
		c.call("POST", "/nodes/"+tid, map[string]any{"payload": map[string]any{"amount": 10, "unit": "m"}}, 200)
		exitID := c.next(tid)[0]
		expect(t, s.do(t, "POST", "/api/lasso/workflows/"+c.id+"/start", ""), 200, `"status":"Sending"`)
		// A second workflow on the same event: its runs are not the first one's.
		other := newWorkflow(t, s, "Other")
		other.call("POST", "/nodes/"+other.root(), map[string]any{"payload": map[string]any{"typeName": "EventTrigger", "eventName": "signup"}}, 200)
		expect(t, s.do(t, "POST", "/api/lasso/workflows/"+other.id+"/start", ""), 200)

		// 12 contacts from FR wait on the timer, 3 from DE leave at the filter.
		emails := map[string]bool{}
		for i := range 15 {
			country, email := "FR", fmt.Sprintf("fr%02d@example.org", i)
			if i >= 12 {
				country, email = "DE", fmt.Sprintf("de%02d@example.org", i)
			}
			emails[email] = country == "FR"
			expect(t, s.do(t, "POST", "/api/v1/events/send", js(t, map[string]any{"eventName": "signup", "email": email, "country": country})), 200)
		}
		runs := waitRuns(t, s, c.id, "", "12 waiting and 3 exited", func(rs []*workflows.Run) bool {
			waiting, exited := 0, 0
			for _, r := range rs {
				switch {
				case r.Status == workflows.RunQueued && r.DueAt != nil:
					waiting++
				case r.Status == workflows.RunExited:
					exited++
				}
			}
			return waiting == 12 && exited == 3
		})
		waitRuns(t, s, other.id, "", "15 completed", allDone(15))
		byID := map[string]*workflows.Run{}
		var all []string
		for _, r := range runs {
			byID[r.ID] = r
			all = append(all, r.ID)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(all)))
		emailOf := func(r map[string]any) string {
			t.Helper()
			e, ok := r["contactEmail"].(string)
			if !ok {
				t.Fatalf("no contactEmail in %v", r)
			}
			return e
		}

		// Every run, newest first: created at the same instant (the test
		// clock), so by id descending.
		data, p := runsPage(t, s, c.id, "")
		if got := runIDs(data); !reflect.DeepEqual(got, all) {
			t.Fatalf("runs %v, want %v", got, all)
		}
		if p["totalResults"] != 15.0 || p["returnedResults"] != 15.0 || p["perPage"] != 20.0 || p["totalPages"] != 1.0 || p["nextCursor"] != nil || p["nextPage"] != nil {
			t.Fatalf("pagination %v", p)
		}
		for _, r := range data {
			run := byID[r["id"].(string)]
			checkRunJSON(t, r, run, emailOf(r))
			if fr, ok := emails[emailOf(r)]; !ok || contactID(t, s, url.QueryEscape(emailOf(r))) != run.ContactID {
				t.Fatalf("run %s: contact %v", run.ID, r)
			} else if fr != (run.Status == workflows.RunQueued) {
				t.Fatalf("run of %s: status %s", emailOf(r), run.Status)
			}
			if r["createdAt"] != isoMS(t0) || r["workflowId"] != c.id {
				t.Fatalf("run %v", r)
			}
			h := r["history"].([]any)
			first, last := h[0].(map[string]any), h[len(h)-1].(map[string]any)
			if first["nodeId"] != root || first["type"] != "EventTrigger" || first["result"] != "entered" || first["at"] != isoMS(t0) {
				t.Fatalf("first step %v", first)
			}
			if r["eventId"] == nil || r["eventId"] == "" {
				t.Fatalf("run without its event: %v", r)
			}
			switch r["status"] {
			case "queued":
				if r["nodeId"] != tid || r["dueAt"] != isoMS(t0.Add(10*time.Minute)) || last["nodeId"] != tid || last["result"] != "waiting" {
					t.Fatalf("waiting run %v", r)
				}
			case "exited":
				if r["nodeId"] != fid || r["dueAt"] != nil || last["nodeId"] != fid || last["type"] != "AudienceFilter" || last["result"] != "notMatched" {
					t.Fatalf("exited run %v", r)
				}
			default:
				t.Fatalf("run %v", r)
			}
		}
		got := s.do(t, "GET", "/api/lasso/workflow-runs/"+data[3]["id"].(string), "")
		expect(t, got, 200)
		if !reflect.DeepEqual(got.obj(t), data[3]) {
			t.Fatalf("run by id %v, in the list %v", got.obj(t), data[3])
		}
		expect(t, s.do(t, "GET", "/api/v1/lasso/workflow-runs/"+data[0]["id"].(string), ""), 200, `"id":"`+data[0]["id"].(string)+`"`)

		// Pages of 10 by cursor.
		p1, pg := runsPage(t, s, c.id, "?perPage=10")
		if !reflect.DeepEqual(runIDs(p1), all[:10]) || pg["totalResults"] != 15.0 || pg["returnedResults"] != 10.0 || pg["totalPages"] != 2.0 || pg["nextCursor"] != all[10] {
			t.Fatalf("page 1 %v %v", runIDs(p1), pg)
		}
		if next, _ := pg["nextPage"].(string); !strings.HasSuffix(next, "/api/lasso/workflows/"+c.id+"/runs?cursor="+all[10]+"&perPage=10") {
			t.Fatalf("nextPage %v", pg["nextPage"])
		}
		p2, pg := runsPage(t, s, c.id, "?perPage=10&cursor="+all[10])
		if !reflect.DeepEqual(runIDs(p2), all[10:]) || pg["returnedResults"] != 5.0 || pg["nextCursor"] != nil || pg["nextPage"] != nil {
			t.Fatalf("page 2 %v %v", runIDs(p2), pg)
		}

		// Filters; nextPage keeps them.
		q1, pg := runsPage(t, s, c.id, "?status=queued&perPage=10")
		if len(q1) != 10 || pg["totalResults"] != 12.0 || pg["totalPages"] != 2.0 {
			t.Fatalf("queued %v", pg)
		}
		next, err := url.Parse(pg["nextPage"].(string))
		if err != nil || next.Query().Get("status") != "queued" || next.Query().Get("perPage") != "10" {
			t.Fatalf("nextPage %v", pg["nextPage"])
		}
		q2, pg := runsPage(t, s, c.id, "?"+next.RawQuery)
		if len(q2) != 2 || pg["nextCursor"] != nil {
			t.Fatalf("queued page 2: %d %v", len(q2), pg)
		}
		seen := map[string]bool{}
		for _, r := range append(q1, q2...) {
			if r["status"] != "queued" || !emails[emailOf(r)] || seen[r["id"].(string)] {
				t.Fatalf("queued run %v", r)
			}
			seen[r["id"].(string)] = true
		}
		ex, pg := runsPage(t, s, c.id, "?status=exited")
		if len(ex) != 3 || pg["totalResults"] != 3.0 {
			t.Fatalf("exited %v", runIDs(ex))
		}
		for _, r := range ex {
			if r["status"] != "exited" || emails[emailOf(r)] {
				t.Fatalf("exited run %v", r)
			}
		}
		if cs, pg := runsPage(t, s, c.id, "?status=completed"); len(cs) != 0 || pg["totalResults"] != 0.0 || pg["totalPages"] != 0.0 {
			t.Fatalf("completed %v %v", cs, pg)
		}
		annID := contactID(t, s, "fr03%40example.org")
		for _, q := range []string{"?email=fr03%40example.org", "?email=FR03%40Example.org", "?contactId=" + annID, "?contactId=" + annID + "&email=fr03%40example.org&status=queued"} {
			rs, pg := runsPage(t, s, c.id, q)
			if len(rs) != 1 || pg["totalResults"] != 1.0 || rs[0]["contactId"] != annID || rs[0]["contactEmail"] != "fr03@example.org" {
				t.Fatalf("%s: %v", q, rs)
			}
		}
		for _, q := range []string{"?email=nobody%40example.org", "?contactId=" + annID + "&status=exited", "?contactId=" + annID + "&email=fr04%40example.org", "?contactId=" + ids.New()} {
			if rs, pg := runsPage(t, s, c.id, q); len(rs) != 0 || pg["totalResults"] != 0.0 {
				t.Fatalf("%s: %v", q, rs)
			}
		}
		// The other workflow lists only its own runs.
		ors, pg := runsPage(t, s, other.id, "?email=fr03%40example.org")
		if len(ors) != 1 || ors[0]["workflowId"] != other.id || ors[0]["status"] != "completed" || ors[0]["contactEmail"] != "fr03@example.org" {
			t.Fatalf("other workflow %v %v", ors, pg)
		}

		// Bad requests.
		base := "/api/lasso/workflows/" + c.id + "/runs"
		expect(t, s.do(t, "GET", base+"?status=waiting", ""), 400, "status must be one of queued, completed, exited, cancelled")
		expect(t, s.do(t, "GET", base+"?perPage=5", ""), 400, "perPage")
		expect(t, s.do(t, "GET", base+"?perPage=51", ""), 400, "perPage")
		expect(t, s.do(t, "GET", base+"?cursor="+ids.New(), ""), 400, "Invalid cursor")
		expect(t, s.do(t, "GET", "/api/lasso/workflows/"+other.id+"/runs?cursor="+all[0], ""), 400, "Invalid cursor")
		expect(t, s.do(t, "GET", base+"?email=not-an-email", ""), 400, "Invalid email")
		expect(t, s.do(t, "GET", base+"?contactId=nope", ""), 400, "Invalid contact id")
		expect(t, s.do(t, "GET", "/api/lasso/workflows/nope/runs", ""), 400)
		expect(t, s.do(t, "POST", base, ""), 405)
		expect(t, s.doKey(t, "", "GET", base, ""), 401)

		// Absent and other teams' workflows and runs are 404.
		expect(t, s.do(t, "GET", "/api/lasso/workflows/"+ids.New()+"/runs", ""), 404, "Workflow not found")
		expect(t, s.do(t, "GET", "/api/lasso/workflow-runs/"+ids.New(), ""), 404, "Workflow run not found")
		key2, _ := s.newKey(t, "Other team")
		expect(t, s.doKey(t, key2, "GET", base, ""), 404, "Workflow not found")
		expect(t, s.doKey(t, key2, "GET", "/api/lasso/workflow-runs/"+all[0], ""), 404, "Workflow run not found")
		mine := s.doKey(t, key2, "POST", "/api/v1/workflows", `{"name":"Theirs"}`)
		expect(t, mine, 200)
		theirs := mine.obj(t)["id"].(string)
		r := s.doKey(t, key2, "GET", "/api/lasso/workflows/"+theirs+"/runs", "")
		expect(t, r, 200, `"totalResults":0`, `"data":[]`)
		expect(t, s.do(t, "GET", "/api/lasso/workflows/"+theirs+"/runs", ""), 404)

		// The timer ends: the waiting runs complete at the exit.
		clock.Advance(11 * time.Minute)
		runs = waitRuns(t, s, c.id, "", "done", allDone(15))
		done, pg := runsPage(t, s, c.id, "?status=completed&perPage=50")
		if len(done) != 12 || pg["totalResults"] != 12.0 || pg["perPage"] != 50.0 {
			t.Fatalf("completed %d %v", len(done), pg)
		}
		for _, r := range runs {
			byID[r.ID] = r
		}
		for _, r := range done {
			checkRunJSON(t, r, byID[r["id"].(string)], emailOf(r))
			h := r["history"].([]any)
			last := h[len(h)-1].(map[string]any)
			if r["nodeId"] != exitID || r["dueAt"] != nil || r["updatedAt"] != isoMS(t0.Add(11*time.Minute)) || last["result"] != "completed" || !seen[r["id"].(string)] {
				t.Fatalf("completed run %v", r)
			}
		}
		if q, pg := runsPage(t, s, c.id, "?status=queued"); len(q) != 0 || pg["totalResults"] != 0.0 {
			t.Fatalf("still queued: %v", q)
		}

		// A deleted workflow's runs: no list, but each run is still there, cancelled or not.
		expect(t, s.do(t, "DELETE", "/api/v1/workflows/"+c.id, js(t, map[string]any{"expectedRevisionId": c.rev(), "confirmDelete": true})), 204)
		expect(t, s.do(t, "GET", base, ""), 404)
		expect(t, s.do(t, "GET", "/api/lasso/workflow-runs/"+all[0], ""), 200, `"workflowId":"`+c.id+`"`)
	})
}
