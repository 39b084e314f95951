package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/lasso-mail/lasso/internal/ids"
	"github.com/lasso-mail/lasso/internal/testdb"
)

// js encodes v as a JSON request body.
func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type wfClient struct {
	t  *testing.T
	s  *server
	id string
	wf map[string]any // the latest SimplifiedWorkflow
}

func newWorkflow(t *testing.T, s *server, name string) *wfClient {
	t.Helper()
	r := s.do(t, "POST", "/api/v1/workflows", js(t, map[string]any{"name": name}))
	expect(t, r, 200, `"status":"Draft"`)
	c := &wfClient{t: t, s: s, wf: r.obj(t)}
	c.id = c.wf["id"].(string)
	return c
}

func (c *wfClient) rev() string { return c.wf["workflowRevisionId"].(string) }

func (c *wfClient) nodes() map[string]any { return c.wf["nodes"].(map[string]any) }

func (c *wfClient) node(id string) map[string]any {
	c.t.Helper()
	n, ok := c.nodes()[id].(map[string]any)
	if !ok {
		c.t.Fatalf("node %s not in %v", id, c.nodes())
	}
	return n
}

func (c *wfClient) next(id string) []string {
	var out []string
	for _, v := range c.node(id)["nextNodeIds"].([]any) {
		out = append(out, v.(string))
	}
	return out
}

func (c *wfClient) root() string { return c.wf["rootNodeId"].(string) }

// call sends a mutation with the current revision and, on 200, keeps the
// returned workflow.
func (c *wfClient) call(method, path string, body map[string]any, status int, fragments ...string) map[string]any {
	c.t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	if _, ok := body["expectedRevisionId"]; !ok {
		body["expectedRevisionId"] = c.rev()
	}
	r := c.s.do(c.t, method, "/api/v1/workflows/"+c.id+path, js(c.t, body))
	expect(c.t, r, status, fragments...)
	if r.status != 200 {
		if r.body == nil {
			return nil
		}
		return r.obj(c.t)
	}
	m := r.obj(c.t)
	if wf, ok := m["workflow"].(map[string]any); ok {
		c.wf = wf
		if m["workflowRevisionId"] != nil && m["workflowRevisionId"] != wf["workflowRevisionId"] {
			c.t.Fatalf("revision mismatch in %s", r.raw)
		}
	} else if m["nodes"] != nil {
		c.wf = m
	}
	return m
}

func (c *wfClient) insert(mode, typ string, ids ...string) map[string]any {
	c.t.Helper()
	body := map[string]any{"insertMode": mode, "nodeTypeName": typ}
	switch mode {
	case "between":
		body["fromNodeId"], body["toNodeId"] = ids[0], ids[1]
	case "after":
		body["fromNodeId"] = ids[0]
	case "before":
		body["toNodeId"] = ids[0]
	}
	return c.call("POST", "/nodes", body, 200)["node"].(map[string]any)
}

func keys(m map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

func TestWorkflowCRUD(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := start(t, url, nil)
		expect(t, s.do(t, "POST", "/api/v1/workflows", `{}`), 400, "name")
		expect(t, s.do(t, "POST", "/api/v1/workflows", `{"name":"x","bogus":1}`), 400)
		expect(t, s.do(t, "POST", "/api/v1/workflows", `{"name":"x","mailingListId":"cm06f5v0e45nf0ml5754o9cix"}`), 400, "Mailing list")

		c := newWorkflow(t, s, "Onboarding")
		if got := keys(c.wf); got != "id,mailingListId,name,nodes,rootNodeId,status,url,workflowRevisionId" {
			t.Fatalf("workflow keys %s", got)
		}
		if !strings.HasSuffix(c.wf["url"].(string), "/workflows/"+c.id) || c.wf["mailingListId"] != nil {
			t.Fatalf("workflow %v", c.wf)
		}
		root := c.root()
		if c.node(root)["typeName"] != "BlankTrigger" || len(c.nodes()) != 2 || keys(c.node(root)) != "nextNodeIds,typeName" {
			t.Fatalf("new graph %v", c.nodes())
		}
		exit := c.next(root)[0]
		if c.node(exit)["typeName"] != "ExitAction" || len(c.next(exit)) != 0 {
			t.Fatalf("exit %v", c.node(exit))
		}

		expect(t, s.do(t, "GET", "/api/v1/workflows/"+c.id, ""), 200, `"rootNodeId":"`+root+`"`)
		expect(t, s.do(t, "GET", "/api/v1/workflows/"+ids.New(), ""), 404, "Workflow not found.")
		expect(t, s.do(t, "GET", "/api/v1/workflows/nope", ""), 400)

		// Update: revision rules.
		old := c.rev()
		c.call("POST", "", map[string]any{"expectedRevisionId": nil, "name": "x"}, 409, "stale")
		c.call("POST", "", map[string]any{"name": "Welcome", "description": "New signups"}, 200, `"name":"Welcome"`, `"description":"New signups"`)
		if c.rev() == old {
			t.Fatal("revision not renewed")
		}
		c.call("POST", "", map[string]any{"expectedRevisionId": old, "name": "y"}, 409)
		expect(t, s.do(t, "POST", "/api/v1/workflows/"+c.id, `{"name":"y"}`), 400, "expectedRevisionId")
		c.call("POST", "", map[string]any{}, 400)
		c.call("POST", "", map[string]any{"mailingListId": nil}, 400)

		// List, paginated newest first.
		for i := range 10 {
			newWorkflow(t, s, fmt.Sprintf("wf %d", i))
		}
		r := s.do(t, "GET", "/api/v1/workflows?perPage=10", "")
		expect(t, r, 200, `"totalResults":11`, `"returnedResults":10`, `"totalPages":2`)
		page := r.obj(t)
		first := page["data"].([]any)[0].(map[string]any)
		if first["name"] != "wf 9" || keys(first) != "createdAt,id,name,updatedAt,url" {
			t.Fatalf("first item %v", first)
		}
		cursor := page["pagination"].(map[string]any)["nextCursor"].(string)
		expect(t, s.do(t, "GET", "/api/v1/workflows?perPage=10&cursor="+cursor, ""), 200, `"returnedResults":1`, `"nextCursor":null`, `"name":"Welcome"`)
		expect(t, s.do(t, "GET", "/api/v1/workflows?perPage=5", ""), 400)
		expect(t, s.do(t, "GET", "/api/v1/workflows?cursor=zzz", ""), 400)

		// Delete: 204, then gone everywhere.
		c.call("DELETE", "", map[string]any{"expectedRevisionId": old}, 409)
		r = s.do(t, "DELETE", "/api/v1/workflows/"+c.id, js(t, map[string]any{"expectedRevisionId": c.rev()}))
		if r.status != 204 || r.raw != "" {
			t.Fatalf("delete: %d %q", r.status, r.raw)
		}
		expect(t, s.do(t, "GET", "/api/v1/workflows/"+c.id, ""), 404)
		expect(t, s.do(t, "GET", "/api/v1/workflows/"+c.id+"/nodes/"+root, ""), 404)
		expect(t, s.do(t, "GET", "/api/v1/workflows?perPage=10", ""), 200, `"totalResults":10`)

		// Another team sees nothing.
		key2, _ := s.newKey(t, "Other")
		d := newWorkflow(t, s, "Mine")
		expect(t, s.doKey(t, key2, "GET", "/api/v1/workflows/"+d.id, ""), 404)
	})
}

func TestWorkflowNodeInserts(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := contentServer(t, url)
		c := newWorkflow(t, s, "Drip")
		root := c.root()
		exit := c.next(root)[0]

		// after: Trigger → Timer → Exit, with defaults.
		timer := c.insert("after", "TimerAction", root)
		if timer["amount"] != 0.0 || timer["unit"] != "m" || timer["workflowId"] != c.id || timer["workflowRevisionId"] != c.rev() {
			t.Fatalf("timer %v", timer)
		}
		tid := timer["id"].(string)
		if c.next(root)[0] != tid || c.next(tid)[0] != exit {
			t.Fatalf("graph %v", c.nodes())
		}
		// before: Timer → Email → Exit; the email owns a message.
		email := c.insert("before", "SendEmailAction", exit)
		eid, mid := email["id"].(string), email["emailMessageId"].(string)
		if c.next(tid)[0] != eid || c.next(eid)[0] != exit || email["subject"] != "" {
			t.Fatalf("graph %v", c.nodes())
		}
		msg := s.do(t, "GET", "/api/v1/email-messages/"+mid, "")
		expect(t, msg, 200)
		expect(t, s.do(t, "POST", "/api/v1/email-messages/"+mid, js(t, map[string]any{
			"expectedRevisionId": msg.obj(t)["contentRevisionId"], "subject": "Welcome aboard"})), 200)
		r := s.do(t, "GET", "/api/v1/workflows/"+c.id+"/nodes/"+eid, "")
		expect(t, r, 200, `"subject":"Welcome aboard"`, `"workflowRevisionId":"`+c.rev()+`"`)
		// The node's email is a valid activity target before it has sent.
		expect(t, s.do(t, "POST", "/api/v1/audience-segments", `{"name":"Got welcome","filter":{"match":"all","conditions":[{"type":"activity","action":"sent","negate":false,"target":"workflowEmail","id":"`+mid+`"}]}}`), 200, mid)
		// between: Timer → Filter → Email.
		f := c.insert("between", "AudienceFilter", tid, eid)
		if keys(f) != "appliesDownstream,audienceFilter,audienceSegmentId,id,nextNodeIds,typeName,workflowId,workflowRevisionId" || f["audienceFilter"] != nil {
			t.Fatalf("filter %v", f)
		}
		fid := f["id"].(string)
		if keys(c.node(fid)) != "nextNodeIds,typeName" {
			t.Fatalf("simplified filter %v", c.node(fid))
		}

		// Insert-mode errors.
		c.call("POST", "/nodes", map[string]any{"insertMode": "between", "nodeTypeName": "TimerAction", "fromNodeId": root, "toNodeId": exit}, 400, "does not point")
		c.call("POST", "/nodes", map[string]any{"insertMode": "after", "nodeTypeName": "TimerAction", "fromNodeId": exit}, 400, "exactly one")
		c.call("POST", "/nodes", map[string]any{"insertMode": "before", "nodeTypeName": "TimerAction", "toNodeId": root}, 400, "trigger")
		c.call("POST", "/nodes", map[string]any{"insertMode": "before", "nodeTypeName": "TimerAction", "toNodeId": exit, "beforeNodeId": exit}, 400)
		c.call("POST", "/nodes", map[string]any{"insertMode": "before", "nodeTypeName": "VariantNode", "toNodeId": exit}, 400)
		c.call("POST", "/nodes", map[string]any{"insertMode": "after", "nodeTypeName": "VariantNode", "fromNodeId": root}, 400, "ExperimentBranchNode")
		c.call("POST", "/nodes", map[string]any{"insertMode": "after", "nodeTypeName": "ExitAction", "fromNodeId": root}, 400)
		c.call("POST", "/nodes", map[string]any{"insertMode": "after", "nodeTypeName": "EventTrigger", "fromNodeId": root}, 400)
		c.call("POST", "/nodes", map[string]any{"insertMode": "sideways", "nodeTypeName": "TimerAction", "fromNodeId": root}, 400)
		c.call("POST", "/nodes", map[string]any{"insertMode": "after", "nodeTypeName": "TimerAction", "fromNodeId": ids.New()}, 404)
		c.call("POST", "/nodes", map[string]any{"insertMode": "after", "nodeTypeName": "TimerAction", "fromNodeId": root, "expectedRevisionId": ids.New()}, 409)
		// deprecated beforeNodeId works.
		c.call("POST", "/nodes", map[string]any{"insertMode": "before", "nodeTypeName": "TimerAction", "beforeNodeId": exit}, 200)

		// BranchNode: two AudienceFilter children, downstream under the first.
		bn := c.call("POST", "/nodes", map[string]any{"insertMode": "after", "nodeTypeName": "BranchNode", "fromNodeId": root}, 200)["node"].(map[string]any)
		bid := bn["id"].(string)
		kids := bn["createdChildNodes"].([]any)
		if len(kids) != 2 || len(c.next(bid)) != 2 {
			t.Fatalf("branch %v", bn)
		}
		for i, k := range kids {
			k := k.(map[string]any)
			if k["typeName"] != "AudienceFilter" || c.next(bid)[i] != k["id"] {
				t.Fatalf("branch child %v", k)
			}
		}
		left, right := c.next(bid)[0], c.next(bid)[1]
		if c.next(left)[0] != tid || c.next(right)[0] != tid {
			t.Fatalf("branch children %v / %v", c.node(left), c.node(right))
		}
		nb := c.call("POST", "/nodes/"+bid+"/add-branch", nil, 200)["node"].(map[string]any)
		if nb["typeName"] != "AudienceFilter" || len(c.next(bid)) != 3 || nb["audienceSegmentId"] != nil {
			t.Fatalf("add-branch %v", nb)
		}
		c.call("POST", "/nodes/"+tid+"/add-branch", nil, 400)
		c.call("POST", "/nodes/"+bid+"/add-branch", map[string]any{"nodeTypeName": "X"}, 400)

		// ExperimentBranchNode: two variants plus a control.
		en := c.call("POST", "/nodes", map[string]any{"insertMode": "between", "nodeTypeName": "ExperimentBranchNode", "fromNodeId": left, "toNodeId": tid}, 200)["node"].(map[string]any)
		xid := en["id"].(string)
		controls := 0
		for _, k := range en["createdChildNodes"].([]any) {
			k := k.(map[string]any)
			if k["typeName"] != "VariantNode" {
				t.Fatalf("variant %v", k)
			}
			if k["isControl"] == true {
				controls++
			}
		}
		if controls != 1 || len(c.next(xid)) != 3 || c.node(xid)["samplingRate"] == nil {
			t.Fatalf("experiment %v", en)
		}
		v1 := c.next(xid)[0]
		c.call("POST", "/nodes", map[string]any{"insertMode": "between", "nodeTypeName": "VariantNode", "fromNodeId": xid, "toNodeId": v1}, 400, "already a VariantNode")
		c.call("POST", "/nodes", map[string]any{"insertMode": "between", "nodeTypeName": "TimerAction", "fromNodeId": xid, "toNodeId": v1}, 400, "VariantNode")
		c.call("POST", "/nodes", map[string]any{"insertMode": "before", "nodeTypeName": "TimerAction", "toNodeId": v1}, 400)
		c.call("POST", "/nodes/"+xid+"/add-branch", nil, 200, `"typeName":"VariantNode"`)
		if len(c.next(xid)) != 4 {
			t.Fatal("variant not added")
		}
		// The control flag moves.
		c.call("POST", "/nodes/"+v1, map[string]any{"payload": map[string]any{"isControl": true}}, 200, `"isControl":true`)
		n := 0
		for _, v := range c.next(xid) {
			if c.node(v)["isControl"] == true {
				n++
			}
		}
		if n != 1 || c.node(v1)["isControl"] != true {
			t.Fatalf("controls %d", n)
		}
	})
}

func TestWorkflowNodeUpdates(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := contentServer(t, url)
		c := newWorkflow(t, s, "Updates")
		root := c.root()
		exit := c.next(root)[0]
		tid := c.insert("after", "TimerAction", root)["id"].(string)
		fid := c.insert("after", "AudienceFilter", root)["id"].(string)
		eid := c.insert("before", "SendEmailAction", exit)["id"].(string)
		xid := c.call("POST", "/nodes", map[string]any{"insertMode": "after", "nodeTypeName": "ExperimentBranchNode", "fromNodeId": tid}, 200)["node"].(map[string]any)["id"].(string)

		up := func(id string, payload any, status int, fragments ...string) map[string]any {
			t.Helper()
			return c.call("POST", "/nodes/"+id, map[string]any{"payload": payload}, status, fragments...)
		}
		// Timer.
		m := up(tid, map[string]any{"amount": 2, "unit": "h"}, 200, `"amount":2`, `"unit":"h"`)
		if m["workflow"] == nil || m["id"] != tid || m["workflowRevisionId"] != c.rev() {
			t.Fatalf("update response %v", m)
		}
		up(tid, map[string]any{"amount": -1}, 400)
		up(tid, map[string]any{"amount": 1.5}, 400)
		up(tid, map[string]any{"unit": "w"}, 400)
		up(tid, map[string]any{"samplingRate": 3}, 400)
		up(tid, map[string]any{}, 400)
		up(tid, nil, 400)
		// Experiment.
		up(xid, map[string]any{"samplingRate": 20}, 200, `"samplingRate":20`)
		up(xid, map[string]any{"samplingRate": 101}, 400)
		// Not implemented types.
		up(eid, map[string]any{"subject": "x"}, 501, "This node update is not implemented.")
		up(exit, map[string]any{"x": 1}, 501)
		up(root, map[string]any{"reEligible": true}, 501)
		// Triggers: Blank → Event → ContactProperty → Signup → AddToList.
		ev := up(root, map[string]any{"typeName": "EventTrigger", "eventName": "signup", "reEligible": true}, 200,
			`"typeName":"EventTrigger"`, `"eventName":"signup"`, `"reEligible":true`, `"eventProperties":[]`)
		if c.node(root)["eventName"] != "signup" || ev["nextNodeIds"] == nil {
			t.Fatalf("event trigger %v", c.node(root))
		}
		up(root, map[string]any{"eventName": "a", "eventPatternId": ids.New()}, 400, "not both")
		up(root, map[string]any{"eventPatternId": ids.New()}, 400)
		up(root, map[string]any{"eventPatternId": nil}, 200, `"eventName":null`)
		// An event pattern: its name and properties show on the trigger.
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"paid","email":"ev@example.com","eventProperties":{"plan":"pro"}}`), 200)
		var pid string
		if err := s.app.DB.QueryRow(context.Background(), `SELECT id FROM event_patterns WHERE team_id = $1 AND name = 'paid'`, s.team).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		up(root, map[string]any{"eventPatternId": pid}, 200, `"eventName":"paid"`, `"eventProperties":[{"name":"plan","type":"string"}]`)
		expect(t, s.do(t, "GET", "/api/v1/workflows/"+c.id+"/nodes/"+root, ""), 200, `"eventProperties":[{"name":"plan"`)
		if keys(c.node(root)) != "eventName,nextNodeIds,reEligible,typeName" {
			t.Fatalf("simplified event trigger %v", c.node(root))
		}
		up(root, map[string]any{"typeName": "BlankTrigger"}, 400)
		up(root, map[string]any{"amount": 1}, 400)
		q := map[string]any{"key": "firstName", "is": map[string]any{"value": "Ann", "operator": "equal"}, "was": map[string]any{"value": "", "operator": "any"}}
		up(root, map[string]any{"typeName": "ContactPropertyTrigger", "contactPropertyQuery": q}, 200, `"contactPropertyQuery":{"key":"firstName"`)
		bad := map[string]any{"key": "createdAt", "is": q["is"], "was": q["was"]}
		up(root, map[string]any{"contactPropertyQuery": bad}, 400)
		bad = map[string]any{"key": "firstName", "is": map[string]any{"value": 1, "operator": "greater_than"}, "was": q["was"]}
		up(root, map[string]any{"contactPropertyQuery": bad}, 400, "operator")
		bad = map[string]any{"key": "subscribed", "is": map[string]any{"value": true, "operator": "empty"}, "was": q["was"]}
		up(root, map[string]any{"contactPropertyQuery": bad}, 400, "empty")
		up(root, map[string]any{"typeName": "SignupTrigger"}, 200, `"typeName":"SignupTrigger"`)
		if keys(c.node(root)) != "nextNodeIds,typeName" {
			t.Fatalf("signup %v", c.node(root))
		}
		up(root, map[string]any{"typeName": "AddToListTrigger", "reEligible": false}, 200, `"mailingListId":null`)
		// AudienceFilter.
		filter := map[string]any{"match": "all", "conditions": []any{map[string]any{"type": "property", "key": "firstName", "operator": "equals", "value": "Ann"}}}
		up(fid, map[string]any{"audienceFilter": filter, "appliesDownstream": true}, 200, `"appliesDownstream":true`, `"operator":"equals"`)
		r := s.do(t, "GET", "/api/v1/workflows/"+c.id+"/nodes/"+fid, "")
		expect(t, r, 200, `"audienceFilter":{"match":"all"`, `"audienceSegmentId":null`)
		up(fid, map[string]any{"audienceFilter": map[string]any{"match": "some", "conditions": []any{}}}, 400)
		up(fid, map[string]any{"audienceFilter": map[string]any{"match": "all", "conditions": []any{map[string]any{"type": "property", "key": "nope", "operator": "equals", "value": "x"}}}}, 400)
		up(fid, map[string]any{"audienceSegmentId": ids.New()}, 404)
		// A segment without a filter clears the filter; both set both (§10.4).
		r = s.do(t, "POST", "/api/v1/audience-segments", js(t, map[string]any{"name": "Anns", "filter": filter}))
		expect(t, r, 200)
		sid := r.obj(t)["id"].(string)
		if m := up(fid, map[string]any{"audienceSegmentId": sid}, 200, `"audienceSegmentId":"`+sid+`"`); m["audienceFilter"] != nil || m["appliesDownstream"] != true {
			t.Fatalf("segment without filter %v", m)
		}
		if m := up(fid, map[string]any{"audienceSegmentId": sid, "audienceFilter": filter}, 200); m["audienceSegmentId"] != sid || m["audienceFilter"] == nil {
			t.Fatalf("segment and filter %v", m)
		}
		up(fid, map[string]any{"audienceSegmentId": nil}, 200, `"audienceSegmentId":null`, `"operator":"equals"`)
		up(fid, map[string]any{"audienceFilter": nil}, 200, `"audienceFilter":null`)
		// A stale revision.
		c.call("POST", "/nodes/"+tid, map[string]any{"expectedRevisionId": ids.New(), "payload": map[string]any{"amount": 1}}, 409)
	})
}

func TestWorkflowDeletesAndReroute(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := start(t, url, nil)
		c := newWorkflow(t, s, "Graph")
		root := c.root()
		exit := c.next(root)[0]
		a := c.insert("after", "TimerAction", root)["id"].(string)
		b := c.insert("after", "TimerAction", a)["id"].(string)
		// Trigger → a → b → Exit.
		c.call("DELETE", "/nodes/"+root, nil, 400, "trigger")
		c.call("DELETE", "/nodes/"+ids.New(), nil, 404)
		c.call("DELETE", "/nodes/"+a, map[string]any{"dryRun": true}, 200, `"status":"dryRun"`, `"nodeIds":["`+a+`"]`)
		if len(c.nodes()) != 4 {
			t.Fatal("dry run changed the graph")
		}
		m := c.call("DELETE", "/nodes/"+a, nil, 200, `"status":"deleted"`, `"queuedContactCount":0`)
		if m["workflowRevisionId"] != c.rev() || c.next(root)[0] != b || len(c.nodes()) != 3 {
			t.Fatalf("single delete %v", c.nodes())
		}

		// Branch: both arms lead to b.
		bid := c.call("POST", "/nodes", map[string]any{"insertMode": "after", "nodeTypeName": "BranchNode", "fromNodeId": root}, 200)["node"].(map[string]any)["id"].(string)
		left, right := c.next(bid)[0], c.next(bid)[1]
		if c.next(left)[0] != b || c.next(right)[0] != b {
			t.Fatalf("branch arms %v", c.nodes())
		}
		c.call("DELETE", "/nodes/"+bid, nil, 400, "recursively")
		c.call("POST", "/nodes/"+bid+"/reroute", map[string]any{"newTargetNodeId": exit}, 400)
		c.call("POST", "/nodes/"+left+"/reroute", map[string]any{}, 400, "newTargetNodeId")
		c.call("POST", "/nodes/"+left+"/reroute", map[string]any{"newTargetNodeId": root}, 400)
		c.call("POST", "/nodes/"+left+"/reroute", map[string]any{"newTargetNodeId": ids.New()}, 400)
		m = c.call("POST", "/nodes/"+left+"/reroute", map[string]any{"newTargetNodeId": exit}, 200)
		if m["id"] != left || m["workflow"] == nil || c.next(left)[0] != exit {
			t.Fatalf("reroute %v", m)
		}
		// b keeps only right: rerouting right would orphan it.
		c.call("POST", "/nodes/"+right+"/reroute", map[string]any{"newTargetNodeId": exit}, 400, "incoming")
		// exit has two parents (left, b); rerouting b upstream makes a loop.
		c.call("POST", "/nodes/"+b+"/reroute", map[string]any{"newTargetNodeId": right}, 400, "loop")
		// Recursive: right takes b with it; exit stays (reached via left).
		m = c.call("DELETE", "/nodes/"+right+"/recursive", map[string]any{"dryRun": true}, 200, `"status":"dryRun"`)
		if got := len(m["nodeIds"].([]any)); got != 2 {
			t.Fatalf("recursive dry run %v", m)
		}
		c.call("DELETE", "/nodes/"+bid+"/recursive", nil, 200, `"status":"deleted"`)
		if len(c.nodes()) != 1 || len(c.next(root)) != 0 {
			t.Fatalf("after recursive delete %v", c.nodes())
		}
	})
}

func TestWorkflowQueuedContacts(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := start(t, url, nil)
		ctx := context.Background()
		c := newWorkflow(t, s, "Queued")
		root := c.root()
		tid := c.insert("after", "TimerAction", root)["id"].(string)
		res := s.do(t, "POST", "/api/v1/contacts/create", `{"email":"ann@example.com"}`)
		expect(t, res, 200)
		contactID := res.obj(t)["id"].(string)
		if _, err := s.app.DB.Exec(ctx, `INSERT INTO workflow_runs (id, team_id, workflow_id, contact_id, node_id, status, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, 'queued', 0, 0)`, ids.New(), s.team, c.id, contactID, tid); err != nil {
			t.Fatal(err)
		}
		// Node delete with a queued contact.
		c.call("DELETE", "/nodes/"+tid, nil, 200, `"status":"queuedContactsFound"`, `"queuedContactCount":1`)
		c.call("DELETE", "/nodes/"+tid, map[string]any{"queuedContactPolicy": "bogus"}, 400)
		// Mailing list change: the contact is not on the list.
		l, err := s.app.Contacts.CreateList(ctx, s.team, "News", "", true)
		if err != nil {
			t.Fatal(err)
		}
		c.call("POST", "/mailing-list", map[string]any{"mailingListId": l.ID, "dryRun": true}, 200, `"status":"dryRun"`, `"queuedContactCount":1`)
		c.call("POST", "/mailing-list", map[string]any{"mailingListId": l.ID}, 200, `"status":"queuedContactsFound"`)
		c.call("POST", "/mailing-list", map[string]any{"mailingListId": ids.New()}, 400)
		c.call("POST", "/mailing-list", map[string]any{}, 400, "mailingListId")
		c.call("POST", "/mailing-list", map[string]any{"mailingListId": nil}, 200, `"status":"updated"`, `"mailingListId":null`)
		// Deleting needs confirmation while contacts are queued.
		r := c.call("DELETE", "", nil, 409)
		if msg := r["message"].(string); !strings.HasSuffix(msg, "Confirm deletion by sending a second request with confirmDelete: true.") {
			t.Fatalf("message %q", msg)
		}
		c.call("POST", "/mailing-list", map[string]any{"mailingListId": l.ID, "queuedContactPolicy": "discard"}, 200,
			`"status":"updated"`, `"queuedContactCount":1`, `"mailingListId":"`+l.ID+`"`)
		c.call("DELETE", "/nodes/"+tid, nil, 200, `"status":"deleted"`, `"queuedContactCount":0`)

		// Start, pause, resume (Lasso extension) and the Sending rules.
		d := newWorkflow(t, s, "Run")
		ext := func(action, body string, status int, fragments ...string) {
			t.Helper()
			expect(t, s.do(t, "POST", "/api/lasso/workflows/"+d.id+"/"+action, body), status, fragments...)
		}
		ext("start", "", 400, "trigger")
		d.call("POST", "/nodes/"+d.root(), map[string]any{"payload": map[string]any{"typeName": "EventTrigger", "eventName": "signup"}}, 200)
		ext("pause", "", 409)
		ext("start", "", 200, `"status":"Sending"`)
		d.call("POST", "/nodes", map[string]any{"insertMode": "after", "nodeTypeName": "TimerAction", "fromNodeId": d.root()}, 400, "SENDING")
		d.call("POST", "", map[string]any{"name": "Renamed"}, 200)
		ext("pause", `{"queueing":true}`, 200, `"status":"PausedAndQueueing"`)
		d.call("POST", "/nodes", map[string]any{"insertMode": "after", "nodeTypeName": "TimerAction", "fromNodeId": d.root()}, 200)
		ext("resume", "", 200, `"status":"Sending"`)
		expect(t, s.do(t, "POST", "/api/v1/lasso/workflows/"+d.id+"/pause", ""), 200, `"status":"Paused"`)
		ext("resume", "", 200)
		r = d.call("DELETE", "", nil, 409)
		if !strings.HasSuffix(r["message"].(string), "Confirm deletion by sending a second request with confirmDelete: true.") {
			t.Fatalf("message %v", r)
		}
		d.call("DELETE", "", map[string]any{"confirmDelete": true}, 204)
		ext("start", "", 404)
	})
}

func TestWorkflowNodeCap(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := start(t, url, nil)
		c := newWorkflow(t, s, "Big")
		for len(c.nodes())+4 <= 300 {
			c.call("POST", "/nodes", map[string]any{"insertMode": "after", "nodeTypeName": "ExperimentBranchNode", "fromNodeId": c.root()}, 200)
		}
		// 298 nodes: one more experiment would make 302.
		c.call("POST", "/nodes", map[string]any{"insertMode": "after", "nodeTypeName": "ExperimentBranchNode", "fromNodeId": c.root()}, 400, "300")
		x := c.next(c.root())[0]
		c.call("POST", "/nodes/"+x+"/add-branch", nil, 200)
		c.call("POST", "/nodes/"+x+"/add-branch", nil, 200)
		if len(c.nodes()) != 300 {
			t.Fatalf("%d nodes", len(c.nodes()))
		}
		c.call("POST", "/nodes/"+x+"/add-branch", nil, 400, "300")
	})
}

// Concurrent edits with the same revision token: exactly one wins.
func TestWorkflowRevisionRace(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := start(t, url, nil)
		c := newWorkflow(t, s, "Race")
		const n = 4
		statuses := make(chan int, n)
		for i := range n {
			go func() {
				b := fmt.Sprintf(`{"expectedRevisionId":%q,"insertMode":"after","nodeTypeName":"TimerAction","fromNodeId":%q}`, c.rev(), c.root())
				req, _ := http.NewRequest("POST", s.url+"/api/v1/workflows/"+c.id+"/nodes", strings.NewReader(b))
				req.Header.Set("Authorization", "Bearer "+s.key)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					statuses <- -i
					return
				}
				res.Body.Close()
				statuses <- res.StatusCode
			}()
		}
		got := map[int]int{}
		for range n {
			got[<-statuses]++
		}
		if got[200] != 1 || got[409] != n-1 {
			t.Fatalf("statuses %v", got)
		}
		r := s.do(t, "GET", "/api/v1/workflows/"+c.id, "")
		if len(r.obj(t)["nodes"].(map[string]any)) != 3 {
			t.Fatalf("graph %s", r.raw)
		}
	})
}
