package app_test

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/lasso-mail/lasso/internal/testdb"
)

// page fetches one page of a paginated list and returns its data and
// pagination objects.
func page(t *testing.T, s *server, path string) ([]any, map[string]any) {
	t.Helper()
	r := s.do(t, "GET", path, "")
	expect(t, r, 200)
	m := r.obj(t)
	data, ok := m["data"].([]any)
	if !ok {
		t.Fatalf("%s: no data array: %s", path, r.raw)
	}
	p, ok := m["pagination"].(map[string]any)
	if !ok {
		t.Fatalf("%s: no pagination: %s", path, r.raw)
	}
	for _, k := range []string{"totalResults", "returnedResults", "perPage", "totalPages", "nextCursor", "nextPage"} {
		if _, ok := p[k]; !ok {
			t.Fatalf("%s: pagination lacks %s: %s", path, k, r.raw)
		}
	}
	return data, p
}

func TestAudienceSegments(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s := start(t, dbURL, nil)
		expect(t, s.do(t, "POST", "/api/v1/contacts/properties", `{"name":"planName","type":"string"}`), 200)

		// Empty list.
		data, p := page(t, s, "/api/v1/audience-segments")
		if len(data) != 0 || p["totalResults"] != 0.0 || p["nextCursor"] != nil || p["nextPage"] != nil || p["perPage"] != 20.0 {
			t.Fatalf("empty list: %v %v", data, p)
		}

		// Create (200, the AudienceSegment object) and get.
		r := s.do(t, "POST", "/api/v1/audience-segments", `{"name":"Power users","description":"Contacts on the pro plan",
			"filter":{"match":"all","conditions":[{"type":"property","key":"planName","operator":"equals","value":"pro"}]}}`)
		expect(t, r, 200, `"name":"Power users"`, `"description":"Contacts on the pro plan"`,
			`"filter":{"match":"all","conditions":[{"type":"property","key":"planName","operator":"equals","value":"pro"}]}`, `"createdAt":"`, `"updatedAt":"`)
		seg := r.obj(t)
		id, _ := seg["id"].(string)
		r = s.do(t, "GET", "/api/v1/audience-segments/"+id, "")
		expect(t, r, 200, `"id":"`+id+`"`, `"name":"Power users"`)
		if r.obj(t)["createdAt"] != seg["createdAt"] {
			t.Fatalf("get differs from create: %s vs %v", r.raw, seg)
		}
		// No description is null.
		r = s.do(t, "POST", "/api/v1/audience-segments", `{"name":"Opted in","filter":{"match":"any","conditions":[{"type":"optIn","status":null},{"type":"property","key":"firstName","operator":"contains","value":"a"}]}}`)
		expect(t, r, 200, `"description":null`, `"match":"any"`, `{"type":"optIn","status":null}`)

		// Errors.
		expect(t, s.do(t, "GET", "/api/v1/audience-segments/cl0000000000000000000000a", ""), 404, "Audience segment not found.")
		expect(t, s.do(t, "GET", "/api/v1/audience-segments/not-an-id", ""), 400)
		good := `{"match":"all","conditions":[{"type":"property","key":"planName","operator":"equals","value":"pro"}]}`
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", `{"name":"Power users","filter":`+good+`}`), 400)
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", `{"filter":`+good+`}`), 400, "name")
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", `{"name":"No filter"}`), 400, "filter")
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", `{"name":"Null filter","filter":null}`), 400, "filter")
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", `{"name":"Str filter","filter":"x"}`), 400, "filter")
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", `{"name":"Extra","filter":`+good+`,"color":"red"}`), 400, "color")
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", `{"name":"None","filter":{"match":"all","conditions":[]}}`), 400)
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", `{"name":"Bad op","filter":{"match":"all","conditions":[{"type":"property","key":"planName","operator":"bogus","value":"x"}]}}`), 400, "bogus")
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", `{"name":"Bad match","filter":{"match":"some","conditions":[{"type":"optIn","status":null}]}}`), 400, "match")
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", `{"name":"Unknown prop","filter":{"match":"all","conditions":[{"type":"property","key":"nope","operator":"equals","value":"x"}]}}`), 400, "nope")
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", `{"name":"Ghost campaign","filter":{"match":"all","conditions":[{"type":"activity","action":"sent","negate":false,"target":"campaign","id":"cl0000000000000000000000a"}]}}`), 404)
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", `not json`), 400)

		// Another team sees none of them.
		key2, _ := s.newKey(t, "Other")
		expect(t, s.doKey(t, key2, "GET", "/api/v1/audience-segments/"+id, ""), 404)

		// Pagination: 12 more, newest first, perPage 10.
		for i := range 12 {
			expect(t, s.do(t, "POST", "/api/v1/audience-segments", fmt.Sprintf(`{"name":"Seg %02d","filter":%s}`, i, good)), 200)
		}
		data, p = page(t, s, "/api/v1/audience-segments?perPage=10")
		if len(data) != 10 || p["totalResults"] != 14.0 || p["returnedResults"] != 10.0 || p["totalPages"] != 2.0 || p["perPage"] != 10.0 {
			t.Fatalf("page 1: %v", p)
		}
		if data[0].(map[string]any)["name"] != "Seg 11" {
			t.Fatalf("not newest first: %v", data[0])
		}
		cursor, _ := p["nextCursor"].(string)
		next, _ := p["nextPage"].(string)
		if cursor == "" || next != s.app.PublicURL()+"/api/v1/audience-segments?cursor="+cursor+"&perPage=10" {
			t.Fatalf("next: %v", p)
		}
		data2, p2 := page(t, s, "/api/v1/audience-segments?perPage=10&cursor="+cursor)
		if len(data2) != 4 || p2["nextCursor"] != nil || p2["nextPage"] != nil || p2["returnedResults"] != 4.0 {
			t.Fatalf("page 2: %v %v", data2, p2)
		}
		seen := map[any]bool{}
		for _, d := range append(data, data2...) {
			seen[d.(map[string]any)["id"]] = true
		}
		if len(seen) != 14 || !seen[id] {
			t.Fatalf("pages overlap or miss: %d", len(seen))
		}
		expect(t, s.do(t, "GET", "/api/v1/audience-segments?perPage=5", ""), 400, "perPage")
		expect(t, s.do(t, "GET", "/api/v1/audience-segments?perPage=abc", ""), 400, "perPage")
		expect(t, s.do(t, "GET", "/api/v1/audience-segments?cursor=bogus", ""), 400, "cursor")
		// An existing workflow and its email are valid targets before they
		// have sent anything; unknown or deleted ones are not.
		wf := newWorkflow(t, s, "Fresh")
		activity := func(target, id string) string {
			return fmt.Sprintf(`{"name":"Activity %s %s","filter":{"match":"all","conditions":[{"type":"activity","action":"sent","negate":true,"target":%q,"id":%q}]}}`, target, id, target, id)
		}
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", activity("workflow", wf.id)), 200, `"target":"workflow"`)
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", activity("workflow", "cl0000000000000000000000a")), 404, "Workflow not found.")
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", activity("workflowEmail", "cl0000000000000000000000a")), 404, "Workflow email not found.")
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", activity("workflowEmail", wf.id)), 404)
		key3, _ := s.newKey(t, "Third")
		expect(t, s.doKey(t, key3, "POST", "/api/v1/audience-segments", activity("workflow", wf.id)), 404)
		wf.call("DELETE", "", nil, 204)
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", `{"name":"Deleted workflow","filter":{"match":"all","conditions":[{"type":"activity","action":"sent","negate":false,"target":"workflow","id":"`+wf.id+`"}]}}`), 404)
	})
}

func TestEventPatterns(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s := start(t, dbURL, nil)
		data, p := page(t, s, "/api/v1/event-patterns")
		if len(data) != 0 || p["totalResults"] != 0.0 {
			t.Fatalf("empty: %v", p)
		}
		send := func(body string) {
			t.Helper()
			expect(t, s.do(t, "POST", "/api/v1/events/send", body), 200, `"success":true`)
		}
		send(`{"eventName":"signup","email":"a@example.com","eventProperties":{"plan":"pro","trialDays":14}}`)
		send(`{"eventName":"signup","email":"b@example.com","eventProperties":{"paid":true}}`)
		send(`{"eventName":"Signup","email":"a@example.com"}`)
		odd := "user signed up/ä"
		send(`{"eventName":"` + odd + `","email":"a@example.com","eventProperties":{"when":"2025-01-02T03:04:05Z"}}`)

		data, p = page(t, s, "/api/v1/event-patterns")
		if len(data) != 3 || p["totalResults"] != 3.0 || p["nextCursor"] != nil {
			t.Fatalf("list: %v %v", data, p)
		}
		first := data[0].(map[string]any)
		if first["eventName"] != odd || first["incomingWebhookPlatform"] != nil || len(first) != 3 {
			t.Fatalf("summary: %v", first)
		}

		// By name: case-sensitive, properties with types.
		r := s.do(t, "GET", "/api/v1/event-patterns/by-name/signup", "")
		expect(t, r, 200, `"eventName":"signup"`, `"incomingWebhookPlatform":null`,
			`{"name":"plan","type":"string"}`, `{"name":"trialDays","type":"number"}`, `{"name":"paid","type":"boolean"}`)
		signupID, _ := r.obj(t)["id"].(string)
		r = s.do(t, "GET", "/api/v1/event-patterns/by-name/Signup", "")
		expect(t, r, 200, `"eventName":"Signup"`, `"eventProperties":[]`)
		if r.obj(t)["id"] == signupID {
			t.Fatal("signup and Signup share a pattern")
		}
		expect(t, s.do(t, "GET", "/api/v1/event-patterns/by-name/SIGNUP", ""), 404, "Event pattern not found.")
		expect(t, s.do(t, "GET", "/api/v1/event-patterns/by-name/nope", ""), 404)

		// Percent-encoded name (as encodeURIComponent does it).
		enc := url.PathEscape(odd) // user%20signed%20up%2F%C3%A4
		r = s.do(t, "GET", "/api/v1/event-patterns/by-name/"+enc, "")
		expect(t, r, 200, `"eventName":"user signed up/ä"`, `{"name":"when","type":"date"}`)
		oddID, _ := r.obj(t)["id"].(string)
		if oddID != first["id"] {
			t.Fatalf("by-name id %s, list id %v", oddID, first["id"])
		}
		expect(t, s.do(t, "GET", "/v1/event-patterns/by-name/"+enc, ""), 200, `"eventName":"user signed up/ä"`)

		// By id.
		r = s.do(t, "GET", "/api/v1/event-patterns/"+signupID, "")
		expect(t, r, 200, `"eventName":"signup"`, `"eventProperties":[`)
		expect(t, s.do(t, "GET", "/api/v1/event-patterns/cl0000000000000000000000a", ""), 404)
		expect(t, s.do(t, "GET", "/api/v1/event-patterns/not-an-id", ""), 400)
		key2, _ := s.newKey(t, "Other")
		expect(t, s.doKey(t, key2, "GET", "/api/v1/event-patterns/"+signupID, ""), 404)
		expect(t, s.doKey(t, key2, "GET", "/api/v1/event-patterns/by-name/signup", ""), 404)

		// Pagination.
		for i := range 9 {
			send(fmt.Sprintf(`{"eventName":"ev%d","email":"a@example.com"}`, i))
		}
		data, p = page(t, s, "/api/v1/event-patterns?perPage=10")
		if len(data) != 10 || p["totalResults"] != 12.0 || p["totalPages"] != 2.0 || data[0].(map[string]any)["eventName"] != "ev8" {
			t.Fatalf("page 1: %v %v", data[0], p)
		}
		cursor, _ := p["nextCursor"].(string)
		if next, _ := p["nextPage"].(string); cursor == "" || next != s.app.PublicURL()+"/api/v1/event-patterns?cursor="+cursor+"&perPage=10" {
			t.Fatalf("next: %v", p)
		}
		data, p = page(t, s, "/api/v1/event-patterns?perPage=10&cursor="+cursor)
		if len(data) != 2 || p["nextCursor"] != nil || data[1].(map[string]any)["eventName"] != "signup" {
			t.Fatalf("page 2: %v %v", data, p)
		}
		expect(t, s.do(t, "GET", "/api/v1/event-patterns?cursor=bogus", ""), 400, "cursor")
		expect(t, s.do(t, "GET", "/api/v1/event-patterns?cursor="+cursor, ""), 200)
		expect(t, s.doKey(t, key2, "GET", "/api/v1/event-patterns?cursor="+cursor, ""), 400, "cursor")
		expect(t, s.do(t, "GET", "/api/v1/event-patterns?perPage=51", ""), 400, "perPage")
	})
}
