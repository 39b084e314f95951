// Compatibility test: the content API, transactional sending and outgoing
// webhooks, driven with the official `loops` npm SDK (7.3.0, unmodified)
// against a live Lasso server. Contract: /work/shared/spec/loops-api.md §3
// (pagination), §5.6–§5.12, §5.17, §6.3–§6.9, §7 (webhooks), §12, §14 and
// Appendix A.
//
//   cd compat && npm ci && LASSO_BIN=../bin/lasso node --test
//
// Like sdk.test.mjs it builds nothing: it takes $LASSO_BIN, starts
// `lasso serve` on free ports with a temp data dir (outbound mail goes to the
// capture mailbox, read back with `lasso mailbox list`), creates keys, a
// verified sending domain and the webhook endpoint with the CLI, and repeats
// everything on PostgreSQL when LASSO_TEST_POSTGRES_URL is set.
//
// Webhook deliveries go to a local node:http server and are verified with the
// `standardwebhooks` npm library (the Standard Webhooks reference verifier).

import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { Webhook, WebhookVerificationError } from "standardwebhooks";
import {
  makeEnv, dropEnv, cli, startServer, sdk, raw, rejectsAPI, assertRawError, freePort, backends,
  assertKeys, assertPage, drain, waitFor, mailbox,
} from "./helpers.mjs";

// ---------------------------------------------------------------------------
// Shapes (§6.3–§6.9)

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const TX_KEYS = ["id", "url", "name", "draftEmailMessageId", "publishedEmailMessageId", "transactionalGroupId", "createdAt", "updatedAt", "dataVariables"];
const TX_DRAFT_KEYS = [...TX_KEYS, "draftEmailMessageContentRevisionId"];
const EM_KEYS = ["id", "transactionalId", "subject", "previewText", "fromName", "fromEmail", "replyToEmail", "emailFormat", "lmx", "contentRevisionId", "updatedAt"];
const GROUP_KEYS = ["id", "name", "description", "createdAt", "updatedAt"];
const THEME_KEYS = ["id", "name", "styles", "isDefault", "createdAt", "updatedAt"];
const COMPONENT_KEYS = ["id", "name", "lmx"];
const GUARDIAN_RULE_KEYS = ["rule", "title", "description", "items"];
const SUPPORTED_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"];
const UNKNOWN_ID = "cxxxxxxxxxxxxxxxxxxxxxxxx";

// A 1×1 transparent PNG.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64");


function assertTx(t, { draft = false } = {}) {
  assertKeys(t, draft ? TX_DRAFT_KEYS : TX_KEYS, "TransactionalEmailResource");
  for (const k of ["id", "url", "name"]) assert.equal(typeof t[k], "string", k);
  assert.ok(t.url.endsWith(`/transactional/${t.id}`), `url ${t.url}`);
  assert.match(t.url, /^https?:\/\//);
  for (const k of ["draftEmailMessageId", "publishedEmailMessageId", "transactionalGroupId"]) {
    assert.ok(t[k] === null || typeof t[k] === "string", `${k}: ${t[k]}`);
  }
  assert.match(t.createdAt, ISO);
  assert.match(t.updatedAt, ISO);
  assert.ok(Array.isArray(t.dataVariables) && t.dataVariables.every((v) => typeof v === "string"));
  if (draft) assert.ok(t.draftEmailMessageContentRevisionId === null || typeof t.draftEmailMessageContentRevisionId === "string");
}

function assertGroup(g, name, description) {
  assertKeys(g, GROUP_KEYS, "Group");
  assert.equal(typeof g.id, "string");
  assert.equal(g.name, name);
  assert.equal(g.description, description);
  assert.match(g.createdAt, ISO);
  assert.match(g.updatedAt, ISO);
}


function assertGuardianRule(r) {
  assertKeys(r, GUARDIAN_RULE_KEYS, "GuardianRule");
  for (const k of ["rule", "title", "description"]) assert.equal(typeof r[k], "string");
  assert.ok(Array.isArray(r.items));
  for (const it of r.items) {
    assert.equal(typeof it.label, "string");
    assert.ok(Object.keys(it).every((k) => k === "label" || k === "codeName"), JSON.stringify(it));
  }
}

// drain follows nextCursor with the given list method until the last page.



function waitForMail(env, to, subject) {
  return waitFor(`mail to ${to} with subject ${JSON.stringify(subject)}`, () => mailbox(env).find((m) => m.to === to && m.subject === subject));
}

// ---------------------------------------------------------------------------
// Webhook receiver

function startReceiver() {
  const deliveries = [];
  const srv = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (d) => chunks.push(d));
    req.on("end", () => {
      deliveries.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(204);
      res.end();
    });
  });
  return new Promise((resolve, reject) => {
    srv.on("error", reject);
    freePort().then((port) => srv.listen(port, "127.0.0.1", () => resolve({
      port,
      deliveries,
      close: () => new Promise((r) => { srv.closeAllConnections?.(); srv.close(() => r()); }),
    })));
  });
}

// ---------------------------------------------------------------------------

for (const backend of backends) {
  describe(`content API, transactional sends and webhooks via loops SDK 7.3.0 (${backend.name})`, () => {
    const TEAM = "Content Team";
    let env, server, key, pagerKey, noDomainKey, client, pager, noDomain, receiver, secret;
    const run = `${backend.name}-${Date.now()}`;
    const mail = (local) => `${local}-${run}@example.org`;

    // webhook helpers bound to this suite
    const parsedDeliveries = () => receiver.deliveries.map((d) => ({ ...d, json: JSON.parse(d.body) }));
    const waitForEvent = (what, pred) => waitFor(`webhook ${what}`, () => parsedDeliveries().find((d) => pred(d.json)));

    before(async () => {
      env = makeEnv(backend, "content");
      key = cli(env, "keys", "create", "--team", TEAM, "--name", "content");
      pagerKey = cli(env, "keys", "create", "--team", "Pager Team");
      noDomainKey = cli(env, "keys", "create", "--team", "No Domain Team");
      // A domain belongs to one team.
      for (const [team, domain] of [[TEAM, "example.com"], ["Pager Team", "pager.example.com"]]) {
        const out = cli(env, "domains", "add", "--team", team, "--domain", domain, "--verified");
        assert.match(out, new RegExp(domain.replace(/\./g, "\\.")));
      }
      receiver = await startReceiver();
      const out = cli(env, "webhooks", "set", "--team", TEAM, "--url", `http://127.0.0.1:${receiver.port}/hook`);
      secret = out.match(/whsec_[A-Za-z0-9+/=]+/)?.[0];
      assert.ok(secret, `webhooks set must print a whsec_ secret, got: ${out}`);
      server = await startServer(env, ["--rate-limit", "0"]);
      client = sdk(server, key);
      pager = sdk(server, pagerKey);
      noDomain = sdk(server, noDomainKey);
    });

    after(async () => {
      if (server) await server.stop();
      if (receiver) await receiver.close();
      dropEnv(env);
    });

    // ---- §5.8 groups ---------------------------------------------------
    const groupKinds = [
      { kind: "transactional", list: "listTransactionalGroups", create: "createTransactionalGroup", get: "getTransactionalGroup", update: "updateTransactionalGroup", path: "transactional-groups" },
      { kind: "campaign", list: "listCampaignGroups", create: "createCampaignGroup", get: "getCampaignGroup", update: "updateCampaignGroup", path: "campaign-groups" },
    ];
    const unsortedGroup = {};
    const createdGroup = {};

    for (const g of groupKinds) {
      describe(`${g.kind} groups (§5.8, §6.3)`, () => {
        test("the reserved Unsorted group exists and is listed", async () => {
          const page = await client[g.list]();
          assertPage(page, { total: 1, returned: 1, perPage: 20 });
          assert.equal(page.pagination.nextCursor, null);
          assert.equal(page.pagination.nextPage, null);
          assertGroup(page.data[0], "Unsorted", "");
          unsortedGroup[g.kind] = page.data[0];
        });

        test("create → 200 Group (description \"\" when omitted); with description", async () => {
          const r = await raw(server, "POST", `/api/v1/${g.path}`, { key, body: { name: `Raw ${g.kind}` } });
          assert.equal(r.status, 200, r.text);
          assertGroup(r.json, `Raw ${g.kind}`, "");
          const made = await client[g.create]({ name: `Onboarding ${g.kind}`, description: "Top of funnel" });
          assertGroup(made, `Onboarding ${g.kind}`, "Top of funnel");
          createdGroup[g.kind] = made;
        });

        test("get → the Group; unknown id → 404 Group not found.", async () => {
          assert.deepEqual(await client[g.get](createdGroup[g.kind].id), createdGroup[g.kind]);
          await rejectsAPI(client[g.get](UNKNOWN_ID), 404, "Group not found.");
        });

        test("update name / description → 200 Group", async () => {
          const id = createdGroup[g.kind].id;
          const u1 = await client[g.update](id, { name: `Renamed ${g.kind}` });
          assertGroup(u1, `Renamed ${g.kind}`, "Top of funnel");
          assert.equal(u1.id, id);
          assert.equal(u1.createdAt, createdGroup[g.kind].createdAt);
          const u2 = await client[g.update](id, { description: "" });
          assertGroup(u2, `Renamed ${g.kind}`, "");
          createdGroup[g.kind] = u2;
          assert.deepEqual(await client[g.get](id), u2);
        });

        test("reserved name Unsorted → 400 (create and rename); Unsorted cannot be edited → 400", async () => {
          await rejectsAPI(client[g.create]({ name: "Unsorted" }), 400);
          await rejectsAPI(client[g.update](createdGroup[g.kind].id, { name: "Unsorted" }), 400);
          await rejectsAPI(client[g.update](unsortedGroup[g.kind].id, { name: "Something else" }), 400);
          await rejectsAPI(client[g.update](unsortedGroup[g.kind].id, { description: "x" }), 400);
          assert.deepEqual(await client[g.get](unsortedGroup[g.kind].id), unsortedGroup[g.kind]);
        });

        test("missing name → 400; empty update → 400; unknown keys → 400; unknown id → 404", async () => {
          await rejectsAPI(client[g.create]({ description: "no name" }), 400);
          await rejectsAPI(client[g.update](createdGroup[g.kind].id, {}), 400);
          assertRawError(await raw(server, "POST", `/api/v1/${g.path}`, { key, body: { name: "X", bogus: 1 } }), 400);
          await rejectsAPI(client[g.update](UNKNOWN_ID, { name: "Ghost" }), 404);
        });

        test("list: newest first, all three groups", async () => {
          const page = await client[g.list]({ perPage: 10 });
          assertPage(page, { total: 3, returned: 3, perPage: 10 });
          assert.deepEqual(page.data.map((x) => x.name), [`Renamed ${g.kind}`, `Raw ${g.kind}`, "Unsorted"]);
          await rejectsAPI(client[g.list]({ perPage: 5 }), 400);
        });
      });
    }

    // ---- §5.7 transactional emails -------------------------------------
    describe("transactional emails (§5.7, §6.9, §14)", () => {
      let welcome, welcomeDraft;

      test("create → 201 TransactionalDraftResponse with an empty draft, in the Unsorted group", async () => {
        const r = await raw(server, "POST", "/api/v1/transactional-emails", { key, body: { name: "Raw create" } });
        assert.equal(r.status, 201, r.text);
        assertTx(r.json, { draft: true });

        welcome = await client.createTransactionalEmail({ name: "Welcome email" });
        assertTx(welcome, { draft: true });
        assert.equal(welcome.name, "Welcome email");
        assert.equal(typeof welcome.draftEmailMessageId, "string");
        assert.equal(typeof welcome.draftEmailMessageContentRevisionId, "string");
        assert.equal(welcome.publishedEmailMessageId, null);
        assert.deepEqual(welcome.dataVariables, []);
        assert.equal(welcome.transactionalGroupId, unsortedGroup.transactional.id);
        assert.equal(welcome.createdAt, welcome.updatedAt);
        welcomeDraft = welcome.draftEmailMessageId;
      });

      test("create into a group; unknown group → 400; missing name → 400; unknown key → 400", async () => {
        const t = await client.createTransactionalEmail({ name: "Grouped", transactionalGroupId: createdGroup.transactional.id });
        assertTx(t, { draft: true });
        assert.equal(t.transactionalGroupId, createdGroup.transactional.id);
        await rejectsAPI(client.createTransactionalEmail({ name: "Bad group", transactionalGroupId: UNKNOWN_ID }), 400);
        await rejectsAPI(client.createTransactionalEmail({}), 400);
        assertRawError(await raw(server, "POST", "/api/v1/transactional-emails", { key, body: { name: "X", extra: true } }), 400);
      });

      test("a team without a sending domain → 400", async () => {
        await rejectsAPI(noDomain.createTransactionalEmail({ name: "Nope" }), 400);
      });

      test("get → the resource (no revision id); unknown → 404 Transactional email not found.", async () => {
        const got = await client.getTransactionalEmail(welcome.id);
        assertTx(got);
        const { draftEmailMessageContentRevisionId, ...rest } = welcome;
        assert.deepEqual(got, rest);
        await rejectsAPI(client.getTransactionalEmail(UNKNOWN_ID), 404, "Transactional email not found.");
        // Another team (with its own sending domain) cannot see it.
        await rejectsAPI(pager.getTransactionalEmail(welcome.id), 404, "Transactional email not found.");
      });

      test("list: 23 emails, perPage 10 → pages 10/10/3 via nextCursor, newest first", async () => {
        const made = [];
        for (let i = 1; i <= 23; i++) made.push((await pager.createTransactionalEmail({ name: `Page ${String(i).padStart(2, "0")}` })).id);
        const pages = await drain((o) => pager.listTransactionalEmails(o), 10);
        assert.equal(pages.length, 3);
        [10, 10, 3].forEach((n, i) => assertPage(pages[i], { total: 23, returned: n, perPage: 10 }));
        for (const [i, page] of pages.entries()) {
          const { nextCursor, nextPage } = page.pagination;
          if (i < 2) {
            assert.equal(typeof nextCursor, "string");
            assert.match(nextPage, /^https?:\/\//);
            const u = new URL(nextPage);
            assert.ok(u.pathname.endsWith("/v1/transactional-emails"), nextPage);
            assert.deepEqual([...u.searchParams.keys()], ["cursor", "perPage"], nextPage);
            assert.equal(u.searchParams.get("cursor"), nextCursor);
            assert.equal(u.searchParams.get("perPage"), "10");
          } else {
            assert.equal(nextCursor, null);
            assert.equal(nextPage, null);
          }
          for (const t of page.data) assertTx(t);
        }
        const ids = pages.flatMap((p) => p.data.map((t) => t.id));
        assert.equal(new Set(ids).size, 23, "no duplicates across pages");
        assert.deepEqual(ids, [...made].reverse(), "most recently created first");
        // Default perPage is 20 (the SDK sends 20 for 0 / undefined).
        assertPage(await pager.listTransactionalEmails(), { total: 23, returned: 20, perPage: 20 });
        assertPage(await pager.listTransactionalEmails({ perPage: 50 }), { total: 23, returned: 23, perPage: 50 });
      });

      test("list: perPage 5, 51 or non-numeric → 400", async () => {
        await rejectsAPI(pager.listTransactionalEmails({ perPage: 5 }), 400);
        await rejectsAPI(pager.listTransactionalEmails({ perPage: 51 }), 400);
        assertRawError(await raw(server, "GET", "/api/v1/transactional-emails?perPage=ten", { key: pagerKey }), 400);
        await rejectsAPI(pager.listTransactionalEmails({ perPage: 10, cursor: "not-a-cursor" }), 400);
      });

      test("list is per team", async () => {
        const page = await client.listTransactionalEmails({ perPage: 50 });
        assert.ok(page.data.some((t) => t.id === welcome.id));
        assert.ok(page.data.every((t) => !t.name.startsWith("Page ")));
      });

      test("update name, move group → 200 resource; empty body → 400; unknown → 404", async () => {
        const u = await client.updateTransactionalEmail(welcome.id, { name: "Welcome" });
        assertTx(u);
        assert.equal(u.name, "Welcome");
        assert.equal(u.draftEmailMessageId, welcomeDraft);
        const moved = await client.updateTransactionalEmail(welcome.id, { transactionalGroupId: createdGroup.transactional.id });
        assert.equal(moved.transactionalGroupId, createdGroup.transactional.id);
        const back = await client.updateTransactionalEmail(welcome.id, { transactionalGroupId: unsortedGroup.transactional.id });
        assert.equal(back.transactionalGroupId, unsortedGroup.transactional.id);
        await rejectsAPI(client.updateTransactionalEmail(welcome.id, {}), 400);
        await rejectsAPI(client.updateTransactionalEmail(UNKNOWN_ID, { name: "Ghost" }), 404);
        assert.equal((await client.getTransactionalEmail(welcome.id)).name, "Welcome");
      });

      test("ensureDraft with an existing draft returns it unchanged", async () => {
        const d = await client.ensureTransactionalEmailDraft(welcome.id);
        assertTx(d, { draft: true });
        assert.equal(d.draftEmailMessageId, welcomeDraft);
        assert.equal(d.draftEmailMessageContentRevisionId, welcome.draftEmailMessageContentRevisionId);
        await rejectsAPI(client.ensureTransactionalEmailDraft(UNKNOWN_ID), 404);
      });

      // ---- §5.10 email messages on the draft ----------------------------
      let rev;
      test("getEmailMessage: empty draft, exact shape (§6.8)", async () => {
        const m = await client.getEmailMessage(welcomeDraft);
        assertKeys(m, EM_KEYS, "EmailMessage");
        assert.deepEqual({ ...m, updatedAt: "" }, {
          id: welcomeDraft, transactionalId: welcome.id, subject: "", previewText: "", fromName: "", fromEmail: "",
          replyToEmail: "", emailFormat: "styled", lmx: "", contentRevisionId: welcome.draftEmailMessageContentRevisionId, updatedAt: "",
        });
        assert.match(m.updatedAt, ISO);
        await rejectsAPI(client.getEmailMessage(UNKNOWN_ID), 404, "Email message not found.");
        await rejectsAPI(noDomain.getEmailMessage(welcomeDraft), 400);
      });

      test("updateEmailMessage with expectedRevisionId → new revision; stale → 409", async () => {
        const lmx = '<H1>Hi {data.name}</H1><Paragraph>Your code is {data.code}.</Paragraph><Button>Open</Button>';
        const u = await client.updateEmailMessage(welcomeDraft, {
          expectedRevisionId: welcome.draftEmailMessageContentRevisionId,
          subject: "Welcome {data.name}", previewText: "Hello", fromName: "Acme", fromEmail: "hello", replyToEmail: "support@example.com", lmx,
        });
        assert.ok(Object.keys(u).every((k) => [...EM_KEYS, "warnings"].includes(k)), JSON.stringify(u));
        assert.equal(u.id, welcomeDraft);
        assert.equal(u.transactionalId, welcome.id);
        assert.equal(u.subject, "Welcome {data.name}");
        assert.equal(u.previewText, "Hello");
        assert.equal(u.fromName, "Acme");
        assert.equal(u.fromEmail, "hello");
        assert.equal(u.replyToEmail, "support@example.com");
        assert.equal(u.lmx, lmx);
        assert.equal(typeof u.contentRevisionId, "string");
        assert.notEqual(u.contentRevisionId, welcome.draftEmailMessageContentRevisionId);
        rev = u.contentRevisionId;
        const { warnings, ...body } = u;
        assert.deepEqual(await client.getEmailMessage(welcomeDraft), body);

        await rejectsAPI(client.updateEmailMessage(welcomeDraft, { expectedRevisionId: welcome.draftEmailMessageContentRevisionId, subject: "Stale" }), 409, "Content revision ID is stale.");
        assert.equal((await client.getEmailMessage(welcomeDraft)).subject, "Welcome {data.name}");
      });

      test("invalid LMX → 422; LMX > 100 KB → 413; fromEmail on a foreign domain / unknown key → 400", async () => {
        await rejectsAPI(client.updateEmailMessage(welcomeDraft, { expectedRevisionId: rev, lmx: "<Bogus>hi</Bogus>" }), 422);
        await rejectsAPI(client.updateEmailMessage(welcomeDraft, { expectedRevisionId: rev, lmx: '<Paragraph>x</Paragraph><Link>no href</Link>' }), 422);
        await rejectsAPI(client.updateEmailMessage(welcomeDraft, { expectedRevisionId: rev, lmx: `<Paragraph>${"a".repeat(101 * 1024)}</Paragraph>` }), 413);
        await rejectsAPI(client.updateEmailMessage(welcomeDraft, { expectedRevisionId: rev, fromEmail: "hello@elsewhere.example.net" }), 400);
        assertRawError(await raw(server, "POST", `/api/v1/email-messages/${welcomeDraft}`, { key, body: { expectedRevisionId: rev, bogus: 1 } }), 400);
        await rejectsAPI(client.updateEmailMessage(UNKNOWN_ID, { subject: "x" }), 404);
        // None of the rejected updates changed the message or its revision.
        const m = await client.getEmailMessage(welcomeDraft);
        assert.equal(m.contentRevisionId, rev);
        assert.equal(m.fromEmail, "hello");
      });

      test("guardian: a Button without href → missingButtonHrefs error", async () => {
        const g = await client.runEmailMessageGuardian(welcomeDraft);
        assertKeys(g, ["errors", "warnings"], "guardian");
        for (const r of [...g.errors, ...g.warnings]) assertGuardianRule(r);
        const rule = g.errors.find((r) => r.rule === "missingButtonHrefs");
        assert.ok(rule, JSON.stringify(g));
        assert.deepEqual(rule.items, [{ label: "Open" }]);
        await rejectsAPI(client.runEmailMessageGuardian(UNKNOWN_ID), 404);
      });

      test("publish with a Guardian error → 422; the draft stays a draft", async () => {
        const err = await rejectsAPI(client.publishTransactionalEmail(welcome.id), 422);
        assert.ok(Array.isArray(err.json.errors) && err.json.errors.some((r) => r.rule === "missingButtonHrefs"), JSON.stringify(err.json));
        const t = await client.getTransactionalEmail(welcome.id);
        assert.equal(t.draftEmailMessageId, welcomeDraft);
        assert.equal(t.publishedEmailMessageId, null);
        await rejectsAPI(client.publishTransactionalEmail(UNKNOWN_ID), 404);
      });

      test("fix the Button → guardian clean; preview → 200 {id} and arrives as [Preview] …", async () => {
        const u = await client.updateEmailMessage(welcomeDraft, {
          expectedRevisionId: rev,
          lmx: '<H1>Hi {data.name}</H1><Paragraph>Your code is {data.code}.</Paragraph><Button href="https://example.com/c/{data.code}">Open</Button>',
        });
        rev = u.contentRevisionId;
        assert.deepEqual(await client.runEmailMessageGuardian(welcomeDraft), { errors: [], warnings: [] });
        const to = mail("preview");
        assert.deepEqual(await client.sendEmailMessagePreview(welcomeDraft, { emails: [to], dataVariables: { name: "Pat", code: "42" } }), { id: welcomeDraft });
        const msg = await waitForMail(env, to, "[Preview] Welcome Pat");
        assert.match(msg.from, /@/);
      });

      test("preview: empty emails → 400; contactProperties on a transactional email → 400; unknown id → 404", async () => {
        await rejectsAPI(client.sendEmailMessagePreview(welcomeDraft, { emails: [] }), 400);
        await rejectsAPI(client.sendEmailMessagePreview(welcomeDraft, { emails: [mail("p2")], contactProperties: { firstName: "A" } }), 400);
        await rejectsAPI(client.sendEmailMessagePreview(UNKNOWN_ID, { emails: [mail("p2")] }), 404);
      });

      test("publish → draft becomes published, dataVariables listed; again → 409 No draft to publish.", async () => {
        const p = await client.publishTransactionalEmail(welcome.id);
        assertTx(p);
        assert.equal(p.draftEmailMessageId, null);
        assert.equal(p.publishedEmailMessageId, welcomeDraft);
        assert.deepEqual([...p.dataVariables].sort(), ["code", "name"]);
        assert.deepEqual(await client.getTransactionalEmail(welcome.id), p);
        await rejectsAPI(client.publishTransactionalEmail(welcome.id), 409, "No draft to publish.");
        // The published message is immutable.
        await rejectsAPI(client.updateEmailMessage(welcomeDraft, { subject: "Edited" }), 409);
        const m = await client.getEmailMessage(welcomeDraft);
        assert.equal(m.subject, "Welcome {data.name}");
      });

      test("ensureDraft after publish → a new draft seeded from the published message; idempotent", async () => {
        const d = await client.ensureTransactionalEmailDraft(welcome.id);
        assertTx(d, { draft: true });
        assert.equal(typeof d.draftEmailMessageId, "string");
        assert.notEqual(d.draftEmailMessageId, welcomeDraft);
        assert.equal(d.publishedEmailMessageId, welcomeDraft);
        assert.deepEqual([...d.dataVariables].sort(), ["code", "name"]);
        assert.deepEqual(await client.ensureTransactionalEmailDraft(welcome.id), d);
        const [pub, draft] = [await client.getEmailMessage(welcomeDraft), await client.getEmailMessage(d.draftEmailMessageId)];
        for (const k of ["subject", "previewText", "fromName", "fromEmail", "replyToEmail", "emailFormat", "lmx"]) assert.equal(draft[k], pub[k], k);
        assert.equal(draft.transactionalId, welcome.id);
        assert.equal(draft.contentRevisionId, d.draftEmailMessageContentRevisionId);

        // Editing the draft does not change what is published until republished.
        const u = await client.updateEmailMessage(d.draftEmailMessageId, { expectedRevisionId: d.draftEmailMessageContentRevisionId, lmx: '<Paragraph>Hi {data.name}, see {data.extra}.</Paragraph>' });
        assert.equal(typeof u.contentRevisionId, "string");
        assert.deepEqual([...(await client.getTransactionalEmail(welcome.id)).dataVariables].sort(), ["code", "name"]);
        const p2 = await client.publishTransactionalEmail(welcome.id);
        assert.equal(p2.publishedEmailMessageId, d.draftEmailMessageId);
        assert.equal(p2.draftEmailMessageId, null);
        assert.deepEqual([...p2.dataVariables].sort(), ["extra", "name"]);
      });

      test("dataVariablesFallbacks: per-key merge, null deletes; absent from GET when unset", async () => {
        const t = await client.createTransactionalEmail({ name: "Fallbacks" });
        const id = t.draftEmailMessageId;
        assert.ok(!("dataVariablesFallbacks" in (await client.getEmailMessage(id))));
        const a = await client.updateEmailMessage(id, { expectedRevisionId: t.draftEmailMessageContentRevisionId, dataVariablesFallbacks: { name: "there", city: "Paris" } });
        assert.deepEqual(a.dataVariablesFallbacks, { name: "there", city: "Paris" });
        const b = await client.updateEmailMessage(id, { expectedRevisionId: a.contentRevisionId, dataVariablesFallbacks: { city: null, plan: "free" } });
        assert.deepEqual(b.dataVariablesFallbacks, { name: "there", plan: "free" });
        const c = await client.updateEmailMessage(id, { expectedRevisionId: b.contentRevisionId, subject: "Only the subject" });
        assert.deepEqual(c.dataVariablesFallbacks, { name: "there", plan: "free" });
        assert.deepEqual((await client.getEmailMessage(id)).dataVariablesFallbacks, { name: "there", plan: "free" });
      });
    });

    // ---- §5.11 themes --------------------------------------------------
    describe("themes (§5.11, §6.4)", () => {
      let brand;
      test("the team has one default theme", async () => {
        const page = await client.listThemes();
        assertPage(page, { total: 1, returned: 1, perPage: 20 });
        const [d] = page.data;
        assertKeys(d, THEME_KEYS, "Theme");
        assert.equal(d.isDefault, true);
        assert.equal(typeof d.styles, "object");
      });

      test("create → 201 Theme with isDefault false", async () => {
        const r = await raw(server, "POST", "/api/v1/themes", { key, body: { name: "Raw theme" } });
        assert.equal(r.status, 201, r.text);
        assertKeys(r.json, THEME_KEYS, "Theme");
        assert.equal(r.json.isDefault, false);

        brand = await client.createTheme({ name: "Brand", styles: { backgroundColor: "#111111", bodyXPadding: 32 } });
        assertKeys(brand, THEME_KEYS, "Theme");
        assert.equal(brand.name, "Brand");
        assert.equal(brand.isDefault, false);
        assert.deepEqual(brand.styles, { backgroundColor: "#111111", bodyXPadding: 32 });
        assert.match(brand.createdAt, ISO);
        assert.deepEqual(await client.getTheme(brand.id), brand);
      });

      test("create: missing name → 400; unknown id → 404 Theme not found.", async () => {
        await rejectsAPI(client.createTheme({ styles: {} }), 400);
        await rejectsAPI(client.getTheme(UNKNOWN_ID), 404, "Theme not found.");
        await rejectsAPI(client.updateTheme(UNKNOWN_ID, { name: "x" }), 404);
      });

      test("update: name only → affectedEmailCount 0; styles → count of emails using the theme", async () => {
        const u = await client.updateTheme(brand.id, { name: "Brand 2" });
        assertKeys(u, [...THEME_KEYS, "affectedEmailCount"], "UpdateThemeResponse");
        assert.equal(u.name, "Brand 2");
        assert.equal(u.affectedEmailCount, 0);
        assert.deepEqual(u.styles, brand.styles);

        // An email that uses the theme.
        const t = await client.createTransactionalEmail({ name: "Themed" });
        await client.updateEmailMessage(t.draftEmailMessageId, {
          expectedRevisionId: t.draftEmailMessageContentRevisionId,
          lmx: `<Style themeId="${brand.id}" /><Paragraph>Themed</Paragraph>`,
        });
        const s = await client.updateTheme(brand.id, { styles: { backgroundColor: "#222222" } });
        assertKeys(s, [...THEME_KEYS, "affectedEmailCount"], "UpdateThemeResponse");
        assert.equal(s.styles.backgroundColor, "#222222");
        assert.equal(s.affectedEmailCount, 1);
        await rejectsAPI(client.updateTheme(brand.id, {}), 400);
      });

      test("list: newest first, one default", async () => {
        const page = await client.listThemes({ perPage: 10 });
        assertPage(page, { total: 3, returned: 3, perPage: 10 });
        assert.deepEqual(page.data.map((t) => t.name), ["Brand 2", "Raw theme", page.data[2].name]);
        assert.deepEqual(page.data.map((t) => t.isDefault), [false, false, true]);
        await rejectsAPI(client.listThemes({ perPage: 5 }), 400);
      });
    });

    // ---- §5.12 components ----------------------------------------------
    describe("components (§5.12, §6.5)", () => {
      let footer;
      test("create → 201 Component", async () => {
        const r = await raw(server, "POST", "/api/v1/components", { key, body: { name: "Raw", lmx: "<Paragraph>Raw</Paragraph>" } });
        assert.equal(r.status, 201, r.text);
        assertKeys(r.json, COMPONENT_KEYS, "Component");
        footer = await client.createComponent({ name: "Footer", lmx: "<Section><Paragraph>Footer content</Paragraph></Section>" });
        assertKeys(footer, COMPONENT_KEYS, "Component");
        assert.deepEqual({ ...footer, id: "" }, { id: "", name: "Footer", lmx: "<Section><Paragraph>Footer content</Paragraph></Section>" });
        assert.deepEqual(await client.getComponent(footer.id), footer);
      });

      test("create: missing lmx → 400; invalid LMX → 422; > 100 KB → 413; unknown id → 404 Component not found.", async () => {
        await rejectsAPI(client.createComponent({ name: "No body" }), 400);
        await rejectsAPI(client.createComponent({ name: "Bad", lmx: "<Nope/>" }), 422);
        await rejectsAPI(client.createComponent({ name: "Styled", lmx: '<Style bodyColor="#ffffff" /><Paragraph>x</Paragraph>' }), 422);
        await rejectsAPI(client.createComponent({ name: "Big", lmx: `<Paragraph>${"b".repeat(101 * 1024)}</Paragraph>` }), 413);
        await rejectsAPI(client.getComponent(UNKNOWN_ID), 404, "Component not found.");
      });

      test("update: name → affectedEmailCount 0; body → cascades into the emails using it", async () => {
        const n = await client.updateComponent(footer.id, { name: "Footer 2" });
        assertKeys(n, [...COMPONENT_KEYS, "affectedEmailCount"], "UpdateComponentResponse");
        assert.deepEqual(n, { ...footer, name: "Footer 2", affectedEmailCount: 0 });

        const t = await client.createTransactionalEmail({ name: "With footer" });
        await client.updateEmailMessage(t.draftEmailMessageId, {
          expectedRevisionId: t.draftEmailMessageContentRevisionId,
          lmx: `<Paragraph>Body</Paragraph><Component componentId="${footer.id}" />`,
        });
        const b = await client.updateComponent(footer.id, { lmx: "<Section><Paragraph>Updated footer</Paragraph></Section>" });
        assert.deepEqual(b, { id: footer.id, name: "Footer 2", lmx: "<Section><Paragraph>Updated footer</Paragraph></Section>", affectedEmailCount: 1 });
        assert.deepEqual(await client.getComponent(footer.id), { id: footer.id, name: "Footer 2", lmx: b.lmx });

        await rejectsAPI(client.updateComponent(footer.id, { lmx: "<Nope/>" }), 422);
        await rejectsAPI(client.updateComponent(footer.id, {}), 400);
        await rejectsAPI(client.updateComponent(UNKNOWN_ID, { name: "x" }), 404);
      });

      test("a body using a contact property in a transactional email → 422 with invalidTags", async () => {
        const err = await rejectsAPI(client.updateComponent(footer.id, { lmx: "<Paragraph>Hi {contact.companyName}</Paragraph>" }), 422);
        assert.deepEqual(err.json.invalidTags, ["companyName"]);
      });

      test("list", async () => {
        const page = await client.listComponents({ perPage: 10 });
        assertPage(page, { total: 2, returned: 2, perPage: 10 });
        for (const c of page.data) assertKeys(c, COMPONENT_KEYS, "Component");
        assert.deepEqual(page.data.map((c) => c.name).sort(), ["Footer 2", "Raw"]);
      });
    });

    // ---- §5.17 uploads -------------------------------------------------
    describe("uploads (§5.17)", () => {
      test("createUpload → PUT the PNG → completeUpload → finalUrl serves it", async () => {
        const up = await client.createUpload({ contentType: "image/png", contentLength: PNG.length });
        for (const k of ["emailAssetId", "presignedUrl"]) assert.equal(typeof up[k], "string", k);
        assert.match(up.presignedUrl, /^https?:\/\//);
        const put = await fetch(up.presignedUrl, { method: "PUT", headers: { "Content-Type": "image/png", "Content-Length": String(PNG.length) }, body: PNG });
        await put.arrayBuffer();
        assert.ok(put.ok, `PUT → ${put.status}`);
        const done = await client.completeUpload(up.emailAssetId);
        assertKeys(done, ["emailAssetId", "finalUrl"], "CompleteUploadResponse");
        assert.equal(done.emailAssetId, up.emailAssetId);
        const img = await fetch(done.finalUrl);
        assert.equal(img.status, 200);
        assert.equal(img.headers.get("content-type"), "image/png");
        assert.deepEqual(Buffer.from(await img.arrayBuffer()), PNG);
      });

      test("unsupported content type → 400 with supportedContentTypes", async () => {
        const err = await rejectsAPI(client.createUpload({ contentType: "text/plain", contentLength: 10 }), 400, "Unsupported content type.");
        assert.deepEqual(err.json.supportedContentTypes, SUPPORTED_TYPES);
      });

      test("over 4,000,000 bytes → 413 with maxBytes; non-positive length → 400", async () => {
        const err = await rejectsAPI(client.createUpload({ contentType: "image/png", contentLength: 4000001 }), 413);
        assert.equal(err.json.maxBytes, 4000000);
        await rejectsAPI(client.createUpload({ contentType: "image/png", contentLength: 0 }), 400);
      });

      test("uploaded bytes that are not an image → completeUpload 400; unknown id → 404", async () => {
        const body = Buffer.from("hello, not a png");
        const up = await client.createUpload({ contentType: "image/png", contentLength: body.length });
        const put = await fetch(up.presignedUrl, { method: "PUT", headers: { "Content-Type": "image/png" }, body });
        await put.arrayBuffer();
        await rejectsAPI(client.completeUpload(up.emailAssetId), 400);
        await rejectsAPI(client.completeUpload(UNKNOWN_ID), 404);
      });

      test("completeUpload before the PUT → 400; PUT with another Content-Type or Content-Length → 4xx", async () => {
        const up = await client.createUpload({ contentType: "image/png", contentLength: PNG.length });
        await rejectsAPI(client.completeUpload(up.emailAssetId), 400);
        for (const [ct, body] of [["image/jpeg", PNG], ["image/png", Buffer.concat([PNG, PNG])]]) {
          const put = await fetch(up.presignedUrl, { method: "PUT", headers: { "Content-Type": ct }, body });
          await put.arrayBuffer();
          assert.ok(put.status >= 400 && put.status < 500, `PUT ${ct} ${body.length} bytes → ${put.status}`);
        }
        await rejectsAPI(client.completeUpload(up.emailAssetId), 400);
      });

      test("the presigned URL rejects a tampered signature", async () => {
        const up = await client.createUpload({ contentType: "image/png", contentLength: PNG.length });
        const u = new URL(up.presignedUrl);
        const sig = [...u.searchParams.entries()].find(([k]) => /sig/i.test(k));
        assert.ok(sig, `no signature parameter in ${up.presignedUrl}`);
        u.searchParams.set(sig[0], sig[1].replace(/.$/, (c) => (c === "0" ? "1" : "0")));
        const put = await fetch(u, { method: "PUT", headers: { "Content-Type": "image/png" }, body: PNG });
        await put.arrayBuffer();
        assert.ok(put.status >= 400 && put.status < 500, `tampered PUT → ${put.status}`);
      });
    });

    // ---- §5.6 sending + §7 webhooks ------------------------------------
    describe("sendTransactionalEmail (§5.6) and webhooks (§7)", () => {
      let receipt, unpublished;
      const verify = (d) => new Webhook(secret).verify(d.body, d.headers);

      before(async () => {
        receipt = await client.createTransactionalEmail({ name: "Receipt" });
        await client.updateEmailMessage(receipt.draftEmailMessageId, {
          expectedRevisionId: receipt.draftEmailMessageContentRevisionId,
          subject: "Receipt for {data.name}", fromName: "Acme", fromEmail: "billing",
          lmx: '<Paragraph>Thanks {data.name}, order {data.orderId}.</Paragraph>',
        });
        receipt = await client.publishTransactionalEmail(receipt.id);
        unpublished = await client.createTransactionalEmail({ name: "Never published" });
      });

      test("createContact → contact.created, signed (standardwebhooks), exact payload", async () => {
        const email = mail("hooked");
        const started = Math.floor(Date.now() / 1000);
        const res = await client.createContact({ email, properties: { firstName: "Hook", userId: `hook-${run}` } });
        assert.equal(res.success, true);
        const d = await waitForEvent("contact.created", (j) => j.eventName === "contact.created" && j.contactIdentity?.email === email);
        assert.equal(d.method, "POST");
        assert.equal(d.url, "/hook");
        assert.match(d.headers["content-type"], /^application\/json/);
        assert.match(d.headers["webhook-id"], /\S/);
        assert.match(d.headers["webhook-timestamp"], /^\d+$/);
        assert.match(d.headers["webhook-signature"], /^v1,[A-Za-z0-9+/]+=*( v1,[A-Za-z0-9+/]+=*)*$/);
        assert.deepEqual(verify(d), d.json);

        const j = d.json;
        assertKeys(j, ["eventName", "eventTime", "webhookSchemaVersion", "contactIdentity", "contact"], "contact.created");
        assert.equal(j.webhookSchemaVersion, "1.0.0");
        assert.ok(Number.isInteger(j.eventTime), `eventTime ${j.eventTime}`);
        assert.ok(j.eventTime >= started - 5 && j.eventTime <= Math.floor(Date.now() / 1000) + 5, `eventTime ${j.eventTime} is Unix seconds`);
        assert.deepEqual(j.contactIdentity, { id: res.id, email, userId: `hook-${run}` });
        const [found] = await client.findContact({ email });
        assert.deepEqual(j.contact, found);
      });

      test("a tampered body or a wrong secret fails verification", async () => {
        const d = parsedDeliveries().find((x) => x.json.eventName === "contact.created");
        assert.throws(() => new Webhook(secret).verify(d.body.replace("1.0.0", "1.0.1"), d.headers), WebhookVerificationError);
        assert.throws(() => new Webhook(`whsec_${Buffer.alloc(24, 7).toString("base64")}`).verify(d.body, d.headers), WebhookVerificationError);
      });

      test("lasso webhooks test → testing.testEvent {message: \"test\"}", async () => {
        const before = Math.floor(Date.now() / 1000);
        cli(env, "webhooks", "test", "--team", TEAM);
        const d = await waitForEvent("testing.testEvent", (j) => j.eventName === "testing.testEvent");
        assert.deepEqual(verify(d), d.json);
        assertKeys(d.json, ["eventName", "eventTime", "message", "webhookSchemaVersion"], "testing.testEvent");
        assert.deepEqual({ ...d.json, eventTime: 0 }, { eventName: "testing.testEvent", eventTime: 0, message: "test", webhookSchemaVersion: "1.0.0" });
        assert.ok(Number.isInteger(d.json.eventTime) && d.json.eventTime >= before - 5);
      });

      test("send → {success:true}; the mail arrives; transactional.email.sent + email.delivered", async () => {
        const email = mail("hooked");
        const [contact] = await client.findContact({ email });
        const res = await client.sendTransactionalEmail({ transactionalId: receipt.id, email, dataVariables: { name: "Hook", orderId: 1001 } });
        assert.deepEqual(res, { success: true });
        await waitForMail(env, email, "Receipt for Hook");

        const identity = { id: contact.id, email, userId: `hook-${run}` };
        const sent = await waitForEvent("transactional.email.sent", (j) => j.eventName === "transactional.email.sent" && j.contactIdentity?.email === email);
        assert.deepEqual(verify(sent), sent.json);
        const s = sent.json;
        assertKeys(s, ["eventName", "eventTime", "webhookSchemaVersion", "contactIdentity", "transactionalId", "transactionalName", "email"], "transactional.email.sent");
        assert.equal(s.webhookSchemaVersion, "1.0.0");
        assert.ok(Number.isInteger(s.eventTime));
        assert.deepEqual(s.contactIdentity, identity);
        assert.equal(s.transactionalId, receipt.id);
        assert.equal(s.transactionalName, "Receipt");
        assertKeys(s.email, ["id", "emailMessageId", "subject"], "email");
        assert.equal(typeof s.email.id, "string");
        assert.equal(s.email.emailMessageId, receipt.publishedEmailMessageId);
        assert.equal(s.email.subject, "Receipt for Hook");

        const del = await waitForEvent("email.delivered", (j) => j.eventName === "email.delivered" && j.email?.id === s.email.id);
        assert.deepEqual(verify(del), del.json);
        const e = del.json;
        assertKeys(e, ["eventName", "eventTime", "webhookSchemaVersion", "sourceType", "transactionalId", "email", "contactIdentity"], "email.delivered");
        assert.equal(e.sourceType, "transactional");
        assert.equal(e.transactionalId, receipt.id);
        assert.deepEqual(e.email, s.email);
        assert.deepEqual(e.contactIdentity, identity);
        assert.notEqual(del.headers["webhook-id"], sent.headers["webhook-id"]);
      });

      test("every delivery so far verifies, with unique webhook-ids and only catalogue event names", async () => {
        const names = new Set(["contact.created", "contact.unsubscribed", "contact.deleted", "contact.mailingList.subscribed", "contact.mailingList.unsubscribed",
          "campaign.email.sent", "loop.email.sent", "transactional.email.sent", "email.delivered", "email.softBounced", "email.hardBounced",
          "email.spamReported", "email.opened", "email.clicked", "email.unsubscribed", "email.resubscribed", "testing.testEvent"]);
        const all = parsedDeliveries();
        assert.ok(all.length >= 4);
        for (const d of all) {
          assert.deepEqual(verify(d), d.json);
          assert.ok(names.has(d.json.eventName), d.json.eventName);
        }
        assert.equal(new Set(all.map((d) => d.headers["webhook-id"])).size, all.length, "webhook-id unique per message");
      });

      test("missing data variable → 400 with the nested error shape (§5.6 shape 5)", async () => {
        const err = await rejectsAPI(client.sendTransactionalEmail({ transactionalId: receipt.id, email: mail("r1"), dataVariables: { name: "X" } }), 400);
        assert.deepEqual(err.json, {
          success: false,
          message: "Missing required data variable(s): orderId",
          error: { path: "dataVariables", message: "Missing required data variable(s): orderId" },
          transactionalId: receipt.id,
        });
        assert.equal(err.message, "400 - Missing required data variable(s): orderId");
        // null does not count as present.
        await rejectsAPI(client.sendTransactionalEmail({ transactionalId: receipt.id, email: mail("r1"), dataVariables: { name: "X", orderId: null } }), 400);
      });

      test("no dataVariables at all → 400 (path dataVariables)", async () => {
        const err = await rejectsAPI(client.sendTransactionalEmail({ transactionalId: receipt.id, email: mail("r1") }), 400,
          "There are required fields for this email. You need to include a 'dataVariables' object with the required fields.");
        assert.equal(err.json.error?.path ?? err.json.path, "dataVariables");
      });

      test("unknown transactionalId → 404; unpublished → 400; missing email → 400", async () => {
        const e404 = await rejectsAPI(client.sendTransactionalEmail({ transactionalId: UNKNOWN_ID, email: mail("r1"), dataVariables: {} }), 404);
        assert.match(e404.json.message, /not found/i);
        await rejectsAPI(client.sendTransactionalEmail({ transactionalId: unpublished.id, email: mail("r1") }), 400);
        await rejectsAPI(client.sendTransactionalEmail({ transactionalId: receipt.id, dataVariables: { name: "X", orderId: 1 } }), 400);
        await rejectsAPI(client.sendTransactionalEmail({ transactionalId: receipt.id, email: "not-an-email", dataVariables: { name: "X", orderId: 1 } }), 400);
        await rejectsAPI(noDomain.sendTransactionalEmail({ transactionalId: receipt.id, email: mail("r1"), dataVariables: { name: "X", orderId: 1 } }), 404);
      });

      test("Idempotency-Key: first use 200, reuse → 409 (headers in the SDK's params object)", async () => {
        const k = `tx-${run}`;
        const params = { transactionalId: receipt.id, email: mail("idem"), dataVariables: { name: "Idem", orderId: 7 } };
        assert.deepEqual(await client.sendTransactionalEmail({ ...params, headers: { "Idempotency-Key": k } }), { success: true });
        await rejectsAPI(client.sendTransactionalEmail({ ...params, headers: { "Idempotency-Key": k } }), 409);
        await rejectsAPI(client.sendTransactionalEmail({ ...params, dataVariables: { name: "Other", orderId: 8 }, headers: { "Idempotency-Key": k } }), 409);
        assert.deepEqual(await client.sendTransactionalEmail({ ...params, headers: { "Idempotency-Key": `${k}-2` } }), { success: true });
        await rejectsAPI(client.sendTransactionalEmail({ ...params, headers: { "Idempotency-Key": "k".repeat(101) } }), 400);
        await sleep(500);
        assert.equal(mailbox(env).filter((m) => m.to === mail("idem")).length, 2, "the rejected reuse sent nothing");
      });

      test("addToAudience: true creates the contact; without it no contact is created", async () => {
        const plain = mail("noaudience");
        assert.deepEqual(await client.sendTransactionalEmail({ transactionalId: receipt.id, email: plain, dataVariables: { name: "N", orderId: 1 } }), { success: true });
        assert.deepEqual(await client.findContact({ email: plain }), []);

        const email = mail("audience");
        assert.deepEqual(await client.findContact({ email }), []);
        assert.deepEqual(await client.sendTransactionalEmail({ transactionalId: receipt.id, email, addToAudience: true, dataVariables: { name: "Aud", orderId: 2 } }), { success: true });
        const found = await client.findContact({ email });
        assert.equal(found.length, 1);
        assert.equal(found[0].email, email);
        assert.equal(found[0].subscribed, true);
        await waitForMail(env, email, "Receipt for Aud");
        await waitForEvent("contact.created for addToAudience", (j) => j.eventName === "contact.created" && j.contactIdentity?.email === email);
      });
    });
  });
}
