// Compatibility test: audience segments, event patterns, workflows and
// workflow nodes, driven with the official `loops` npm SDK (7.3.0,
// unmodified) against a live Lasso server. Contract:
// /work/shared/spec/loops-api.md §3 (pagination), §5.13–§5.16, §6.6, §6.10,
// §10, §11.
//
//   cd compat && npm ci && LASSO_BIN=../bin/lasso node --test workflows.test.mjs
//
// Like the other compat files it builds nothing: it takes $LASSO_BIN, starts
// `lasso serve` on free ports with a temp data dir, creates keys, lists and a
// verified sending domain with the CLI, and repeats everything on PostgreSQL
// when LASSO_TEST_POSTGRES_URL is set.
//
// Queued contacts need real runs. The Loops API cannot start a workflow, so
// the test uses Lasso's extension endpoints (POST /api/lasso/workflows/{id}/
// start | pause | resume, plain fetch with the Bearer key): contacts enter an
// EventTrigger workflow through sendEvent, get its email (read back from the
// capture mailbox with `lasso mailbox list`; the run commits the send and its
// move to the next node together) and then wait on a one-day TimerAction.

import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import {
  makeEnv, dropEnv, cli, startServer, sdk, raw, rejectsAPI, assertRawError, backends,
  assertKeys, assertPage, drain, waitFor, mailbox,
} from "./helpers.mjs";

// ---------------------------------------------------------------------------
// Shapes (§6.6, §6.10, §10)

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UNKNOWN_ID = "cxxxxxxxxxxxxxxxxxxxxxxxx";
const SEGMENT_KEYS = ["id", "name", "description", "createdAt", "updatedAt", "filter"];
const PATTERN_SUMMARY_KEYS = ["id", "eventName", "incomingWebhookPlatform"];
const PATTERN_KEYS = [...PATTERN_SUMMARY_KEYS, "eventProperties"];
const WF_SUMMARY_KEYS = ["id", "url", "name", "createdAt", "updatedAt"];
const WF_KEYS = ["id", "url", "status", "name", "mailingListId", "rootNodeId", "workflowRevisionId", "nodes"];
const EM_KEYS = ["id", "subject", "previewText", "fromName", "fromEmail", "replyToEmail", "emailFormat", "lmx", "contentRevisionId", "updatedAt"];
const CONFIRM_SUFFIX = "Confirm deletion by sending a second request with confirmDelete: true.";
const NOT_IMPLEMENTED = "This node update is not implemented.";
const TRIGGERS = ["BlankTrigger", "SignupTrigger", "ContactPropertyTrigger", "AddToListTrigger", "EventTrigger"];

// Extra keys of a node in SimplifiedWorkflow.nodes (§10.1 middle column);
// [required, optional].
const SIMPLE_EXTRA = {
  BlankTrigger: [[], []],
  SignupTrigger: [[], []],
  ContactPropertyTrigger: [["contactPropertyQuery", "reEligible"], []],
  AddToListTrigger: [["mailingListId", "reEligible"], []],
  EventTrigger: [["eventName", "reEligible"], []],
  AudienceFilter: [[], []],
  TimerAction: [["amount", "unit"], []],
  SendEmailAction: [["emailMessageId", "subject"], []],
  ExitAction: [[], []],
  BranchNode: [[], []],
  ExperimentBranchNode: [["samplingRate"], []],
  VariantNode: [[], ["isControl"]],
};
// Extra keys of a detail / mutation node (§10.1 right column, §10.2, §10.3;
// AudienceFilter's ids are emitted as null per §16 #14).
const DETAIL_EXTRA = {
  BlankTrigger: [[], []],
  SignupTrigger: [[], []],
  ContactPropertyTrigger: [["contactPropertyQuery", "reEligible"], []],
  AddToListTrigger: [["mailingListId", "reEligible"], []],
  EventTrigger: [["eventName", "eventProperties", "reEligible"], []],
  AudienceFilter: [["audienceFilter", "audienceSegmentId", "appliesDownstream"], []],
  TimerAction: [["amount", "unit"], []],
  SendEmailAction: [["emailMessageId", "subject"], []],
  ExitAction: [[], []],
  BranchNode: [[], ["evalStrategy"]],
  ExperimentBranchNode: [["samplingRate"], ["url", "experimentId", "experimentType"]],
  VariantNode: [[], ["isControl", "variantId"]],
};


function assertKeysWithin(obj, required, optional, label) {
  assert.ok(obj && typeof obj === "object" && !Array.isArray(obj), `${label} must be an object, got ${JSON.stringify(obj)}`);
  for (const k of required) assert.ok(k in obj, `${label}: missing ${k} in ${JSON.stringify(obj)}`);
  for (const k of Object.keys(obj)) assert.ok(required.includes(k) || optional.includes(k), `${label}: unexpected key ${k} in ${JSON.stringify(obj)}`);
}


// drain follows nextCursor with the given list method until the last page.

function assertSegment(g, { name, description, filter }) {
  assertKeys(g, SEGMENT_KEYS, "AudienceSegment");
  assert.equal(typeof g.id, "string");
  assert.equal(g.name, name);
  assert.equal(g.description, description);
  assert.deepEqual(g.filter, filter);
  assert.match(g.createdAt, ISO);
  assert.match(g.updatedAt, ISO);
}

function assertSimpleNode(n, label) {
  assert.ok(n && typeof n.typeName === "string", `${label}: ${JSON.stringify(n)}`);
  const extra = SIMPLE_EXTRA[n.typeName];
  assert.ok(extra, `${label}: unknown typeName ${n.typeName}`);
  assertKeysWithin(n, ["typeName", "nextNodeIds", ...extra[0]], extra[1], `${label} (${n.typeName})`);
  assert.ok(Array.isArray(n.nextNodeIds) && n.nextNodeIds.every((x) => typeof x === "string"), `${label} nextNodeIds`);
}

// assertDetailNode checks a WorkflowNode (detail), optionally with the
// revision (mutation / WorkflowNodeWithRevision).
function assertDetailNode(n, { workflowId, revision = true, flat = [] } = {}) {
  assert.ok(n && typeof n.typeName === "string", JSON.stringify(n));
  const extra = DETAIL_EXTRA[n.typeName];
  assert.ok(extra, `unknown typeName ${n.typeName}`);
  const req = ["id", "workflowId", "typeName", "nextNodeIds", ...extra[0], ...(revision ? ["workflowRevisionId"] : []), ...flat];
  assertKeysWithin(n, req, extra[1], `WorkflowNode ${n.typeName}`);
  assert.equal(typeof n.id, "string");
  if (workflowId) assert.equal(n.workflowId, workflowId);
  assert.ok(Array.isArray(n.nextNodeIds));
  if (revision) assert.equal(typeof n.workflowRevisionId, "string");
}

// assertWorkflow checks a SimplifiedWorkflow (§6.10) and its graph.
function assertWorkflow(wf, { description = false } = {}) {
  assertKeys(wf, description ? [...WF_KEYS, "description"] : WF_KEYS, "SimplifiedWorkflow");
  assert.equal(typeof wf.id, "string");
  assert.match(wf.url, /^https?:\/\//);
  assert.ok(wf.url.endsWith(`/workflows/${wf.id}`), wf.url);
  assert.ok(["Draft", "Sending", "Paused", "PausedAndQueueing"].includes(wf.status), wf.status);
  assert.equal(typeof wf.name, "string");
  assert.ok(wf.mailingListId === null || typeof wf.mailingListId === "string");
  assert.equal(typeof wf.workflowRevisionId, "string");
  assert.equal(typeof wf.rootNodeId, "string");
  assert.ok(wf.nodes[wf.rootNodeId], "rootNodeId is a node");
  assert.ok(TRIGGERS.includes(wf.nodes[wf.rootNodeId].typeName), "the root is the trigger");
  for (const [id, n] of Object.entries(wf.nodes)) {
    assertSimpleNode(n, `node ${id}`);
    for (const c of n.nextNodeIds) assert.ok(wf.nodes[c], `edge ${id} → ${c} points to a node of the workflow`);
    if (id !== wf.rootNodeId) assert.ok(!TRIGGERS.includes(n.typeName), "only the root is a trigger");
  }
}

// Flow tracks one workflow: its latest SimplifiedWorkflow and revision.
class Flow {
  constructor(client, wf) {
    this.client = client;
    this.take(wf);
  }

  get id() { return this.wf.id; }

  get rev() { return this.wf.workflowRevisionId; }

  get root() { return this.wf.rootNodeId; }

  node(id) { return this.wf.nodes[id]; }

  next(id) { return this.wf.nodes[id].nextNodeIds; }

  take(wf) {
    assertWorkflow(wf, { description: "description" in wf });
    this.wf = wf;
    return wf;
  }

  // renewed takes a mutation's workflow, which must carry a new revision.
  renewed(wf, extraRev) {
    const old = this.rev;
    this.take(wf);
    assert.notEqual(this.rev, old, "a mutation returns a new workflowRevisionId");
    if (extraRev !== undefined) assert.equal(extraRev, this.rev, "the response's workflowRevisionId is the workflow's");
    return wf;
  }

  // insert creates a node and returns the created node.
  async insert(mode, nodeTypeName, ...ids) {
    const params = { expectedRevisionId: this.rev, insertMode: mode, nodeTypeName };
    if (mode === "between") [params.fromNodeId, params.toNodeId] = ids;
    if (mode === "after") params.fromNodeId = ids[0];
    if (mode === "before") params.toNodeId = ids[0];
    const res = await this.client.createWorkflowNode(this.id, params);
    assertKeys(res, ["node", "workflow"], "CreateWorkflowNodeResponse");
    this.renewed(res.workflow, res.node.workflowRevisionId);
    assertDetailNode(res.node, { workflowId: this.id, flat: res.node.createdChildNodes ? ["createdChildNodes"] : [] });
    assert.equal(res.node.typeName, nodeTypeName);
    assert.ok(this.node(res.node.id), "the new node is in the workflow");
    return res.node;
  }

  async update(nodeId, payload) {
    const res = await this.client.updateWorkflowNode(this.id, nodeId, { expectedRevisionId: this.rev, payload });
    assertDetailNode(res, { workflowId: this.id, flat: ["workflow"] });
    assert.equal(res.id, nodeId);
    this.renewed(res.workflow, res.workflowRevisionId);
    return res;
  }

  async reload() {
    return this.take(await this.client.getWorkflow(this.id));
  }
}



// ---------------------------------------------------------------------------

for (const backend of backends) {
  describe(`segments, event patterns and workflows via loops SDK 7.3.0 (${backend.name})`, () => {
    const TEAM = "Flow Team";
    const OTHER = "Other Flow Team";
    let env, server, key, otherKey, client, other, listA, listB, otherList;
    const run = `${backend.name}-${Date.now()}`;
    const mail = (local) => `${local}-${run}@example.org`;

    // lasso calls a Lasso extension endpoint with plain fetch.
    const lasso = (action, id, { body, k = key } = {}) => raw(server, "POST", `/api/lasso/workflows/${id}/${action}`, { key: k, body });

    before(async () => {
      env = makeEnv(backend, "workflows");
      key = cli(env, "keys", "create", "--team", TEAM, "--name", "workflows");
      otherKey = cli(env, "keys", "create", "--team", OTHER);
      listA = cli(env, "lists", "create", "--team", TEAM, "--name", "Members");
      listB = cli(env, "lists", "create", "--team", TEAM, "--name", "Beta");
      otherList = cli(env, "lists", "create", "--team", OTHER, "--name", "Theirs");
      assert.match(cli(env, "domains", "add", "--team", TEAM, "--domain", "flows.example.com", "--verified"), /flows\.example\.com/);
      assert.match(cli(env, "domains", "add", "--team", OTHER, "--domain", "other.example.com", "--verified"), /other\.example\.com/);
      server = await startServer(env, ["--rate-limit", "0"]);
      client = sdk(server, key);
      other = sdk(server, otherKey);
    });

    after(async () => {
      if (server) await server.stop();
      dropEnv(env);
    });

    // ---- §5.14 event patterns ------------------------------------------
    describe("event patterns (§5.14)", () => {
      const SPECIAL = "Order placed/refunded? 100% #1 & a+b ünï 🎉";
      let signup;

      test("a new team has none", async () => {
        const page = await client.listEventPatterns();
        assertPage(page, { total: 0, returned: 0, perPage: 20 });
        assert.equal(page.pagination.nextCursor, null);
      });

      test("sendEvent records the pattern with property names and types", async () => {
        assert.deepEqual(await client.sendEvent({
          email: mail("ev1"), eventName: "signup",
          eventProperties: { plan: "pro", trialDays: 14, annual: true, startedAt: "2025-03-01T10:00:00.000Z" },
        }), { success: true });
        signup = await client.getEventPatternByName("signup");
        assertKeys(signup, PATTERN_KEYS, "EventPattern");
        assert.equal(typeof signup.id, "string");
        assert.equal(signup.eventName, "signup");
        assert.equal(signup.incomingWebhookPlatform, null);
        const byName = (a) => [...a].sort((x, y) => x.name.localeCompare(y.name));
        assert.deepEqual(byName(signup.eventProperties), [
          { name: "annual", type: "boolean" },
          { name: "plan", type: "string" },
          { name: "startedAt", type: "date" },
          { name: "trialDays", type: "number" },
        ]);
        // A later event adds new properties; known ones keep their type.
        await client.sendEvent({ email: mail("ev2"), eventName: "signup", eventProperties: { plan: 3, coupon: "SPRING" } });
        const again = await client.getEventPattern(signup.id);
        assert.equal(again.id, signup.id);
        assert.deepEqual(byName(again.eventProperties), [
          { name: "annual", type: "boolean" },
          { name: "coupon", type: "string" },
          { name: "plan", type: "string" },
          { name: "startedAt", type: "date" },
          { name: "trialDays", type: "number" },
        ]);
        assert.deepEqual(await client.getEventPatternByName("signup"), again);
        signup = again;
        // An event without properties has an empty list.
        await client.sendEvent({ email: mail("ev1"), eventName: "ping" });
        const ping = await client.getEventPatternByName("ping");
        assert.deepEqual(ping.eventProperties, []);
        assert.equal(ping.eventName, "ping");
      });

      test("by-name: names are case-sensitive", async () => {
        await client.sendEvent({ email: mail("ev1"), eventName: "PaymentReceived", eventProperties: { amount: 10 } });
        await client.sendEvent({ email: mail("ev1"), eventName: "paymentReceived", eventProperties: { note: "x" } });
        const upper = await client.getEventPatternByName("PaymentReceived");
        const lower = await client.getEventPatternByName("paymentReceived");
        assert.notEqual(upper.id, lower.id);
        assert.equal(upper.eventName, "PaymentReceived");
        assert.equal(lower.eventName, "paymentReceived");
        assert.deepEqual(upper.eventProperties, [{ name: "amount", type: "number" }]);
        assert.deepEqual(lower.eventProperties, [{ name: "note", type: "string" }]);
        await rejectsAPI(client.getEventPatternByName("PAYMENTRECEIVED"), 404);
        await rejectsAPI(client.getEventPatternByName("Signup"), 404);
      });

      test("by-name: the SDK's percent-encoded names (/ ? % # & + space, non-ASCII) are decoded", async () => {
        await client.sendEvent({ email: mail("ev1"), eventName: SPECIAL, eventProperties: { total: 1.5 } });
        const p = await client.getEventPatternByName(SPECIAL);
        assert.equal(p.eventName, SPECIAL);
        assert.deepEqual(p.eventProperties, [{ name: "total", type: "number" }]);
        assert.deepEqual(await client.getEventPattern(p.id), p);
        // The same request by hand, fully percent-encoded.
        const r = await raw(server, "GET", `/api/v1/event-patterns/by-name/${encodeURIComponent(SPECIAL)}`, { key });
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(r.json, p);
        // "%" alone must not match a name that merely contains it.
        await rejectsAPI(client.getEventPatternByName("100%"), 404);
        await rejectsAPI(client.getEventPatternByName("Order placed"), 404);
      });

      test("get: unknown id → 404; malformed id → 400; another team's pattern → 404", async () => {
        await rejectsAPI(client.getEventPattern(UNKNOWN_ID), 404);
        await rejectsAPI(client.getEventPattern("nope"), 400);
        await rejectsAPI(other.getEventPattern(signup.id), 404);
        await rejectsAPI(other.getEventPatternByName("signup"), 404);
        await rejectsAPI(client.getEventPatternByName("never-sent"), 404);
        assertPage(await other.listEventPatterns(), { total: 0, returned: 0, perPage: 20 });
      });

      test("list: summaries only, paginated with nextCursor; perPage / cursor errors → 400", async () => {
        for (let i = 1; i <= 7; i++) await client.sendEvent({ email: mail("ev1"), eventName: `bulk.${i}` });
        // signup, ping, PaymentReceived, paymentReceived, SPECIAL + 7 = 12.
        const pages = await drain((o) => client.listEventPatterns(o), 10);
        assert.equal(pages.length, 2);
        assertPage(pages[0], { total: 12, returned: 10, perPage: 10, path: "event-patterns" });
        assertPage(pages[1], { total: 12, returned: 2, perPage: 10 });
        const all = pages.flatMap((p) => p.data);
        for (const s of all) {
          assertKeys(s, PATTERN_SUMMARY_KEYS, "EventPatternSummary");
          assert.equal(s.incomingWebhookPlatform, null);
        }
        assert.equal(new Set(all.map((s) => s.id)).size, 12);
        assert.deepEqual(all.map((s) => s.eventName).sort(), ["PaymentReceived", SPECIAL, "paymentReceived", "ping", "signup",
          ...[1, 2, 3, 4, 5, 6, 7].map((i) => `bulk.${i}`)].sort());
        assert.ok(all.some((s) => s.id === signup.id && s.eventName === "signup"));
        assertPage(await client.listEventPatterns({ perPage: 50 }), { total: 12, returned: 12, perPage: 50 });
        await rejectsAPI(client.listEventPatterns({ perPage: 5 }), 400);
        await rejectsAPI(client.listEventPatterns({ perPage: 51 }), 400);
        await rejectsAPI(client.listEventPatterns({ perPage: 10, cursor: "not-a-cursor" }), 400);
        assertRawError(await raw(server, "GET", "/api/v1/event-patterns?perPage=ten", { key }), 400);
      });
    });

    // ---- §5.13 audience segments ---------------------------------------
    describe("audience segments (§5.13, §6.6, §11)", () => {
      const power = { match: "all", conditions: [{ type: "property", key: "planName", operator: "equals", value: "pro" }] };
      let first, wfRef;

      before(async () => {
        assert.deepEqual(await client.createContactProperty("planName", "string"), { success: true });
        assert.deepEqual(await client.createContactProperty("signupDate", "date"), { success: true });
        assert.deepEqual(await client.createContactProperty("seats", "number"), { success: true });
      });

      test("a new team has none", async () => {
        assertPage(await client.listAudienceSegments(), { total: 0, returned: 0, perPage: 20 });
      });

      test("create → 200 AudienceSegment; description null when omitted", async () => {
        const r = await raw(server, "POST", "/api/v1/audience-segments", { key, body: { name: "Power users", filter: power } });
        assert.equal(r.status, 200, r.text);
        assertSegment(r.json, { name: "Power users", description: null, filter: power });
        first = r.json;
        const withDesc = await client.createAudienceSegment({ name: "Power users (described)", description: "Contacts on the pro plan", filter: power });
        assertSegment(withDesc, { name: "Power users (described)", description: "Contacts on the pro plan", filter: power });
        assert.notEqual(withDesc.id, first.id);
      });

      test("every condition kind round-trips (property incl. between, optIn, activity)", async () => {
        wfRef = await client.createWorkflow({ name: "Segment reference" });
        const filter = {
          match: "any",
          conditions: [
            { type: "property", key: "signupDate", operator: "between", value: { from: "2025-01-01T00:00:00.000Z", to: "2025-12-31T23:59:59.000Z" } },
            { type: "property", key: "seats", operator: "greaterThan", value: 5 },
            { type: "property", key: "firstName", operator: "notEmpty" },
            { type: "property", key: "subscribed", operator: "isTrue" },
            { type: "optIn", status: "accepted" },
            { type: "optIn", status: null },
            { type: "activity", action: "sent", negate: true, target: "workflow", id: wfRef.id },
          ],
        };
        const g = await client.createAudienceSegment({ name: "Mixed", filter });
        assertSegment(g, { name: "Mixed", description: null, filter });
        assert.deepEqual(await client.getAudienceSegment(g.id), g);
      });

      test("get; unknown id → 404 Audience segment not found.; malformed id → 400; another team → 404", async () => {
        assert.deepEqual(await client.getAudienceSegment(first.id), first);
        await rejectsAPI(client.getAudienceSegment(UNKNOWN_ID), 404, "Audience segment not found.");
        await rejectsAPI(client.getAudienceSegment("nope"), 400);
        await rejectsAPI(other.getAudienceSegment(first.id), 404, "Audience segment not found.");
      });

      test("validation: duplicate name, missing name/filter, empty conditions, bad match/operator/key, limits, unknown keys → 400", async () => {
        await rejectsAPI(client.createAudienceSegment({ name: "Power users", filter: power }), 400);
        await rejectsAPI(client.createAudienceSegment({ filter: power }), 400);
        await rejectsAPI(client.createAudienceSegment({ name: "No filter" }), 400);
        await rejectsAPI(client.createAudienceSegment({ name: "Empty", filter: { match: "all", conditions: [] } }), 400);
        await rejectsAPI(client.createAudienceSegment({ name: "Bad match", filter: { match: "some", conditions: power.conditions } }), 400);
        await rejectsAPI(client.createAudienceSegment({ name: "Bad op", filter: { match: "all", conditions: [{ type: "property", key: "planName", operator: "isAbout", value: "x" }] } }), 400);
        await rejectsAPI(client.createAudienceSegment({ name: "Bad key", filter: { match: "all", conditions: [{ type: "property", key: "noSuchProperty", operator: "equals", value: "x" }] } }), 400);
        await rejectsAPI(client.createAudienceSegment({ name: "Bad type", filter: { match: "all", conditions: [{ type: "tag", key: "planName" }] } }), 400);
        await rejectsAPI(client.createAudienceSegment({ name: "Bad optIn", filter: { match: "all", conditions: [{ type: "optIn", status: "maybe" }] } }), 400);
        await rejectsAPI(client.createAudienceSegment({ name: "x".repeat(256), filter: power }), 400);
        await rejectsAPI(client.createAudienceSegment({ name: "Long description", description: "d".repeat(1001), filter: power }), 400);
        const many = Array.from({ length: 1000 }, (_, i) => ({ type: "property", key: "planName", operator: "equals", value: `p${i}` }));
        await rejectsAPI(client.createAudienceSegment({ name: "Too many", filter: { match: "any", conditions: many } }), 400);
        assertRawError(await raw(server, "POST", "/api/v1/audience-segments", { key, body: { name: "Extra", filter: power, bogus: 1 } }), 400);
        assertRawError(await raw(server, "POST", "/api/v1/audience-segments", { key, body: { name: "Extra filter key", filter: { ...power, nested: [] } } }), 400);
        // Limits are inclusive: 255 / 1000 characters are fine.
        const edge = await client.createAudienceSegment({ name: "n".repeat(255), description: "d".repeat(1000), filter: power });
        assertSegment(edge, { name: "n".repeat(255), description: "d".repeat(1000), filter: power });
      });

      test("activity conditions naming a campaign / workflow / workflow email that does not exist → 404", async () => {
        for (const target of ["campaign", "workflow", "workflowEmail"]) {
          await rejectsAPI(client.createAudienceSegment({
            name: `Ghost ${target}`, filter: { match: "all", conditions: [{ type: "activity", action: "opened", negate: false, target, id: UNKNOWN_ID }] },
          }), 404);
        }
        // Another team's workflow does not exist for this team.
        const theirs = await other.createWorkflow({ name: "Theirs" });
        await rejectsAPI(client.createAudienceSegment({
          name: "Foreign workflow", filter: { match: "all", conditions: [{ type: "activity", action: "sent", negate: false, target: "workflow", id: theirs.id }] },
        }), 404);
      });

      test("list: newest first, paginated; perPage / cursor errors → 400; per team", async () => {
        for (let i = 1; i <= 8; i++) await client.createAudienceSegment({ name: `Page ${i}`, filter: power });
        // Power users, described, Mixed, n×255, Page 1..8 = 12.
        const pages = await drain((o) => client.listAudienceSegments(o), 10);
        assert.equal(pages.length, 2);
        assertPage(pages[0], { total: 12, returned: 10, perPage: 10, path: "audience-segments" });
        assertPage(pages[1], { total: 12, returned: 2, perPage: 10 });
        const all = pages.flatMap((p) => p.data);
        for (const g of all) assertKeys(g, SEGMENT_KEYS, "AudienceSegment");
        assert.deepEqual(all.slice(0, 8).map((g) => g.name), [8, 7, 6, 5, 4, 3, 2, 1].map((i) => `Page ${i}`), "most recently created first");
        assert.deepEqual(all.at(-1), first);
        await rejectsAPI(client.listAudienceSegments({ perPage: 5 }), 400);
        await rejectsAPI(client.listAudienceSegments({ perPage: 10, cursor: UNKNOWN_ID }), 400);
        assertPage(await other.listAudienceSegments(), { total: 0, returned: 0, perPage: 20 });
      });
    });

    // ---- §5.15 workflows -------------------------------------------------
    describe("workflows (§5.15, §6.10)", () => {
      let onboarding, theirs;

      test("createWorkflow → 200 Draft with BlankTrigger → ExitAction", async () => {
        const r = await raw(server, "POST", "/api/v1/workflows", { key, body: { name: "Raw" } });
        assert.equal(r.status, 200, r.text);
        assertWorkflow(r.json);

        const wf = await client.createWorkflow({ name: "Onboarding" });
        assertWorkflow(wf);
        assert.equal(wf.status, "Draft");
        assert.equal(wf.name, "Onboarding");
        assert.equal(wf.mailingListId, null);
        assert.equal(Object.keys(wf.nodes).length, 2);
        const root = wf.nodes[wf.rootNodeId];
        assert.deepEqual(root.typeName, "BlankTrigger");
        assert.equal(root.nextNodeIds.length, 1);
        assert.deepEqual(wf.nodes[root.nextNodeIds[0]], { typeName: "ExitAction", nextNodeIds: [] });
        assert.deepEqual(root, { typeName: "BlankTrigger", nextNodeIds: root.nextNodeIds });
        onboarding = new Flow(client, wf);
        assert.deepEqual(await client.getWorkflow(wf.id), wf);
      });

      test("createWorkflow with description and mailingListId", async () => {
        const wf = await client.createWorkflow({ name: "Members drip", description: "For members", mailingListId: listA });
        assertWorkflow(wf, { description: true });
        assert.equal(wf.description, "For members");
        assert.equal(wf.mailingListId, listA);
        assert.deepEqual(await client.getWorkflow(wf.id), wf);
        const nulled = await client.createWorkflow({ name: "No list", mailingListId: null });
        assert.equal(nulled.mailingListId, null);
      });

      test("createWorkflow validation: missing name, unknown / foreign list, unknown key → 400", async () => {
        await rejectsAPI(client.createWorkflow({}), 400);
        await rejectsAPI(client.createWorkflow({ name: "   " }), 400);
        await rejectsAPI(client.createWorkflow({ name: "Bad list", mailingListId: UNKNOWN_ID }), 400);
        await rejectsAPI(client.createWorkflow({ name: "Foreign list", mailingListId: otherList }), 400);
        assertRawError(await raw(server, "POST", "/api/v1/workflows", { key, body: { name: "X", status: "Sending" } }), 400);
        assertRawError(await raw(server, "POST", "/api/v1/workflows", { key, body: { name: 7 } }), 400);
      });

      test("getWorkflow: unknown → 404 Workflow not found.; malformed → 400; another team → 404", async () => {
        await rejectsAPI(client.getWorkflow(UNKNOWN_ID), 404, "Workflow not found.");
        await rejectsAPI(client.getWorkflow("nope"), 400);
        await rejectsAPI(other.getWorkflow(onboarding.id), 404, "Workflow not found.");
        theirs = new Flow(other, await other.createWorkflow({ name: "Other team's" }));
        await rejectsAPI(client.getWorkflow(theirs.id), 404, "Workflow not found.");
      });

      test("updateWorkflow: name/description → new revision; stale / null revision → 409; nothing changes", async () => {
        const old = onboarding.rev;
        const u = await client.updateWorkflow(onboarding.id, { expectedRevisionId: old, name: "Welcome" });
        onboarding.renewed(u);
        assert.equal(u.name, "Welcome");
        assert.deepEqual(u.nodes, (await client.getWorkflow(onboarding.id)).nodes);
        const d = await client.updateWorkflow(onboarding.id, { expectedRevisionId: onboarding.rev, description: "New signups" });
        onboarding.renewed(d);
        assert.equal(d.description, "New signups");
        assert.equal(d.name, "Welcome");

        await rejectsAPI(client.updateWorkflow(onboarding.id, { expectedRevisionId: old, name: "Stale" }), 409);
        // null is for workflows without a token; this one has one.
        await rejectsAPI(client.updateWorkflow(onboarding.id, { expectedRevisionId: null, name: "Null" }), 409);
        assert.deepEqual(await client.getWorkflow(onboarding.id), onboarding.wf);
      });

      test("updateWorkflow validation → 400; unknown / foreign id → 404", async () => {
        // The SDK drops an undefined expectedRevisionId: the key is missing.
        await rejectsAPI(client.updateWorkflow(onboarding.id, { name: "No token" }), 400);
        await rejectsAPI(client.updateWorkflow(onboarding.id, { expectedRevisionId: onboarding.rev }), 400);
        await rejectsAPI(client.updateWorkflow(onboarding.id, { expectedRevisionId: onboarding.rev, name: "" }), 400);
        assertRawError(await raw(server, "POST", `/api/v1/workflows/${onboarding.id}`, { key, body: { expectedRevisionId: onboarding.rev, mailingListId: listA } }), 400);
        assertRawError(await raw(server, "POST", `/api/v1/workflows/${onboarding.id}`, { key, body: { expectedRevisionId: 5, name: "x" } }), 400);
        await rejectsAPI(client.updateWorkflow(UNKNOWN_ID, { expectedRevisionId: null, name: "Ghost" }), 404, "Workflow not found.");
        await rejectsAPI(client.updateWorkflow("nope", { expectedRevisionId: null, name: "Ghost" }), 400);
        await rejectsAPI(other.updateWorkflow(onboarding.id, { expectedRevisionId: onboarding.rev, name: "Hijack" }), 404, "Workflow not found.");
        assert.deepEqual(await client.getWorkflow(onboarding.id), onboarding.wf);
      });

      test("listWorkflows: summaries, newest first, paginated; errors → 400; per team", async () => {
        // Raw, Onboarding, Members drip, No list, Segment reference + 7 = 12.
        const made = [];
        for (let i = 1; i <= 7; i++) made.push((await client.createWorkflow({ name: `Bulk ${i}` })).id);
        const pages = await drain((o) => client.listWorkflows(o), 10);
        assert.equal(pages.length, 2);
        assertPage(pages[0], { total: 12, returned: 10, perPage: 10, path: "workflows" });
        assertPage(pages[1], { total: 12, returned: 2, perPage: 10 });
        const all = pages.flatMap((p) => p.data);
        for (const s of all) {
          assertKeys(s, WF_SUMMARY_KEYS, "WorkflowSummary");
          assert.ok(s.url.endsWith(`/workflows/${s.id}`), s.url);
          assert.match(s.createdAt, ISO);
          assert.match(s.updatedAt, ISO);
        }
        assert.deepEqual(all.slice(0, 7).map((s) => s.id), [...made].reverse(), "most recently created first");
        const ob = all.find((s) => s.id === onboarding.id);
        assert.equal(ob.name, "Welcome");
        assert.ok(ob.updatedAt >= ob.createdAt);
        assert.ok(!all.some((s) => s.id === theirs.id), "another team's workflow is not listed");
        await rejectsAPI(client.listWorkflows({ perPage: 5 }), 400);
        await rejectsAPI(client.listWorkflows({ perPage: 51 }), 400);
        await rejectsAPI(client.listWorkflows({ perPage: 10, cursor: "zzz" }), 400);
        await rejectsAPI(client.listWorkflows({ perPage: 10, cursor: theirs.id }), 400);
        assertPage(await other.listWorkflows(), { total: 2, returned: 2, perPage: 20 });
      });

      test("changeWorkflowMailingList on a draft: dryRun → preview, nothing changes; apply; clear", async () => {
        const before = onboarding.rev;
        const dry = await client.changeWorkflowMailingList(onboarding.id, { expectedRevisionId: before, mailingListId: listA, dryRun: true });
        assert.deepEqual(dry, { status: "dryRun", mailingListId: listA, queuedContactCount: 0 });
        assert.deepEqual(await client.getWorkflow(onboarding.id), onboarding.wf, "a dry run changes nothing, not even the revision");

        const set = await client.changeWorkflowMailingList(onboarding.id, { expectedRevisionId: before, mailingListId: listA });
        assertKeys(set, ["status", "mailingListId", "workflowRevisionId", "queuedContactCount", "workflow"], "WorkflowMailingListUpdatedResponse");
        assert.equal(set.status, "updated");
        assert.equal(set.mailingListId, listA);
        assert.equal(set.queuedContactCount, 0);
        onboarding.renewed(set.workflow, set.workflowRevisionId);
        assert.equal(onboarding.wf.mailingListId, listA);

        const swap = await client.changeWorkflowMailingList(onboarding.id, { expectedRevisionId: onboarding.rev, mailingListId: listB, queuedContactPolicy: "fail" });
        assert.equal(swap.status, "updated");
        onboarding.renewed(swap.workflow, swap.workflowRevisionId);
        assert.equal(onboarding.wf.mailingListId, listB);

        const clear = await client.changeWorkflowMailingList(onboarding.id, { expectedRevisionId: onboarding.rev, mailingListId: null });
        assert.equal(clear.status, "updated");
        assert.equal(clear.mailingListId, null);
        onboarding.renewed(clear.workflow, clear.workflowRevisionId);
        assert.equal(onboarding.wf.mailingListId, null);
        assert.deepEqual(await client.getWorkflow(onboarding.id), onboarding.wf);
      });

      test("changeWorkflowMailingList errors: stale → 409; unknown / foreign list, bad policy, missing keys → 400; unknown workflow → 404", async () => {
        const rev = onboarding.rev;
        await rejectsAPI(client.changeWorkflowMailingList(onboarding.id, { expectedRevisionId: UNKNOWN_ID, mailingListId: listA }), 409);
        await rejectsAPI(client.changeWorkflowMailingList(onboarding.id, { expectedRevisionId: rev, mailingListId: UNKNOWN_ID }), 400);
        await rejectsAPI(client.changeWorkflowMailingList(onboarding.id, { expectedRevisionId: rev, mailingListId: otherList }), 400);
        await rejectsAPI(client.changeWorkflowMailingList(onboarding.id, { expectedRevisionId: rev, mailingListId: listA, queuedContactPolicy: "keep" }), 400);
        await rejectsAPI(client.changeWorkflowMailingList(onboarding.id, { expectedRevisionId: rev, mailingListId: listA, dryRun: "yes" }), 400);
        // mailingListId is required (null to clear): the SDK drops undefined.
        await rejectsAPI(client.changeWorkflowMailingList(onboarding.id, { expectedRevisionId: rev }), 400);
        await rejectsAPI(client.changeWorkflowMailingList(onboarding.id, { mailingListId: listA }), 400);
        assertRawError(await raw(server, "POST", `/api/v1/workflows/${onboarding.id}/mailing-list`, { key, body: { expectedRevisionId: rev, mailingListId: listA, name: "x" } }), 400);
        await rejectsAPI(client.changeWorkflowMailingList(UNKNOWN_ID, { expectedRevisionId: rev, mailingListId: listA }), 404, "Workflow not found.");
        await rejectsAPI(other.changeWorkflowMailingList(onboarding.id, { expectedRevisionId: rev, mailingListId: otherList }), 404, "Workflow not found.");
        assert.deepEqual(await client.getWorkflow(onboarding.id), onboarding.wf);
      });

      test("deleteWorkflow: stale → 409 (not the confirmation message); draft → 204; then 404 everywhere", async () => {
        const doomed = new Flow(client, await client.createWorkflow({ name: "Doomed" }));
        const timer = await doomed.insert("after", "TimerAction", doomed.root);
        const e = await rejectsAPI(client.deleteWorkflow(doomed.id, { expectedRevisionId: onboarding.rev }), 409);
        assert.ok(!e.json.message.endsWith(CONFIRM_SUFFIX), e.json.message);
        await rejectsAPI(other.deleteWorkflow(doomed.id, { expectedRevisionId: doomed.rev }), 404, "Workflow not found.");
        await rejectsAPI(client.deleteWorkflow(doomed.id, { expectedRevisionId: doomed.rev, confirmDelete: "yes" }), 400);
        await rejectsAPI(client.deleteWorkflow(doomed.id, {}), 400);
        // No queued contacts and not sending: no confirmation needed.
        assert.equal(await client.deleteWorkflow(doomed.id, { expectedRevisionId: doomed.rev }), undefined);
        await rejectsAPI(client.getWorkflow(doomed.id), 404, "Workflow not found.");
        await rejectsAPI(client.getWorkflowNode(doomed.id, timer.id), 404);
        await rejectsAPI(client.updateWorkflow(doomed.id, { expectedRevisionId: doomed.rev, name: "Back" }), 404, "Workflow not found.");
        await rejectsAPI(client.createWorkflowNode(doomed.id, { expectedRevisionId: doomed.rev, insertMode: "after", nodeTypeName: "TimerAction", fromNodeId: doomed.root }), 404);
        await rejectsAPI(client.deleteWorkflow(doomed.id, { expectedRevisionId: doomed.rev, confirmDelete: true }), 404);
        const list = await client.listWorkflows({ perPage: 50 });
        assert.ok(!list.data.some((s) => s.id === doomed.id));
        assert.equal(list.pagination.totalResults, 12);
        // 204 with an empty body, checked by hand too.
        const d2 = await client.createWorkflow({ name: "Doomed 2" });
        const r = await raw(server, "DELETE", `/api/v1/workflows/${d2.id}`, { key, body: { expectedRevisionId: d2.workflowRevisionId } });
        assert.equal(r.status, 204);
        assert.equal(r.text, "");
      });
    });

    // ---- §5.16 workflow nodes --------------------------------------------
    describe("workflow nodes (§5.16, §10)", () => {
      let f, exit, timer, timer2, email, filter, branch, experiment, segment;

      before(async () => {
        f = new Flow(client, await client.createWorkflow({ name: "Graph" }));
        exit = f.next(f.root)[0];
        segment = await client.createAudienceSegment({ name: "Node segment", filter: { match: "all", conditions: [{ type: "property", key: "planName", operator: "equals", value: "team" }] } });
      });

      test("after: TimerAction with defaults {amount: 0, unit: m} between the trigger and the exit", async () => {
        timer = await f.insert("after", "TimerAction", f.root);
        assertKeys(timer, ["id", "workflowId", "typeName", "nextNodeIds", "amount", "unit", "workflowRevisionId"], "TimerAction node");
        assert.equal(timer.amount, 0);
        assert.equal(timer.unit, "m");
        assert.deepEqual(timer.nextNodeIds, [exit]);
        assert.deepEqual(f.next(f.root), [timer.id]);
        assert.deepEqual(f.node(timer.id), { typeName: "TimerAction", nextNodeIds: [exit], amount: 0, unit: "m" });
      });

      test("before: SendEmailAction creates its empty email message", async () => {
        email = await f.insert("before", "SendEmailAction", exit);
        assertKeys(email, ["id", "workflowId", "typeName", "nextNodeIds", "emailMessageId", "subject", "workflowRevisionId"], "SendEmailAction node");
        assert.equal(typeof email.emailMessageId, "string");
        assert.equal(email.subject, "");
        assert.deepEqual(email.nextNodeIds, [exit]);
        assert.deepEqual(f.next(timer.id), [email.id]);
        assert.deepEqual(f.node(email.id), { typeName: "SendEmailAction", nextNodeIds: [exit], emailMessageId: email.emailMessageId, subject: "" });
        const m = await client.getEmailMessage(email.emailMessageId);
        assertKeys(m, EM_KEYS, "EmailMessage of a workflow node");
        assert.equal(m.id, email.emailMessageId);
        assert.equal(m.subject, "");
        assert.equal(m.lmx, "");
      });

      test("between: AudienceFilter with null filter and segment", async () => {
        filter = await f.insert("between", "AudienceFilter", timer.id, email.id);
        assertKeys(filter, ["id", "workflowId", "typeName", "nextNodeIds", "audienceSegmentId", "audienceFilter", "appliesDownstream", "workflowRevisionId"], "AudienceFilter node");
        assert.equal(filter.audienceSegmentId, null);
        assert.equal(filter.audienceFilter, null);
        assert.equal(filter.appliesDownstream, false);
        assert.deepEqual(f.next(timer.id), [filter.id]);
        assert.deepEqual(f.node(filter.id), { typeName: "AudienceFilter", nextNodeIds: [email.id] });
      });

      test("before with the deprecated beforeNodeId works", async () => {
        const res = await client.createWorkflowNode(f.id, { expectedRevisionId: f.rev, insertMode: "before", nodeTypeName: "TimerAction", beforeNodeId: exit });
        f.renewed(res.workflow, res.node.workflowRevisionId);
        assert.deepEqual(res.node.nextNodeIds, [exit]);
        assert.deepEqual(f.next(email.id), [res.node.id]);
        timer2 = res.node;
        // Trigger → timer → filter → email → timer2 → exit.
        assert.equal(Object.keys(f.wf.nodes).length, 6);
      });

      test("BranchNode creates two AudienceFilter children (createdChildNodes); ExperimentBranchNode two variants + one control", async () => {
        branch = await f.insert("after", "BranchNode", f.root);
        const kids = branch.createdChildNodes;
        assert.ok(Array.isArray(kids) && kids.length === 2, JSON.stringify(branch));
        assert.deepEqual(branch.nextNodeIds, kids.map((k) => k.id));
        for (const k of kids) {
          assertDetailNode(k, { workflowId: f.id, revision: false });
          assert.equal(k.typeName, "AudienceFilter");
          assert.equal(k.audienceFilter, null);
          assert.equal(k.audienceSegmentId, null);
          assert.equal(k.appliesDownstream, false);
          assert.deepEqual(f.node(k.id).typeName, "AudienceFilter");
        }
        assert.deepEqual(f.node(branch.id), { typeName: "BranchNode", nextNodeIds: branch.nextNodeIds });

        experiment = await f.insert("between", "ExperimentBranchNode", kids[0].id, timer.id);
        const variants = experiment.createdChildNodes;
        assert.equal(variants.length, 3);
        assert.deepEqual(experiment.nextNodeIds, variants.map((v) => v.id));
        assert.equal(typeof experiment.samplingRate, "number");
        assert.ok(experiment.samplingRate >= 0 && experiment.samplingRate <= 100);
        for (const v of variants) {
          assertDetailNode(v, { workflowId: f.id, revision: false });
          assert.equal(v.typeName, "VariantNode");
        }
        assert.equal(variants.filter((v) => v.isControl === true).length, 1, "exactly one control variant");
        assert.equal(f.node(experiment.id).samplingRate, experiment.samplingRate);
      });

      test("insert errors: between not connected, after 0/>1 outgoing or exit, before trigger, variants, types, modes → 400", async () => {
        const rev = f.rev;
        const bad = (params) => rejectsAPI(client.createWorkflowNode(f.id, { expectedRevisionId: rev, ...params }), 400);
        await bad({ insertMode: "between", nodeTypeName: "TimerAction", fromNodeId: f.root, toNodeId: exit });
        await bad({ insertMode: "after", nodeTypeName: "TimerAction", fromNodeId: exit });
        await bad({ insertMode: "after", nodeTypeName: "TimerAction", fromNodeId: branch.id });
        await bad({ insertMode: "after", nodeTypeName: "TimerAction", fromNodeId: experiment.id });
        await bad({ insertMode: "before", nodeTypeName: "TimerAction", toNodeId: f.root });
        await bad({ insertMode: "before", nodeTypeName: "VariantNode", toNodeId: exit });
        await bad({ insertMode: "before", nodeTypeName: "TimerAction", toNodeId: exit, beforeNodeId: exit });
        await bad({ insertMode: "before", nodeTypeName: "TimerAction" });
        await bad({ insertMode: "before", nodeTypeName: "TimerAction", fromNodeId: timer.id, toNodeId: exit });
        await bad({ insertMode: "after", nodeTypeName: "TimerAction", fromNodeId: timer.id, toNodeId: exit });
        await bad({ insertMode: "between", nodeTypeName: "TimerAction", fromNodeId: timer.id });
        await bad({ insertMode: "after", nodeTypeName: "VariantNode", fromNodeId: timer.id });
        await bad({ insertMode: "between", nodeTypeName: "TimerAction", fromNodeId: experiment.id, toNodeId: experiment.nextNodeIds[0] });
        await bad({ insertMode: "between", nodeTypeName: "VariantNode", fromNodeId: experiment.id, toNodeId: experiment.nextNodeIds[0] });
        await bad({ insertMode: "before", nodeTypeName: "TimerAction", toNodeId: experiment.nextNodeIds[0] });
        for (const t of ["ExitAction", "EventTrigger", "BlankTrigger", "Nope"]) await bad({ insertMode: "after", nodeTypeName: t, fromNodeId: timer.id });
        await bad({ insertMode: "sideways", nodeTypeName: "TimerAction", fromNodeId: timer.id });
        await bad({ nodeTypeName: "TimerAction", fromNodeId: timer.id });
        await bad({ insertMode: "after", nodeTypeName: "TimerAction", fromNodeId: "nope" });
        assertRawError(await raw(server, "POST", `/api/v1/workflows/${f.id}/nodes`, { key, body: { expectedRevisionId: rev, insertMode: "after", nodeTypeName: "TimerAction", fromNodeId: timer.id, amount: 5 } }), 400);
        // Nothing changed.
        assert.deepEqual(await client.getWorkflow(f.id), f.wf);
      });

      test("insert: unknown node → 404; unknown / foreign workflow → 404; stale / null revision → 409", async () => {
        const ok = { insertMode: "after", nodeTypeName: "TimerAction", fromNodeId: timer.id };
        await rejectsAPI(client.createWorkflowNode(f.id, { expectedRevisionId: f.rev, insertMode: "after", nodeTypeName: "TimerAction", fromNodeId: UNKNOWN_ID }), 404);
        await rejectsAPI(client.createWorkflowNode(f.id, { expectedRevisionId: f.rev, insertMode: "before", nodeTypeName: "TimerAction", toNodeId: UNKNOWN_ID }), 404);
        await rejectsAPI(client.createWorkflowNode(UNKNOWN_ID, { expectedRevisionId: f.rev, ...ok }), 404, "Workflow not found.");
        await rejectsAPI(other.createWorkflowNode(f.id, { expectedRevisionId: f.rev, ...ok }), 404, "Workflow not found.");
        await rejectsAPI(client.createWorkflowNode(f.id, { expectedRevisionId: UNKNOWN_ID, ...ok }), 409);
        await rejectsAPI(client.createWorkflowNode(f.id, { expectedRevisionId: null, ...ok }), 409);
        // A node of another workflow is not a node of this one.
        const g = await client.createWorkflow({ name: "Elsewhere" });
        await rejectsAPI(client.createWorkflowNode(f.id, { expectedRevisionId: f.rev, insertMode: "after", nodeTypeName: "TimerAction", fromNodeId: g.rootNodeId }), 404);
        assert.deepEqual(await client.getWorkflow(f.id), f.wf);
      });

      test("getWorkflowNode: detail shape per type with the current revision; 404s; 400 for malformed ids", async () => {
        for (const [id, n] of Object.entries(f.wf.nodes)) {
          const d = await client.getWorkflowNode(f.id, id);
          assertDetailNode(d, { workflowId: f.id });
          assert.equal(d.id, id);
          assert.equal(d.typeName, n.typeName);
          assert.deepEqual(d.nextNodeIds, n.nextNodeIds);
          assert.equal(d.workflowRevisionId, f.rev);
          for (const k of SIMPLE_EXTRA[n.typeName][0]) assert.deepEqual(d[k], n[k], `${n.typeName}.${k}`);
        }
        const root = await client.getWorkflowNode(f.id, f.root);
        assertKeys(root, ["id", "workflowId", "typeName", "nextNodeIds", "workflowRevisionId"], "BlankTrigger detail");
        assert.deepEqual(root.nextNodeIds, [branch.id]);
        await rejectsAPI(client.getWorkflowNode(f.id, UNKNOWN_ID), 404);
        await rejectsAPI(client.getWorkflowNode(f.id, "nope"), 400);
        await rejectsAPI(client.getWorkflowNode(UNKNOWN_ID, timer.id), 404, "Workflow not found.");
        await rejectsAPI(other.getWorkflowNode(f.id, timer.id), 404, "Workflow not found.");
        const g = await client.createWorkflow({ name: "Elsewhere 2" });
        await rejectsAPI(client.getWorkflowNode(g.id, timer.id), 404);
      });

      test("updateWorkflowNode TimerAction: flat node + workflowRevisionId + workflow; bad values → 400", async () => {
        const res = await f.update(timer.id, { amount: 2, unit: "h" });
        assertKeys(res, ["id", "workflowId", "typeName", "nextNodeIds", "amount", "unit", "workflowRevisionId", "workflow"], "UpdateWorkflowNodeResponse");
        assert.equal(res.amount, 2);
        assert.equal(res.unit, "h");
        assert.deepEqual(f.node(timer.id), { typeName: "TimerAction", nextNodeIds: res.nextNodeIds, amount: 2, unit: "h" });
        assert.equal((await f.update(timer.id, { amount: 0 })).amount, 0);
        assert.equal((await f.update(timer.id, { unit: "d" })).unit, "d");
        const bad = (payload) => rejectsAPI(client.updateWorkflowNode(f.id, timer.id, { expectedRevisionId: f.rev, payload }), 400);
        await bad({ amount: -1 });
        await bad({ amount: 1.5 });
        await bad({ amount: "3" });
        await bad({ unit: "w" });
        await bad({ samplingRate: 3 });
        await bad({ typeName: "EventTrigger" });
        await bad({});
        await bad(null);
        assertRawError(await raw(server, "POST", `/api/v1/workflows/${f.id}/nodes/${timer.id}`, { key, body: { expectedRevisionId: f.rev } }), 400);
        assertRawError(await raw(server, "POST", `/api/v1/workflows/${f.id}/nodes/${timer.id}`, { key, body: { expectedRevisionId: f.rev, payload: { amount: 1 }, extra: 1 } }), 400);
        assert.deepEqual(await client.getWorkflowNode(f.id, timer.id), { id: timer.id, workflowId: f.id, typeName: "TimerAction", nextNodeIds: f.next(timer.id), amount: 0, unit: "d", workflowRevisionId: f.rev });
      });

      test("updateWorkflowNode AudienceFilter: filter, segment (clears the filter), both, null; unknown / foreign segment → 404", async () => {
        const af = { match: "all", conditions: [{ type: "property", key: "firstName", operator: "equals", value: "Ann" }] };
        let res = await f.update(filter.id, { audienceFilter: af, appliesDownstream: true });
        assert.deepEqual(res.audienceFilter, af);
        assert.equal(res.appliesDownstream, true);
        assert.equal(res.audienceSegmentId, null);
        assert.deepEqual(f.node(filter.id), { typeName: "AudienceFilter", nextNodeIds: res.nextNodeIds });
        res = await f.update(filter.id, { audienceSegmentId: segment.id });
        assert.equal(res.audienceSegmentId, segment.id);
        assert.equal(res.audienceFilter, null, "a segment without a filter clears the filter");
        assert.equal(res.appliesDownstream, true);
        res = await f.update(filter.id, { audienceSegmentId: segment.id, audienceFilter: af });
        assert.equal(res.audienceSegmentId, segment.id);
        assert.deepEqual(res.audienceFilter, af);
        res = await f.update(filter.id, { audienceFilter: null, audienceSegmentId: null, appliesDownstream: false });
        assert.equal(res.audienceFilter, null);
        assert.equal(res.audienceSegmentId, null);
        assert.equal(res.appliesDownstream, false);

        await rejectsAPI(client.updateWorkflowNode(f.id, filter.id, { expectedRevisionId: f.rev, payload: { audienceSegmentId: UNKNOWN_ID } }), 404);
        const foreign = await other.createAudienceSegment({ name: "Theirs", filter: { match: "all", conditions: [{ type: "optIn", status: null }] } });
        await rejectsAPI(client.updateWorkflowNode(f.id, filter.id, { expectedRevisionId: f.rev, payload: { audienceSegmentId: foreign.id } }), 404);
        const bad = (payload) => rejectsAPI(client.updateWorkflowNode(f.id, filter.id, { expectedRevisionId: f.rev, payload }), 400);
        await bad({ audienceFilter: { match: "some", conditions: af.conditions } });
        await bad({ audienceFilter: { match: "all", conditions: [{ type: "property", key: "nope", operator: "equals", value: "x" }] } });
        await bad({ appliesDownstream: "yes" });
        await bad({ amount: 1 });
        assert.deepEqual(await client.getWorkflow(f.id), f.wf);
      });

      test("updateWorkflowNode ExperimentBranchNode samplingRate and VariantNode isControl (the control flag moves)", async () => {
        const res = await f.update(experiment.id, { samplingRate: 20 });
        assert.equal(res.samplingRate, 20);
        assert.equal(f.node(experiment.id).samplingRate, 20);
        assert.equal((await f.update(experiment.id, { samplingRate: 100 })).samplingRate, 100);
        for (const v of [-1, 101, 2.5, "50"]) await rejectsAPI(client.updateWorkflowNode(f.id, experiment.id, { expectedRevisionId: f.rev, payload: { samplingRate: v } }), 400);
        const variants = f.next(experiment.id);
        const regular = variants.find((v) => f.node(v).isControl !== true);
        const v = await f.update(regular, { isControl: true });
        assert.equal(v.isControl, true);
        assert.deepEqual(variants.filter((id) => f.node(id).isControl === true), [regular], "one control after the move");
        await rejectsAPI(client.updateWorkflowNode(f.id, regular, { expectedRevisionId: f.rev, payload: { isControl: "yes" } }), 400);
      });

      test("updateWorkflowNode → 501 This node update is not implemented. for SendEmailAction, BranchNode, BlankTrigger, ExitAction", async () => {
        const rev = f.rev;
        await rejectsAPI(client.updateWorkflowNode(f.id, email.id, { expectedRevisionId: rev, payload: { subject: "x" } }), 501, NOT_IMPLEMENTED);
        await rejectsAPI(client.updateWorkflowNode(f.id, branch.id, { expectedRevisionId: rev, payload: { evalStrategy: "first" } }), 501, NOT_IMPLEMENTED);
        await rejectsAPI(client.updateWorkflowNode(f.id, f.root, { expectedRevisionId: rev, payload: { reEligible: true } }), 501, NOT_IMPLEMENTED);
        await rejectsAPI(client.updateWorkflowNode(f.id, exit, { expectedRevisionId: rev, payload: { amount: 1 } }), 501, NOT_IMPLEMENTED);
        assert.equal((await client.getWorkflow(f.id)).workflowRevisionId, rev);
      });

      test("updateWorkflowNode triggers: Blank → EventTrigger (name / pattern / null) → ContactPropertyTrigger → SignupTrigger → AddToListTrigger", async () => {
        let t = await f.update(f.root, { typeName: "EventTrigger", eventName: "signup", reEligible: true });
        assertKeys(t, ["id", "workflowId", "typeName", "nextNodeIds", "eventName", "eventProperties", "reEligible", "workflowRevisionId", "workflow"], "EventTrigger");
        assert.equal(t.eventName, "signup");
        assert.equal(t.reEligible, true);
        const pattern = await client.getEventPatternByName("signup");
        assert.deepEqual(t.eventProperties, pattern.eventProperties, "the trigger shows the event pattern's properties");
        assert.deepEqual(f.node(f.root), { typeName: "EventTrigger", nextNodeIds: [branch.id], eventName: "signup", reEligible: true });
        const d = await client.getWorkflowNode(f.id, f.root);
        assert.deepEqual(d.eventProperties, pattern.eventProperties);

        const ping = await client.getEventPatternByName("PaymentReceived");
        t = await f.update(f.root, { eventPatternId: ping.id });
        assert.equal(t.eventName, "PaymentReceived");
        assert.deepEqual(t.eventProperties, [{ name: "amount", type: "number" }]);
        t = await f.update(f.root, { eventName: "not.sent.yet" });
        assert.equal(t.eventName, "not.sent.yet");
        assert.deepEqual(t.eventProperties, []);
        t = await f.update(f.root, { eventPatternId: null });
        assert.equal(t.eventName, null);
        assert.equal(f.node(f.root).eventName, null);

        const bad = (payload) => rejectsAPI(client.updateWorkflowNode(f.id, f.root, { expectedRevisionId: f.rev, payload }), 400);
        await bad({ eventName: "a", eventPatternId: ping.id });
        await bad({ eventPatternId: UNKNOWN_ID });
        await bad({ eventPatternId: (await other.createWorkflow({ name: "x" })).id });
        await bad({ typeName: "BlankTrigger" });
        await bad({ typeName: "TimerAction" });
        await bad({ amount: 1 });
        await bad({ reEligible: "yes" });

        const query = { key: "firstName", is: { value: "Ann", operator: "equal" }, was: { value: "", operator: "any" } };
        t = await f.update(f.root, { typeName: "ContactPropertyTrigger", contactPropertyQuery: query, reEligible: false });
        assert.deepEqual(t.contactPropertyQuery, query);
        assert.equal(t.reEligible, false);
        assert.deepEqual(f.node(f.root), { typeName: "ContactPropertyTrigger", nextNodeIds: [branch.id], contactPropertyQuery: query, reEligible: false });
        await bad({ contactPropertyQuery: { ...query, key: "createdAt" } });
        await bad({ contactPropertyQuery: { ...query, key: "noSuchProperty" } });
        await bad({ contactPropertyQuery: { ...query, is: { value: 1, operator: "greater_than" } } });
        await bad({ contactPropertyQuery: { key: "seats", is: { value: 1, operator: "empty" }, was: { value: 1, operator: "any" } } });
        await bad({ contactPropertyQuery: { key: "firstName", is: query.is } });
        const num = { key: "seats", is: { value: 10, operator: "greater_than" }, was: { value: 10, operator: "less_than" } };
        assert.deepEqual((await f.update(f.root, { contactPropertyQuery: num })).contactPropertyQuery, num);

        t = await f.update(f.root, { typeName: "SignupTrigger" });
        assertKeys(t, ["id", "workflowId", "typeName", "nextNodeIds", "workflowRevisionId", "workflow"], "SignupTrigger");
        assert.deepEqual(f.node(f.root), { typeName: "SignupTrigger", nextNodeIds: [branch.id] });

        t = await f.update(f.root, { typeName: "AddToListTrigger", reEligible: true });
        assert.equal(t.mailingListId, null, "the trigger's list is the workflow's (none yet)");
        assert.equal(t.reEligible, true);
        const set = await client.changeWorkflowMailingList(f.id, { expectedRevisionId: f.rev, mailingListId: listA });
        f.renewed(set.workflow, set.workflowRevisionId);
        assert.deepEqual(f.node(f.root), { typeName: "AddToListTrigger", nextNodeIds: [branch.id], mailingListId: listA, reEligible: true });
        assert.equal((await client.getWorkflowNode(f.id, f.root)).mailingListId, listA);
      });

      test("updateWorkflowNode: stale / null revision → 409; unknown node / workflow, another team → 404", async () => {
        await rejectsAPI(client.updateWorkflowNode(f.id, timer.id, { expectedRevisionId: UNKNOWN_ID, payload: { amount: 1 } }), 409);
        await rejectsAPI(client.updateWorkflowNode(f.id, timer.id, { expectedRevisionId: null, payload: { amount: 1 } }), 409);
        await rejectsAPI(client.updateWorkflowNode(f.id, UNKNOWN_ID, { expectedRevisionId: f.rev, payload: { amount: 1 } }), 404);
        await rejectsAPI(client.updateWorkflowNode(UNKNOWN_ID, timer.id, { expectedRevisionId: f.rev, payload: { amount: 1 } }), 404);
        await rejectsAPI(other.updateWorkflowNode(f.id, timer.id, { expectedRevisionId: f.rev, payload: { amount: 1 } }), 404);
        assert.deepEqual(await client.getWorkflow(f.id), f.wf);
      });

      test("addWorkflowBranch: AudienceFilter under a BranchNode, VariantNode under an experiment; other targets → 400", async () => {
        const res = await client.addWorkflowBranch(f.id, branch.id, { expectedRevisionId: f.rev });
        assertKeys(res, ["node", "workflow"], "AddWorkflowBranchResponse");
        f.renewed(res.workflow, res.node.workflowRevisionId);
        assertKeys(res.node, ["id", "workflowId", "typeName", "nextNodeIds", "audienceSegmentId", "audienceFilter", "appliesDownstream", "workflowRevisionId"], "added AudienceFilter");
        assert.equal(res.node.typeName, "AudienceFilter");
        assert.deepEqual(res.node.nextNodeIds, []);
        assert.equal(res.node.audienceSegmentId, null);
        assert.equal(res.node.audienceFilter, null);
        assert.equal(res.node.appliesDownstream, false);
        assert.equal(f.next(branch.id).length, 3);
        assert.equal(f.next(branch.id).at(-1), res.node.id);

        const v = await client.addWorkflowBranch(f.id, experiment.id, { expectedRevisionId: f.rev });
        f.renewed(v.workflow, v.node.workflowRevisionId);
        assert.equal(v.node.typeName, "VariantNode");
        assert.notEqual(v.node.isControl, true);
        assert.equal(f.next(experiment.id).length, 4);

        for (const target of [timer.id, f.root, exit, filter.id]) await rejectsAPI(client.addWorkflowBranch(f.id, target, { expectedRevisionId: f.rev }), 400);
        assertRawError(await raw(server, "POST", `/api/v1/workflows/${f.id}/nodes/${branch.id}/add-branch`, { key, body: { expectedRevisionId: f.rev, nodeTypeName: "AudienceFilter" } }), 400);
        await rejectsAPI(client.addWorkflowBranch(f.id, branch.id, { expectedRevisionId: UNKNOWN_ID }), 409);
        await rejectsAPI(client.addWorkflowBranch(f.id, UNKNOWN_ID, { expectedRevisionId: f.rev }), 404);
        await rejectsAPI(other.addWorkflowBranch(f.id, branch.id, { expectedRevisionId: f.rev }), 404, "Workflow not found.");
        assert.deepEqual(await client.getWorkflow(f.id), f.wf);
      });

      test("rerouteWorkflowNode: the updated source node + workflow; invalid sources / targets → 400", async () => {
        // Trigger → branch → [left → experiment → variants (three → timer), right → timer, third arm (dead end)].
        const arms = f.next(branch.id);
        const [left, right] = arms;
        const leftNext = f.next(left)[0];
        assert.equal(leftNext, experiment.id);
        assert.deepEqual(f.next(right), [timer.id]);
        const res = await client.rerouteWorkflowNode(f.id, right, { expectedRevisionId: f.rev, newTargetNodeId: exit });
        assertDetailNode(res, { workflowId: f.id, flat: ["workflow"] });
        assert.equal(res.id, right);
        assert.equal(res.typeName, "AudienceFilter");
        assert.deepEqual(res.nextNodeIds, [exit]);
        f.renewed(res.workflow, res.workflowRevisionId);
        assert.deepEqual(f.next(right), [exit]);

        const bad = (node, target) => rejectsAPI(client.rerouteWorkflowNode(f.id, node, { expectedRevisionId: f.rev, newTargetNodeId: target }), 400);
        await bad(branch.id, exit); // branch nodes cannot be rerouted
        await bad(experiment.id, exit);
        await bad(arms[2], exit); // no outgoing connection
        await bad(left, f.root); // a trigger is not a target
        await bad(left, left); // itself
        await bad(left, leftNext); // already points there
        await bad(left, UNKNOWN_ID);
        await bad(left, f.next(experiment.id)[0]); // a variant outside its experiment
        await bad(left, exit); // the experiment would be left without an incoming connection
        await bad(timer2.id, branch.id); // a loop (the exit keeps the right arm as parent)
        await rejectsAPI(client.rerouteWorkflowNode(f.id, left, { expectedRevisionId: f.rev }), 400);
        await rejectsAPI(client.rerouteWorkflowNode(f.id, left, { expectedRevisionId: UNKNOWN_ID, newTargetNodeId: timer.id }), 409);
        await rejectsAPI(client.rerouteWorkflowNode(f.id, UNKNOWN_ID, { expectedRevisionId: f.rev, newTargetNodeId: exit }), 404);
        await rejectsAPI(other.rerouteWorkflowNode(f.id, left, { expectedRevisionId: f.rev, newTargetNodeId: exit }), 404, "Workflow not found.");
        assert.deepEqual(await client.getWorkflow(f.id), f.wf);
      });

      test("deleteWorkflowNode: dryRun → preview, nothing changes; delete reconnects parent to child; errors", async () => {
        const rev = f.rev;
        const parent = f.wf.rootNodeId;
        const dry = await client.deleteWorkflowNode(f.id, filter.id, { expectedRevisionId: rev, dryRun: true });
        assert.deepEqual(dry, { status: "dryRun", nodeIds: [filter.id], queuedContactCount: 0 });
        assert.deepEqual(await client.getWorkflow(f.id), f.wf, "a dry run changes nothing, not even the revision");

        const res = await client.deleteWorkflowNode(f.id, filter.id, { expectedRevisionId: rev });
        assertKeys(res, ["status", "nodeIds", "workflowRevisionId", "queuedContactCount", "workflow"], "WorkflowDeletedResponse");
        assert.equal(res.status, "deleted");
        assert.deepEqual(res.nodeIds, [filter.id]);
        assert.equal(res.queuedContactCount, 0);
        f.renewed(res.workflow, res.workflowRevisionId);
        assert.equal(f.node(filter.id), undefined);
        assert.deepEqual(f.next(timer.id), [email.id], "the parent now points to the deleted node's child");
        await rejectsAPI(client.getWorkflowNode(f.id, filter.id), 404);

        const bad = (id, body = {}) => rejectsAPI(client.deleteWorkflowNode(f.id, id, { expectedRevisionId: f.rev, ...body }), 400);
        await bad(parent); // the trigger
        await bad(branch.id); // several outgoing connections: only recursively
        await bad(timer.id, { queuedContactPolicy: "keep" });
        await bad(timer.id, { dryRun: "yes" });
        await bad("nope");
        assertRawError(await raw(server, "DELETE", `/api/v1/workflows/${f.id}/nodes/${timer.id}`, { key, body: { expectedRevisionId: f.rev, recursive: true } }), 400);
        await rejectsAPI(client.deleteWorkflowNode(f.id, timer.id, { expectedRevisionId: rev }), 409);
        await rejectsAPI(client.deleteWorkflowNode(f.id, filter.id, { expectedRevisionId: f.rev }), 404);
        await rejectsAPI(other.deleteWorkflowNode(f.id, timer.id, { expectedRevisionId: f.rev }), 404, "Workflow not found.");
        assert.deepEqual(await client.getWorkflow(f.id), f.wf);
      });

      test("deleteWorkflowNodesRecursive: dryRun lists the subtree; delete removes it, shared nodes stay", async () => {
        // Trigger → branch → [left → experiment → variants → timer → email → timer2 → exit,
        //                     right → exit, third arm (dead end)].
        const [left, right, third] = f.next(branch.id);
        const before = Object.keys(f.wf.nodes);
        const dry = await client.deleteWorkflowNodesRecursive(f.id, left, { expectedRevisionId: f.rev, dryRun: true });
        assertKeys(dry, ["status", "nodeIds", "queuedContactCount"], "WorkflowQueuedContactDeletePreview");
        assert.equal(dry.status, "dryRun");
        assert.equal(dry.queuedContactCount, 0);
        assert.equal(dry.nodeIds[0], left);
        // Everything under left except the exit (still reached through right).
        const expected = before.filter((id) => ![f.root, branch.id, right, third, exit].includes(id));
        assert.deepEqual([...dry.nodeIds].sort(), expected.sort());
        assert.deepEqual(await client.getWorkflow(f.id), f.wf);

        const res = await client.deleteWorkflowNodesRecursive(f.id, left, { expectedRevisionId: f.rev, queuedContactPolicy: "fail" });
        assert.equal(res.status, "deleted");
        assert.deepEqual([...res.nodeIds].sort(), expected.sort());
        f.renewed(res.workflow, res.workflowRevisionId);
        assert.deepEqual(Object.keys(f.wf.nodes).sort(), [f.root, branch.id, right, third, exit].sort());
        assert.deepEqual(f.next(branch.id), [right, third]);

        await rejectsAPI(client.deleteWorkflowNodesRecursive(f.id, f.root, { expectedRevisionId: f.rev }), 400);
        await rejectsAPI(client.deleteWorkflowNodesRecursive(f.id, left, { expectedRevisionId: f.rev }), 404);
        await rejectsAPI(client.deleteWorkflowNodesRecursive(f.id, branch.id, { expectedRevisionId: UNKNOWN_ID }), 409);
        await rejectsAPI(other.deleteWorkflowNodesRecursive(f.id, branch.id, { expectedRevisionId: f.rev }), 404, "Workflow not found.");

        // The whole branch: the exit goes too (only reachable through it).
        const all = await client.deleteWorkflowNodesRecursive(f.id, branch.id, { expectedRevisionId: f.rev });
        assert.deepEqual([...all.nodeIds].sort(), [branch.id, right, third, exit].sort());
        f.renewed(all.workflow, all.workflowRevisionId);
        assert.deepEqual(Object.keys(f.wf.nodes), [f.root]);
        assert.deepEqual(f.next(f.root), []);
      });

      test("300-node cap: a create or add-branch that would pass 300 nodes → 400", async () => {
        const big = new Flow(client, await client.createWorkflow({ name: "Big" }));
        // 2 nodes + 74 experiments × 4 nodes = 298.
        for (let i = 0; i < 74; i++) {
          const res = await client.createWorkflowNode(big.id, { expectedRevisionId: big.rev, insertMode: "after", nodeTypeName: "ExperimentBranchNode", fromNodeId: big.root });
          big.renewed(res.workflow, res.node.workflowRevisionId);
        }
        assert.equal(Object.keys(big.wf.nodes).length, 298);
        await rejectsAPI(client.createWorkflowNode(big.id, { expectedRevisionId: big.rev, insertMode: "after", nodeTypeName: "ExperimentBranchNode", fromNodeId: big.root }), 400);
        const x = big.next(big.root)[0];
        for (let i = 0; i < 2; i++) {
          const res = await client.addWorkflowBranch(big.id, x, { expectedRevisionId: big.rev });
          big.renewed(res.workflow, res.node.workflowRevisionId);
        }
        assert.equal(Object.keys(big.wf.nodes).length, 300);
        await rejectsAPI(client.addWorkflowBranch(big.id, x, { expectedRevisionId: big.rev }), 400);
        await rejectsAPI(client.createWorkflowNode(big.id, { expectedRevisionId: big.rev, insertMode: "after", nodeTypeName: "TimerAction", fromNodeId: big.root }), 400);
        assert.equal(Object.keys((await client.getWorkflow(big.id)).nodes).length, 300);
      });

      test("Lasso extension: another team's workflow cannot be started → 404; start needs a real trigger → 400", async () => {
        const g = new Flow(client, await client.createWorkflow({ name: "Not runnable" }));
        assertRawError(await lasso("start", g.id), 400);
        assertRawError(await lasso("start", g.id, { k: otherKey }), 404);
        assertRawError(await lasso("pause", g.id), 409);
        // A branch whose child is not an AudienceFilter cannot start (§10.6).
        await g.update(g.root, { typeName: "EventTrigger", eventName: "signup" });
        const b = await g.insert("after", "BranchNode", g.root);
        const res = await client.deleteWorkflowNode(g.id, b.nextNodeIds[0], { expectedRevisionId: g.rev });
        g.renewed(res.workflow, res.workflowRevisionId);
        assert.notEqual(g.node(g.next(b.id)[0]).typeName, "AudienceFilter");
        assertRawError(await lasso("start", g.id), 400);
        assert.equal((await client.getWorkflow(g.id)).status, "Draft");
      });
    });

    // ---- queued contacts: real runs -------------------------------------
    describe("queued contacts (§5.15 queued-contact rule; runs via Lasso start/pause/resume)", () => {
      const EVENT = "trial.started";
      const contacts = ["q1", "q2", "q3"].map(mail);
      let w1, w2, timer1, timer2, email1, email2, exit1, exit2;

      // build: EventTrigger(EVENT) → SendEmailAction → TimerAction(1 d) → Exit.
      async function build(name, subject) {
        const f = new Flow(client, await client.createWorkflow({ name }));
        const exit = f.next(f.root)[0];
        await f.update(f.root, { typeName: "EventTrigger", eventName: EVENT });
        const email = await f.insert("after", "SendEmailAction", f.root);
        const timer = await f.insert("after", "TimerAction", email.id);
        await f.update(timer.id, { amount: 1, unit: "d" });
        assert.deepEqual(f.next(f.root), [email.id]);
        assert.deepEqual(f.next(email.id), [timer.id]);
        assert.deepEqual(f.next(timer.id), [exit]);
        return { f, email, timer, exit, subject };
      }

      test("a SendEmailAction's emailMessageId is an email message: readable, updatable, its subject shows on the node", async () => {
        const a = await build("Trial drip", `Trial day one ${run}`);
        const b = await build("Trial nurture", `Trial nurture ${run}`);
        [w1, email1, timer1, exit1] = [a.f, a.email, a.timer, a.exit];
        [w2, email2, timer2, exit2] = [b.f, b.email, b.timer, b.exit];
        // Without a subject the workflow cannot start.
        assertRawError(await lasso("start", w1.id), 400);
        for (const { f, email, subject } of [a, b]) {
          const m = await client.getEmailMessage(email.emailMessageId);
          assertKeys(m, EM_KEYS, "EmailMessage");
          assert.equal(m.subject, "");
          const u = await client.updateEmailMessage(email.emailMessageId, {
            expectedRevisionId: m.contentRevisionId, subject, fromName: "Flows", fromEmail: "hello",
            lmx: "<Paragraph>Welcome to your trial.</Paragraph>",
          });
          assert.equal(u.id, email.emailMessageId);
          assert.equal(u.subject, subject);
          assert.notEqual(u.contentRevisionId, m.contentRevisionId);
          await rejectsAPI(client.updateEmailMessage(email.emailMessageId, { expectedRevisionId: m.contentRevisionId, subject: "Stale" }), 409);
          const { warnings, ...body } = u;
          assert.deepEqual(await client.getEmailMessage(email.emailMessageId), body);
          const node = await client.getWorkflowNode(f.id, email.id);
          assert.equal(node.emailMessageId, email.emailMessageId);
          assert.equal(node.subject, subject, "the node's subject is its message's");
          await f.reload();
          assert.deepEqual(f.node(email.id), { typeName: "SendEmailAction", nextNodeIds: [f.next(email.id)[0]], emailMessageId: email.emailMessageId, subject });
        }
        // Another team cannot read or edit the message.
        await rejectsAPI(other.getEmailMessage(email1.emailMessageId), 404, "Email message not found.");
        await rejectsAPI(other.updateEmailMessage(email1.emailMessageId, { subject: "Hijack" }), 404);
      });

      test("start → Sending (revision unchanged); graph edits are refused while Sending → 400", async () => {
        for (const f of [w1, w2]) {
          const r = await lasso("start", f.id);
          assert.equal(r.status, 200, r.text);
          assertWorkflow(r.json);
          assert.equal(r.json.status, "Sending");
          assert.equal(r.json.workflowRevisionId, f.rev);
          f.take(r.json);
          assertRawError(await lasso("start", f.id), 409);
        }
        assert.equal((await client.getWorkflow(w1.id)).status, "Sending");
        const rev = w1.rev;
        await rejectsAPI(client.createWorkflowNode(w1.id, { expectedRevisionId: rev, insertMode: "after", nodeTypeName: "TimerAction", fromNodeId: timer1.id }), 400);
        await rejectsAPI(client.updateWorkflowNode(w1.id, timer1.id, { expectedRevisionId: rev, payload: { amount: 2 } }), 400);
        await rejectsAPI(client.deleteWorkflowNode(w1.id, timer1.id, { expectedRevisionId: rev, dryRun: true }), 400);
        await rejectsAPI(client.deleteWorkflowNodesRecursive(w1.id, timer1.id, { expectedRevisionId: rev, dryRun: true }), 400);
        await rejectsAPI(client.rerouteWorkflowNode(w1.id, timer1.id, { expectedRevisionId: rev, newTargetNodeId: email1.id }), 400);
        await rejectsAPI(client.changeWorkflowMailingList(w1.id, { expectedRevisionId: rev, mailingListId: listA, dryRun: true }), 400);
        assert.deepEqual(await client.getWorkflow(w1.id), w1.wf);
      });

      test("sendEvent: three contacts enter both workflows, get the email and wait on the timer", async () => {
        for (const [i, email] of contacts.entries()) {
          const params = { email, eventName: EVENT, eventProperties: { plan: "trial" } };
          if (i === 0) params.mailingLists = { [listA]: true };
          assert.deepEqual(await client.sendEvent(params), { success: true });
        }
        // A different event name (case matters) starts nothing.
        await client.sendEvent({ email: mail("q4"), eventName: "Trial.Started" });
        await waitFor("the workflow emails of all three contacts", () => {
          const box = mailbox(env);
          return contacts.every((to) => [w1, w2].every((_, j) => box.some((m) => m.to === to && m.subject === (j ? `Trial nurture ${run}` : `Trial day one ${run}`))));
        });
        await sleep(500);
        const box = mailbox(env);
        assert.ok(!box.some((m) => m.to === mail("q4")), "Trial.Started is not trial.started");
        for (const to of contacts) assert.equal(box.filter((m) => m.to === to).length, 2, `one email per workflow for ${to}`);
      });

      test("pause (queueing and plain) keeps the revision; deleting the workflow needs confirmation (409 suffix)", async () => {
        let r = await lasso("pause", w1.id, { body: { queueing: true } });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.json.status, "PausedAndQueueing");
        assert.equal(r.json.workflowRevisionId, w1.rev);
        w1.take(r.json);
        r = await lasso("pause", w2.id);
        assert.equal(r.status, 200, r.text);
        assert.equal(r.json.status, "Paused");
        w2.take(r.json);
        assertRawError(await lasso("pause", w2.id, { body: { queueing: "yes" } }), 400);
        // Paused with queued contacts: 409 asking for confirmation.
        const e = await rejectsAPI(client.deleteWorkflow(w2.id, { expectedRevisionId: w2.rev }), 409);
        assert.ok(e.json.message.endsWith(CONFIRM_SUFFIX), e.json.message);
        assert.ok(e.message.endsWith(CONFIRM_SUFFIX), e.message);
        await rejectsAPI(client.deleteWorkflow(w2.id, { expectedRevisionId: w2.rev, confirmDelete: false }), 409);
        assert.equal((await client.getWorkflow(w2.id)).status, "Paused");
      });

      test("deleteWorkflowNode with queued contacts: dryRun counts them; fail (default / explicit) → queuedContactsFound, nothing changes", async () => {
        const rev = w1.rev;
        assert.deepEqual(await client.deleteWorkflowNode(w1.id, timer1.id, { expectedRevisionId: rev, dryRun: true }),
          { status: "dryRun", nodeIds: [timer1.id], queuedContactCount: 3 });
        assert.deepEqual(await client.deleteWorkflowNode(w1.id, email1.id, { expectedRevisionId: rev, dryRun: true }),
          { status: "dryRun", nodeIds: [email1.id], queuedContactCount: 0 }, "nobody waits at the email node");
        assert.deepEqual(await client.deleteWorkflowNode(w1.id, timer1.id, { expectedRevisionId: rev }),
          { status: "queuedContactsFound", nodeIds: [timer1.id], queuedContactCount: 3 });
        assert.deepEqual(await client.deleteWorkflowNode(w1.id, timer1.id, { expectedRevisionId: rev, queuedContactPolicy: "fail" }),
          { status: "queuedContactsFound", nodeIds: [timer1.id], queuedContactCount: 3 });
        const rec = await client.deleteWorkflowNodesRecursive(w1.id, email1.id, { expectedRevisionId: rev, dryRun: true });
        assert.equal(rec.status, "dryRun");
        assert.deepEqual([...rec.nodeIds].sort(), [email1.id, timer1.id, exit1].sort());
        assert.equal(rec.queuedContactCount, 3);
        assert.deepEqual(await client.getWorkflow(w1.id), w1.wf);
      });

      test("changeWorkflowMailingList with queued contacts: dryRun; fail → queuedContactsFound; discard drops the contacts not on the list", async () => {
        const rev = w1.rev;
        assert.deepEqual(await client.changeWorkflowMailingList(w1.id, { expectedRevisionId: rev, mailingListId: listA, dryRun: true }),
          { status: "dryRun", mailingListId: listA, queuedContactCount: 2 });
        assert.deepEqual(await client.changeWorkflowMailingList(w1.id, { expectedRevisionId: rev, mailingListId: listA }),
          { status: "queuedContactsFound", mailingListId: listA, queuedContactCount: 2 });
        assert.deepEqual(await client.changeWorkflowMailingList(w1.id, { expectedRevisionId: rev, mailingListId: listB, queuedContactPolicy: "fail" }),
          { status: "queuedContactsFound", mailingListId: listB, queuedContactCount: 3 });
        assert.deepEqual(await client.getWorkflow(w1.id), w1.wf);

        const res = await client.changeWorkflowMailingList(w1.id, { expectedRevisionId: rev, mailingListId: listA, queuedContactPolicy: "discard" });
        assertKeys(res, ["status", "mailingListId", "workflowRevisionId", "queuedContactCount", "workflow"], "WorkflowMailingListUpdatedResponse");
        assert.equal(res.status, "updated");
        assert.equal(res.mailingListId, listA);
        assert.equal(res.queuedContactCount, 2);
        w1.renewed(res.workflow, res.workflowRevisionId);
        assert.equal(w1.wf.mailingListId, listA);
        assert.equal(w1.wf.status, "PausedAndQueueing");
        // One contact (on the list) is still queued at the timer.
        assert.equal((await client.deleteWorkflowNode(w1.id, timer1.id, { expectedRevisionId: w1.rev, dryRun: true })).queuedContactCount, 1);

        // Clearing the list never discards anyone.
        const clear = await client.changeWorkflowMailingList(w1.id, { expectedRevisionId: w1.rev, mailingListId: null });
        assert.equal(clear.status, "updated");
        assert.equal(clear.queuedContactCount, 0);
        w1.renewed(clear.workflow, clear.workflowRevisionId);
        assert.equal(w1.wf.mailingListId, null);
        assert.equal((await client.deleteWorkflowNode(w1.id, timer1.id, { expectedRevisionId: w1.rev, dryRun: true })).queuedContactCount, 1);
        await rejectsAPI(client.changeWorkflowMailingList(w1.id, { expectedRevisionId: rev, mailingListId: listA }), 409);
      });

      test("deleteWorkflowNode with discard deletes the node and cancels its queued contacts", async () => {
        const res = await client.deleteWorkflowNode(w1.id, timer1.id, { expectedRevisionId: w1.rev, queuedContactPolicy: "discard" });
        assert.equal(res.status, "deleted");
        assert.deepEqual(res.nodeIds, [timer1.id]);
        assert.equal(res.queuedContactCount, 1);
        w1.renewed(res.workflow, res.workflowRevisionId);
        assert.equal(w1.node(timer1.id), undefined);
        assert.deepEqual(w1.next(email1.id), [exit1]);
        // Nobody is queued anywhere now.
        assert.equal((await client.deleteWorkflowNodesRecursive(w1.id, email1.id, { expectedRevisionId: w1.rev, dryRun: true })).queuedContactCount, 0);
      });

      test("deleteWorkflowNodesRecursive with queued contacts: dryRun; fail → queuedContactsFound; discard", async () => {
        const rev = w2.rev;
        const dry = await client.deleteWorkflowNodesRecursive(w2.id, timer2.id, { expectedRevisionId: rev, dryRun: true });
        assert.equal(dry.status, "dryRun");
        assert.deepEqual([...dry.nodeIds].sort(), [timer2.id, exit2].sort());
        assert.equal(dry.nodeIds[0], timer2.id);
        assert.equal(dry.queuedContactCount, 3);
        const found = await client.deleteWorkflowNodesRecursive(w2.id, timer2.id, { expectedRevisionId: rev });
        assert.deepEqual(found, { status: "queuedContactsFound", nodeIds: dry.nodeIds, queuedContactCount: 3 });
        assert.deepEqual(await client.getWorkflow(w2.id), w2.wf);

        const res = await client.deleteWorkflowNodesRecursive(w2.id, timer2.id, { expectedRevisionId: rev, queuedContactPolicy: "discard" });
        assertKeys(res, ["status", "nodeIds", "workflowRevisionId", "queuedContactCount", "workflow"], "WorkflowDeletedResponse");
        assert.equal(res.status, "deleted");
        assert.deepEqual(res.nodeIds, dry.nodeIds);
        assert.equal(res.queuedContactCount, 3);
        w2.renewed(res.workflow, res.workflowRevisionId);
        assert.deepEqual(Object.keys(w2.wf.nodes).sort(), [w2.root, email2.id].sort());
        assert.deepEqual(w2.next(email2.id), []);
        assert.equal(w2.wf.status, "Paused");
      });

      test("deleteWorkflow: paused with nobody queued → 204 at once; sending → 409 suffix, confirmDelete → 204, then 404", async () => {
        assert.equal(await client.deleteWorkflow(w2.id, { expectedRevisionId: w2.rev }), undefined);
        await rejectsAPI(client.getWorkflow(w2.id), 404, "Workflow not found.");

        const r = await lasso("resume", w1.id);
        assert.equal(r.status, 200, r.text);
        assert.equal(r.json.status, "Sending");
        assert.equal(r.json.workflowRevisionId, w1.rev);
        w1.take(r.json);
        assertRawError(await lasso("resume", w1.id), 409);
        const e = await rejectsAPI(client.deleteWorkflow(w1.id, { expectedRevisionId: w1.rev }), 409);
        assert.ok(e.json.message.endsWith(CONFIRM_SUFFIX), e.json.message);
        const stale = await rejectsAPI(client.deleteWorkflow(w1.id, { expectedRevisionId: UNKNOWN_ID, confirmDelete: true }), 409);
        assert.ok(!stale.json.message.endsWith(CONFIRM_SUFFIX), stale.json.message);
        assert.equal((await client.getWorkflow(w1.id)).status, "Sending");

        assert.equal(await client.deleteWorkflow(w1.id, { expectedRevisionId: w1.rev, confirmDelete: true }), undefined);
        await rejectsAPI(client.getWorkflow(w1.id), 404, "Workflow not found.");
        await rejectsAPI(client.getWorkflowNode(w1.id, email1.id), 404);
        await rejectsAPI(client.deleteWorkflow(w1.id, { expectedRevisionId: w1.rev, confirmDelete: true }), 404, "Workflow not found.");
        await rejectsAPI(client.changeWorkflowMailingList(w1.id, { expectedRevisionId: w1.rev, mailingListId: null }), 404, "Workflow not found.");
        assertRawError(await lasso("pause", w1.id), 404);
        // A deleted workflow takes no new contacts.
        await client.sendEvent({ email: mail("q5"), eventName: EVENT });
        await sleep(1500);
        assert.ok(!mailbox(env).some((m) => m.to === mail("q5")), "no email from a deleted workflow");
      });

      test("after the runs: activity conditions on the workflow and its email are valid segment conditions", async () => {
        const g = await client.createAudienceSegment({
          name: "Got the trial email",
          filter: { match: "all", conditions: [{ type: "activity", action: "sent", negate: false, target: "workflowEmail", id: email1.emailMessageId }] },
        });
        assert.equal(g.filter.conditions[0].id, email1.emailMessageId);
      });
    });
  });
}
