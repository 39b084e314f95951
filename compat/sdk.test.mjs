// Compatibility test: the official `loops` npm SDK (7.3.0, unmodified) against
// a live Lasso server. Contract: /work/shared/spec/loops-api.md §1–§5.5, §5.18,
// §6.1–6.2, §15, §16.
//
//   cd compat && npm ci && LASSO_BIN=../bin/lasso node --test
//
// The binary is taken from $LASSO_BIN (default ../bin/lasso, relative to this
// directory); nothing is built here. With LASSO_TEST_POSTGRES_URL set, the
// whole suite runs a second time against PostgreSQL, each server in a fresh
// schema that is dropped at the end (with psql).

import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { RateLimitExceededError } from "loops";
import {
  makeEnv, dropEnv, cli, sql, haveTool, startServer, sdk, raw, rejectsAPI, rejectsValidation, assertRawError, backends,
} from "./helpers.mjs";

// Process, environment and assertion helpers live in ./helpers.mjs.

const BUILTIN_PROPERTIES = [
  { key: "firstName", label: "First Name", type: "string" },
  { key: "lastName", label: "Last Name", type: "string" },
  { key: "email", label: "Email", type: "string" },
  { key: "notes", label: "Notes", type: "string" },
  { key: "source", label: "Source", type: "string" },
  { key: "userGroup", label: "User Group", type: "string" },
  { key: "userId", label: "User Id", type: "string" },
  { key: "subscribed", label: "Subscribed", type: "boolean" },
  { key: "createdAt", label: "Created At", type: "date" },
];

const CUSTOM_PROPERTIES = [
  { key: "favoriteColor", label: "Favorite Color", type: "string" },
  { key: "seatCount", label: "Seat Count", type: "number" },
  { key: "isVip", label: "Is Vip", type: "boolean" },
  { key: "renewedAt", label: "Renewed At", type: "date" },
];

const CONTACT_KEYS = ["id", "email", "firstName", "lastName", "source", "subscribed", "userGroup", "userId", "mailingLists", "optInStatus"];

const byKey = (a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

// ---------------------------------------------------------------------------
// The suite, once per backend


const RENEWED_AT_MS = 1751183259370; // 2025-06-29T07:47:39.370Z
const SUPPRESSION_LIMIT = 2;
const DEDICATED_IPS = ["192.0.2.10", "192.0.2.11"];

for (const backend of backends) {
  describe(`loops SDK 7.3.0 against lasso (${backend.name})`, () => {
    let env, otherEnv, server, limited, key, otherKey, limitedKey, limitedKey2, listMain, listInvestors, teamId;
    let client, otherClient;
    const run = `${backend.name}-${Date.now()}`;
    const mail = (local) => `${local}-${run}@example.com`;

    before(async () => {
      env = makeEnv(backend, "main");
      key = cli(env, "keys", "create", "--team", "Compat Team", "--name", "sdk");
      otherKey = cli(env, "keys", "create", "--team", "Other Team");
      listMain = cli(env, "lists", "create", "--team", "Compat Team", "--name", "Main list", "--description", "All customers.", "--public");
      listInvestors = cli(env, "lists", "create", "--team", "Compat Team", "--name", "Investors");
      assert.match(key, /^\S+$/, "keys create prints only the key");
      assert.match(listMain, /^\S+$/, "lists create prints only the id");
      server = await startServer(env, [
        "--rate-limit", "100000",
        "--suppression-removal-limit", String(SUPPRESSION_LIMIT),
        ...DEDICATED_IPS.flatMap((ip) => ["--dedicated-ip", ip]),
      ]);
      client = sdk(server, key);
      otherClient = sdk(server, otherKey);

      otherEnv = makeEnv(backend, "limited");
      limitedKey = cli(otherEnv, "keys", "create", "--team", "Limited Team");
      limitedKey2 = cli(otherEnv, "keys", "create", "--team", "Second Limited Team");
      limited = await startServer(otherEnv, ["--rate-limit", "3"]);
    });

    after(async () => {
      for (const s of [server, limited]) if (s) await s.stop();
      dropEnv(env);
      dropEnv(otherEnv);
    });

    // ---- §5.1 API key ---------------------------------------------------
    describe("testApiKey", () => {
      test("good key → {success:true, teamName}", async () => {
        assert.deepEqual(await client.testApiKey(), { success: true, teamName: "Compat Team" });
        assert.deepEqual(await otherClient.testApiKey(), { success: true, teamName: "Other Team" });
      });

      test("bad key → 401 Invalid API key (success, message and error)", async () => {
        const err = await rejectsAPI(sdk(server, "lso_not_a_real_key").testApiKey(), 401, "Invalid API key");
        assert.deepEqual(err.json, { success: false, message: "Invalid API key", error: "Invalid API key" });
        assert.equal(err.message, "401 - Invalid API key");
      });

      test("missing Authorization header → 401", async () => {
        assertRawError(await raw(server, "GET", "/api/v1/api-key"), 401, "Invalid API key");
      });

      test("served under /api/v1, /api and /v1", async () => {
        for (const p of ["/api/v1/api-key", "/api/api-key", "/v1/api-key"]) {
          const r = await raw(server, "GET", p, { key });
          assert.equal(r.status, 200, p);
          assert.deepEqual(r.json, { success: true, teamName: "Compat Team" }, p);
        }
      });
    });

    // ---- §5.3 contact properties ---------------------------------------
    describe("createContactProperty", () => {
      test("creates one property of each type", async () => {
        for (const p of CUSTOM_PROPERTIES) {
          assert.deepEqual(await client.createContactProperty(p.key, p.type), { success: true });
        }
      });

      test("duplicate name → 400 Property already exists.", async () => {
        await rejectsAPI(client.createContactProperty("favoriteColor", "string"), 400, "Property already exists.");
        await rejectsAPI(client.createContactProperty("favoriteColor", "number"), 400, "Property already exists.");
      });

      test("name of a built-in property → 400", async () => {
        for (const n of ["firstName", "email", "userId"]) await rejectsAPI(client.createContactProperty(n, "string"), 400);
      });

      test("reserved names → 400", async () => {
        for (const n of ["id", "listId", "softDeleteAt", "teamId", "updatedAt"]) {
          await rejectsAPI(client.createContactProperty(n, "string"), 400);
        }
      });

      test("non-camelCase names → 400", async () => {
        for (const n of ["PlanName", "plan_name", "plan-name", "plan name", "1plan", ""]) {
          await rejectsAPI(client.createContactProperty(n, "string"), 400);
        }
      });

      test("bad or missing type → 400", async () => {
        await rejectsAPI(client.createContactProperty("planName", "text"), 400);
        await rejectsAPI(client.createContactProperty("planName", undefined), 400);
        await rejectsAPI(client.createContactProperty(undefined, "string"), 400);
        // None of the failed calls created it.
        const custom = await client.listContactProperties("custom");
        assert.ok(!custom.some((p) => p.key === "planName"));
      });
    });

    describe("listContactProperties", () => {
      test("all: built-ins in §5.3 order, then custom", async () => {
        for (const list of [undefined, "all"]) {
          const props = await client.listContactProperties(list);
          assert.ok(Array.isArray(props));
          assert.deepEqual(props.slice(0, BUILTIN_PROPERTIES.length), BUILTIN_PROPERTIES);
          assert.deepEqual(props.slice(BUILTIN_PROPERTIES.length).sort(byKey), [...CUSTOM_PROPERTIES].sort(byKey));
        }
      });

      test("custom: only custom properties", async () => {
        const props = await client.listContactProperties("custom");
        assert.deepEqual([...props].sort(byKey), [...CUSTOM_PROPERTIES].sort(byKey));
      });

      test("another team sees none of them", async () => {
        assert.deepEqual(await otherClient.listContactProperties("custom"), []);
        assert.deepEqual(await otherClient.listContactProperties("all"), BUILTIN_PROPERTIES);
      });
    });

    // ---- §5.4 lists -----------------------------------------------------
    describe("listMailingLists", () => {
      test("MailingList shape: id, name, description|null, isPublic", async () => {
        const lists = await client.listMailingLists();
        assert.ok(Array.isArray(lists));
        const sorted = [...lists].sort((a, b) => a.name.localeCompare(b.name));
        assert.deepEqual(sorted, [
          { id: listInvestors, name: "Investors", description: null, isPublic: false },
          { id: listMain, name: "Main list", description: "All customers.", isPublic: true },
        ]);
      });

      test("another team has no lists → []", async () => {
        assert.deepEqual(await otherClient.listMailingLists(), []);
      });
    });

    // ---- §5.2 contacts --------------------------------------------------
    describe("createContact / findContact", () => {
      let bobId;

      test("creates a contact with built-in, custom (all four types) and list values", async () => {
        const res = await client.createContact({
          email: mail("bob"),
          properties: {
            firstName: "Bob",
            userGroup: "beta",
            userId: `bob-${run}`,
            favoriteColor: "Blue",
            seatCount: 3,
            isVip: true,
            renewedAt: RENEWED_AT_MS,
          },
          mailingLists: { [listMain]: true, [listInvestors]: false },
        });
        assert.equal(res.success, true);
        assert.equal(typeof res.id, "string");
        assert.ok(res.id.length > 0);
        assert.deepEqual(Object.keys(res).sort(), ["id", "success"]);
        bobId = res.id;
      });

      test("findContact by email → array of one Contact with every §6.1 key and the custom properties", async () => {
        const found = await client.findContact({ email: mail("bob") });
        assert.ok(Array.isArray(found));
        assert.equal(found.length, 1);
        const c = found[0];
        assert.deepEqual(Object.keys(c).sort(), [...CONTACT_KEYS, ...CUSTOM_PROPERTIES.map((p) => p.key)].sort());
        // Date custom properties: serialisation is not fixed by the contract
        // (§6.1 [INF] ISO-8601); it must denote the same instant.
        assert.equal(new Date(c.renewedAt).getTime(), RENEWED_AT_MS, `renewedAt ${JSON.stringify(c.renewedAt)}`);
        const { renewedAt, ...rest } = c;
        assert.deepEqual(rest, {
          id: bobId,
          email: mail("bob"),
          firstName: "Bob",
          lastName: null,
          source: "API",
          subscribed: true,
          userGroup: "beta",
          userId: `bob-${run}`,
          mailingLists: { [listMain]: true },
          optInStatus: null,
          favoriteColor: "Blue",
          seatCount: 3,
          isVip: true,
        });
      });

      test("findContact by userId → same contact", async () => {
        const found = await client.findContact({ userId: `bob-${run}` });
        assert.equal(found.length, 1);
        assert.equal(found[0].id, bobId);
        assert.equal(found[0].email, mail("bob"));
      });

      test("emails with + and other URL-special characters round-trip through the query string", async () => {
        const email = `o'neil+tag%x&y=z-${run}@example.com`;
        const res = await client.createContact({ email });
        const found = await client.findContact({ email });
        assert.equal(found.length, 1);
        assert.equal(found[0].id, res.id);
        assert.equal(found[0].email, email);
        assert.equal((await client.checkContactSuppression({ email })).contact.id, res.id);
        assert.deepEqual(await client.deleteContact({ email }), { success: true, message: "Contact deleted." });
      });

      test("findContact for a missing contact → [] (not 404)", async () => {
        assert.deepEqual(await client.findContact({ email: mail("nobody") }), []);
        assert.deepEqual(await client.findContact({ userId: `nobody-${run}` }), []);
      });

      test("unset custom properties are present as null; source and userGroup defaults", async () => {
        await client.createContact({ email: mail("plain") });
        const [c] = await client.findContact({ email: mail("plain") });
        assert.deepEqual(Object.keys(c).sort(), [...CONTACT_KEYS, ...CUSTOM_PROPERTIES.map((p) => p.key)].sort());
        assert.equal(c.source, "API");
        assert.equal(c.subscribed, true);
        assert.equal(c.userGroup, "");
        assert.equal(c.userId, null);
        assert.equal(c.firstName, null);
        assert.deepEqual(c.mailingLists, {});
        for (const p of CUSTOM_PROPERTIES) assert.equal(c[p.key], null, p.key);
      });

      test("custom source and subscribed:false on create are kept", async () => {
        await client.createContact({ email: mail("carol"), properties: { source: "Import", subscribed: false } });
        const [c] = await client.findContact({ email: mail("carol") });
        assert.equal(c.source, "Import");
        assert.equal(c.subscribed, false);
      });

      test("duplicate email → 409", async () => {
        await rejectsAPI(client.createContact({ email: mail("bob") }), 409, "Email or `userId` already exists.");
      });

      test("duplicate userId → 409", async () => {
        await rejectsAPI(client.createContact({ email: mail("bob2"), properties: { userId: `bob-${run}` } }), 409, "Email or `userId` already exists.");
        assert.deepEqual(await client.findContact({ email: mail("bob2") }), []);
      });

      test("invalid email → 400", async () => {
        await rejectsAPI(client.createContact({ email: "not-an-email" }), 400, "Invalid email address.");
        await rejectsAPI(client.createContact({ email: undefined }), 400);
      });

      test("value over 500 characters (quotes included) → 400", async () => {
        // 498 characters + 2 quotes = 500: allowed.
        await client.createContact({ email: mail("long-ok"), properties: { firstName: "a".repeat(498) } });
        const [c] = await client.findContact({ email: mail("long-ok") });
        assert.equal(c.firstName, "a".repeat(498));
        await rejectsAPI(
          client.createContact({ email: mail("long"), properties: { firstName: "a".repeat(499) } }),
          400,
          "Some body key or value is longer than allowable",
        );
        await rejectsAPI(
          client.createContact({ email: mail("long"), properties: { favoriteColor: "x".repeat(600) } }),
          400,
          "Some body key or value is longer than allowable",
        );
        assert.deepEqual(await client.findContact({ email: mail("long") }), []);
      });

      test("findContact rejects both/neither client-side; the server answers 400 too", async () => {
        await rejectsValidation(client.findContact({ email: mail("bob"), userId: "x" }));
        await rejectsValidation(client.findContact({}));
        assertRawError(await raw(server, "GET", `/api/v1/contacts/find?email=${encodeURIComponent(mail("bob"))}&userId=x`, { key }), 400);
        assertRawError(await raw(server, "GET", "/api/v1/contacts/find", { key }), 400);
        await rejectsAPI(client.findContact({ email: "not-an-email" }), 400);
      });
    });

    describe("updateContact", () => {
      const uid = `dave-${run}`;
      let daveId;

      test("upsert by email creates a new contact", async () => {
        const res = await client.updateContact({ email: mail("dave"), properties: { firstName: "Dave", favoriteColor: "Green" } });
        assert.equal(res.success, true);
        assert.equal(typeof res.id, "string");
        daveId = res.id;
        const [c] = await client.findContact({ email: mail("dave") });
        assert.equal(c.id, daveId);
        assert.equal(c.firstName, "Dave");
        assert.equal(c.favoriteColor, "Green");
        assert.equal(c.subscribed, true);
        assert.equal(c.source, "API");
      });

      test("upsert by email updates the existing contact (same id)", async () => {
        const res = await client.updateContact({ email: mail("dave"), properties: { lastName: "Jones", seatCount: 7, userId: uid } });
        assert.deepEqual(res, { success: true, id: daveId });
        const [c] = await client.findContact({ email: mail("dave") });
        assert.equal(c.firstName, "Dave");
        assert.equal(c.lastName, "Jones");
        assert.equal(c.seatCount, 7);
        assert.equal(c.userId, uid);
      });

      test("update by userId only", async () => {
        const res = await client.updateContact({ userId: uid, properties: { isVip: false, userGroup: "gold" } });
        assert.deepEqual(res, { success: true, id: daveId });
        const [c] = await client.findContact({ userId: uid });
        assert.equal(c.isVip, false);
        assert.equal(c.userGroup, "gold");
      });

      test("change email via userId", async () => {
        const res = await client.updateContact({ userId: uid, email: mail("dave.new") });
        assert.deepEqual(res, { success: true, id: daveId });
        assert.deepEqual(await client.findContact({ email: mail("dave") }), []);
        const [c] = await client.findContact({ email: mail("dave.new") });
        assert.equal(c.id, daveId);
        assert.equal(c.userId, uid);
      });

      test("null resets a property", async () => {
        await client.updateContact({ userId: uid, properties: { favoriteColor: null, lastName: null, seatCount: null } });
        const [c] = await client.findContact({ userId: uid });
        assert.equal(c.favoriteColor, null);
        assert.equal(c.lastName, null);
        assert.equal(c.seatCount, null);
        assert.equal(c.firstName, "Dave", "untouched properties stay");
      });

      test("subscribed false / true; omitted leaves it unchanged", async () => {
        await client.updateContact({ email: mail("dave.new"), properties: { subscribed: false } });
        assert.equal((await client.findContact({ userId: uid }))[0].subscribed, false);
        await client.updateContact({ email: mail("dave.new"), properties: { firstName: "David" } });
        assert.equal((await client.findContact({ userId: uid }))[0].subscribed, false);
        await client.updateContact({ email: mail("dave.new"), properties: { subscribed: true } });
        assert.equal((await client.findContact({ userId: uid }))[0].subscribed, true);
      });

      test("mailingLists subscribe and unsubscribe", async () => {
        await client.updateContact({ userId: uid, mailingLists: { [listMain]: true, [listInvestors]: true } });
        assert.deepEqual((await client.findContact({ userId: uid }))[0].mailingLists, { [listMain]: true, [listInvestors]: true });
        await client.updateContact({ userId: uid, mailingLists: { [listMain]: false } });
        assert.deepEqual((await client.findContact({ userId: uid }))[0].mailingLists, { [listInvestors]: true });
      });

      test("email + userId matching nothing creates a contact with both", async () => {
        const res = await client.updateContact({ email: mail("erin"), userId: `erin-${run}` });
        assert.equal(res.success, true);
        const [c] = await client.findContact({ userId: `erin-${run}` });
        assert.equal(c.id, res.id);
        assert.equal(c.email, mail("erin"));
      });

      test("unknown userId alone → 400", async () => {
        await rejectsAPI(client.updateContact({ userId: `ghost-${run}`, properties: { firstName: "Ghost" } }), 400);
        assert.deepEqual(await client.findContact({ userId: `ghost-${run}` }), []);
      });

      test("neither email nor userId: SDK ValidationError; server 400", async () => {
        await rejectsValidation(client.updateContact({ properties: { firstName: "X" } }));
        assertRawError(await raw(server, "PUT", "/api/v1/contacts/update", { key, body: { firstName: "X" } }), 400);
      });

      test("invalid email → 400; over-long value → 400", async () => {
        await rejectsAPI(client.updateContact({ email: "nope" }), 400);
        await rejectsAPI(
          client.updateContact({ email: mail("dave.new"), properties: { firstName: "b".repeat(501) } }),
          400,
          "Some body key or value is longer than allowable",
        );
        assert.equal((await client.findContact({ userId: uid }))[0].firstName, "David");
      });
    });

    describe("deleteContact", () => {
      test("by email → {success:true, message:'Contact deleted.'}, then 404", async () => {
        await client.createContact({ email: mail("del1") });
        assert.deepEqual(await client.deleteContact({ email: mail("del1") }), { success: true, message: "Contact deleted." });
        assert.deepEqual(await client.findContact({ email: mail("del1") }), []);
        await rejectsAPI(client.deleteContact({ email: mail("del1") }), 404);
      });

      test("by userId", async () => {
        await client.createContact({ email: mail("del2"), properties: { userId: `del2-${run}` } });
        assert.deepEqual(await client.deleteContact({ userId: `del2-${run}` }), { success: true, message: "Contact deleted." });
        assert.deepEqual(await client.findContact({ userId: `del2-${run}` }), []);
        await rejectsAPI(client.deleteContact({ userId: `del2-${run}` }), 404);
      });

      test("the email can be used again after deletion", async () => {
        const res = await client.createContact({ email: mail("del1") });
        assert.equal(res.success, true);
      });

      test("both / neither: SDK ValidationError; server 400", async () => {
        await rejectsValidation(client.deleteContact({ email: mail("del1"), userId: "x" }));
        await rejectsValidation(client.deleteContact({}));
        assertRawError(await raw(server, "POST", "/api/v1/contacts/delete", { key, body: { email: mail("del1"), userId: "x" } }), 400);
        assertRawError(await raw(server, "POST", "/api/v1/contacts/delete", { key, body: {} }), 400);
        assert.equal((await client.findContact({ email: mail("del1") })).length, 1, "nothing deleted");
      });
    });

    // ---- suppression ----------------------------------------------------
    describe("checkContactSuppression / removeContactSuppression", () => {
      const uid = `sup-${run}`;
      let supId;

      before(async () => {
        supId = (await client.createContact({ email: mail("sup"), properties: { userId: uid } })).id;
        for (const n of ["sup2", "sup3"]) await client.createContact({ email: mail(n) });
      });

      test("not suppressed → isSuppressed false with the removal quota", async () => {
        const want = {
          contact: { id: supId, email: mail("sup"), userId: uid },
          isSuppressed: false,
          removalQuota: { limit: SUPPRESSION_LIMIT, remaining: SUPPRESSION_LIMIT },
        };
        assert.deepEqual(await client.checkContactSuppression({ email: mail("sup") }), want);
        assert.deepEqual(await client.checkContactSuppression({ userId: uid }), want);
      });

      test("contact without userId → userId null", async () => {
        const res = await client.checkContactSuppression({ email: mail("sup2") });
        assert.equal(res.contact.userId, null);
        assert.equal(res.contact.email, mail("sup2"));
      });

      test("remove when not suppressed → 400 This contact is not suppressed.", async () => {
        await rejectsAPI(client.removeContactSuppression({ email: mail("sup") }), 400, "This contact is not suppressed.");
        await rejectsAPI(client.removeContactSuppression({ userId: uid }), 400, "This contact is not suppressed.");
      });

      test("unknown contact → 404 This contact was not found.", async () => {
        await rejectsAPI(client.checkContactSuppression({ email: mail("ghost") }), 404, "This contact was not found.");
        await rejectsAPI(client.checkContactSuppression({ userId: `ghost-${run}` }), 404, "This contact was not found.");
        await rejectsAPI(client.removeContactSuppression({ email: mail("ghost") }), 404, "This contact was not found.");
        await rejectsAPI(client.removeContactSuppression({ userId: `ghost-${run}` }), 404, "This contact was not found.");
      });

      test("neither identifier → 400 An email or userId is required.", async () => {
        await rejectsValidation(client.checkContactSuppression({}));
        assertRawError(await raw(server, "GET", "/api/v1/contacts/suppression", { key }), 400, "An email or userId is required.");
        assertRawError(await raw(server, "DELETE", "/api/v1/contacts/suppression", { key }), 400, "An email or userId is required.");
      });

      test("another team cannot see the contact → 404", async () => {
        await rejectsAPI(otherClient.checkContactSuppression({ email: mail("sup") }), 404);
      });

      const tool = backend.pg ? "psql" : "sqlite3";
      test(`suppressed (planted with ${tool}) → check true, remove spends the quota, exhausted → 400`, { skip: haveTool(tool) ? false : `${tool} not installed` }, async () => {
        teamId = sql(env, "SELECT id FROM teams WHERE name = 'Compat Team'");
        assert.ok(teamId, "team id");
        const now = Date.now();
        for (const n of ["sup", "sup2", "sup3"]) {
          sql(env, `INSERT INTO suppressions (team_id, email, reason, created_at) VALUES ('${teamId}', '${mail(n)}', 'hard_bounce', ${now})`);
        }
        const check = await client.checkContactSuppression({ userId: uid });
        assert.deepEqual(check, {
          contact: { id: supId, email: mail("sup"), userId: uid },
          isSuppressed: true,
          removalQuota: { limit: SUPPRESSION_LIMIT, remaining: SUPPRESSION_LIMIT },
        });
        assert.deepEqual(await client.removeContactSuppression({ userId: uid }), {
          success: true,
          message: "Email removed from suppression list.",
          removalQuota: { limit: SUPPRESSION_LIMIT, remaining: SUPPRESSION_LIMIT - 1 },
        });
        const after1 = await client.checkContactSuppression({ email: mail("sup") });
        assert.equal(after1.isSuppressed, false);
        assert.deepEqual(after1.removalQuota, { limit: SUPPRESSION_LIMIT, remaining: SUPPRESSION_LIMIT - 1 });
        await rejectsAPI(client.removeContactSuppression({ email: mail("sup") }), 400, "This contact is not suppressed.");
        assert.deepEqual(await client.removeContactSuppression({ email: mail("sup2") }), {
          success: true,
          message: "Email removed from suppression list.",
          removalQuota: { limit: SUPPRESSION_LIMIT, remaining: 0 },
        });
        // Quota exhausted → 400, and the contact stays suppressed.
        await rejectsAPI(client.removeContactSuppression({ email: mail("sup3") }), 400);
        const still = await client.checkContactSuppression({ email: mail("sup3") });
        assert.equal(still.isSuppressed, true);
        assert.deepEqual(still.removalQuota, { limit: SUPPRESSION_LIMIT, remaining: 0 });
      });
    });

    // ---- §5.5 events ----------------------------------------------------
    describe("sendEvent", () => {
      test("with eventProperties, contactProperties and mailingLists creates the contact", async () => {
        const res = await client.sendEvent({
          email: mail("eve"),
          eventName: "signup",
          eventProperties: { plan: "pro", trialDays: 14, isTrial: true, startedAt: "2025-06-29T07:47:39.370Z" },
          contactProperties: { firstName: "Eve", favoriteColor: "Red", userId: `eve-${run}` },
          mailingLists: { [listInvestors]: true },
        });
        assert.deepEqual(res, { success: true });
        const [c] = await client.findContact({ email: mail("eve") });
        assert.equal(c.firstName, "Eve");
        assert.equal(c.favoriteColor, "Red");
        assert.equal(c.userId, `eve-${run}`);
        assert.equal(c.subscribed, true);
        assert.deepEqual(c.mailingLists, { [listInvestors]: true });
        // Event properties are scoped to the event, not stored on the contact.
        assert.ok(!("plan" in c) && !("trialDays" in c));
      });

      test("for an existing contact by userId updates contact properties; null resets", async () => {
        assert.deepEqual(
          await client.sendEvent({ userId: `eve-${run}`, eventName: "upgraded", contactProperties: { seatCount: 5, favoriteColor: null } }),
          { success: true },
        );
        const [c] = await client.findContact({ userId: `eve-${run}` });
        assert.equal(c.seatCount, 5);
        assert.equal(c.favoriteColor, null);
      });

      test("nested contactProperties object is accepted too (§16 #16)", async () => {
        const r = await raw(server, "POST", "/api/v1/events/send", {
          key, body: { email: mail("eve"), eventName: "nested", contactProperties: { lastName: "Nested" } },
        });
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(r.json, { success: true });
        assert.equal((await client.findContact({ email: mail("eve") }))[0].lastName, "Nested");
      });

      test("Idempotency-Key: first use 200, any reuse → 409", async () => {
        const k = `idem-${run}`;
        const ev = { email: mail("eve"), eventName: "purchase", eventProperties: { amount: 10 } };
        assert.deepEqual(await client.sendEvent({ ...ev, headers: { "Idempotency-Key": k } }), { success: true });
        await rejectsAPI(client.sendEvent({ ...ev, headers: { "Idempotency-Key": k } }), 409);
        await rejectsAPI(client.sendEvent({ ...ev, eventProperties: { amount: 11 }, headers: { "Idempotency-Key": k } }), 409);
        assert.deepEqual(await client.sendEvent({ ...ev, headers: { "Idempotency-Key": `${k}-2` } }), { success: true });
        // Keys are per team: another team may use the same key.
        assert.deepEqual(await otherClient.sendEvent({ ...ev, headers: { "Idempotency-Key": k } }), { success: true });
      });

      test("Idempotency-Key over 100 characters → 400", async () => {
        await rejectsAPI(client.sendEvent({ email: mail("eve"), eventName: "x", headers: { "Idempotency-Key": "k".repeat(101) } }), 400);
      });

      test("missing or empty eventName → 400 (the SDK does not validate it)", async () => {
        await rejectsAPI(client.sendEvent({ email: mail("eve") }), 400);
        await rejectsAPI(client.sendEvent({ email: mail("eve"), eventName: "" }), 400);
        assertRawError(await raw(server, "POST", "/api/v1/events/send", { key, body: { email: mail("eve") } }), 400);
      });

      test("userId only for an unknown contact → 400 Contact not found.", async () => {
        await rejectsAPI(client.sendEvent({ userId: `ghost-${run}`, eventName: "signup" }), 400, "Contact not found.");
        assert.deepEqual(await client.findContact({ userId: `ghost-${run}` }), []);
      });

      test("neither email nor userId: SDK ValidationError; server 400", async () => {
        await rejectsValidation(client.sendEvent({ eventName: "signup" }));
        assertRawError(await raw(server, "POST", "/api/v1/events/send", { key, body: { eventName: "signup" } }), 400);
      });

      test("invalid email → 400; over-long event property → 400", async () => {
        await rejectsAPI(client.sendEvent({ email: "nope", eventName: "signup" }), 400);
        await rejectsAPI(
          client.sendEvent({ email: mail("eve"), eventName: "signup", eventProperties: { note: "n".repeat(499) } }),
          400,
          "Some body key or value is longer than allowable",
        );
      });
    });

    // ---- §5.18 ----------------------------------------------------------
    describe("listDedicatedSendingIps", () => {
      test("returns the configured IPs", async () => {
        assert.deepEqual(await client.listDedicatedSendingIps(), DEDICATED_IPS);
      });
    });

    // ---- tenant isolation ----------------------------------------------
    describe("tenant isolation", () => {
      test("a second team's key cannot see or delete the first team's contact", async () => {
        assert.equal((await client.findContact({ email: mail("bob") })).length, 1);
        assert.deepEqual(await otherClient.findContact({ email: mail("bob") }), []);
        assert.deepEqual(await otherClient.findContact({ userId: `bob-${run}` }), []);
        await rejectsAPI(otherClient.deleteContact({ email: mail("bob") }), 404);
        await rejectsAPI(otherClient.deleteContact({ userId: `bob-${run}` }), 404);
        assert.equal((await client.findContact({ email: mail("bob") })).length, 1, "still there for its own team");
      });

      test("the same email in another team is a separate contact", async () => {
        const mine = (await client.findContact({ email: mail("bob") }))[0];
        const res = await otherClient.createContact({ email: mail("bob"), properties: { firstName: "Other Bob" } });
        assert.equal(res.success, true);
        assert.notEqual(res.id, mine.id);
        assert.equal((await client.findContact({ email: mail("bob") }))[0].firstName, "Bob");
        const [theirs] = await otherClient.findContact({ email: mail("bob") });
        assert.equal(theirs.firstName, "Other Bob");
        assert.deepEqual(Object.keys(theirs).sort(), [...CONTACT_KEYS].sort(), "no custom keys of the other team");
      });

      test("another team's list id cannot be used", async () => {
        await rejectsAPI(otherClient.updateContact({ email: mail("bob"), mailingLists: { [listMain]: true } }), 400);
      });
    });

    // ---- transport ------------------------------------------------------
    describe("transport rules", () => {
      test("rate-limit headers on every authenticated response", async () => {
        const cases = [
          ["GET", "/api/v1/api-key", undefined, 200],
          ["GET", `/api/v1/contacts/find?email=${encodeURIComponent(mail("bob"))}`, undefined, 200],
          ["POST", "/api/v1/contacts/create", { email: "bad" }, 400],
          ["POST", "/api/v1/contacts/delete", { email: mail("ghost") }, 404],
          ["POST", "/api/v1/contacts/create", { email: mail("bob") }, 409],
        ];
        for (const [method, p, body, status] of cases) {
          const r = await raw(server, method, p, { key, body });
          assert.equal(r.status, status, `${method} ${p}: ${r.text}`);
          assert.equal(r.headers.get("x-ratelimit-limit"), "100000", `${method} ${p}`);
          const rem = r.headers.get("x-ratelimit-remaining");
          assert.match(rem ?? "", /^\d+$/, `${method} ${p} remaining`);
          assert.ok(Number(rem) < 100000);
        }
      });

      test("every success is JSON (SDK rejects non-JSON 2xx)", async () => {
        const r = await raw(server, "GET", "/api/v1/lists", { key, headers: { "Content-Type": "application/json" } });
        assert.equal(r.status, 200);
        assert.match(r.headers.get("content-type"), /^application\/json/);
      });

      test("wrong method → 405 with a JSON error body", async () => {
        for (const [m, p] of [["POST", "/api/v1/lists"], ["GET", "/api/v1/contacts/create"], ["DELETE", "/api/v1/api-key"], ["POST", "/v1/contacts/update"]]) {
          const r = await raw(server, m, p, { key });
          assertRawError(r, 405, "Method not allowed.");
        }
        await rejectsAPI(client._makeQuery({ path: "v1/lists", method: "POST" }), 405);
      });

      test("unknown path → 404 with a JSON error body", async () => {
        for (const p of ["/api/v1/nope", "/api/v1/contacts/nope", "/v1/nope"]) {
          assertRawError(await raw(server, "GET", p, { key }), 404);
        }
        await rejectsAPI(client._makeQuery({ path: "v1/does-not-exist" }), 404);
      });

      test("no CORS: OPTIONS preflight and cross-origin GET carry no Access-Control-Allow-Origin", async () => {
        const pre = await fetch(`${server.url}/api/v1/contacts/create`, {
          method: "OPTIONS",
          headers: { Origin: "https://evil.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type" },
        });
        await pre.arrayBuffer();
        assert.equal(pre.headers.get("access-control-allow-origin"), null);
        assert.ok(pre.status >= 400, `preflight must not succeed, got ${pre.status}`);
        const get = await raw(server, "GET", "/api/v1/api-key", { key, headers: { Origin: "https://evil.example" } });
        assert.equal(get.status, 200);
        assert.equal(get.headers.get("access-control-allow-origin"), null);
      });
    });

    // ---- §2 rate limiting (second server, --rate-limit 3) ---------------
    describe("rate limiting (--rate-limit 3)", () => {
      test("a burst yields RateLimitExceededError with limit 3", async () => {
        const c = sdk(limited, limitedKey);
        await sleep(1000 - (Date.now() % 1000) + 20); // start near the beginning of a second
        const results = await Promise.allSettled(Array.from({ length: 12 }, () => c.testApiKey()));
        const ok = results.filter((r) => r.status === "fulfilled");
        const bad = results.filter((r) => r.status === "rejected");
        assert.ok(ok.length >= 1, "some requests pass");
        assert.ok(ok.length <= 6, `at most 3 per one-second window, got ${ok.length} in a burst`);
        assert.ok(bad.length >= 6, `expected rate-limited requests, got ${bad.length}`);
        for (const r of ok) assert.deepEqual(r.value, { success: true, teamName: "Limited Team" });
        for (const r of bad) {
          assert.ok(r.reason instanceof RateLimitExceededError, `got ${r.reason}`);
          assert.equal(r.reason.limit, 3);
          assert.equal(r.reason.remaining, 0);
          assert.equal(r.reason.message, "Rate limit of 3 requests per second exceeded.");
        }
      });

      test("429 carries x-ratelimit-limit / x-ratelimit-remaining; other responses too", async () => {
        await sleep(1100);
        const seen = [];
        // Sequential requests until one is limited (a slow machine may spread
        // them over several one-second windows).
        for (let i = 0; i < 40 && !seen.some((r) => r.status === 429); i++) {
          seen.push(await raw(limited, "GET", "/api/v1/lists", { key: limitedKey }));
        }
        for (const r of seen) {
          assert.equal(r.headers.get("x-ratelimit-limit"), "3", `status ${r.status}`);
          assert.match(r.headers.get("x-ratelimit-remaining") ?? "", /^\d+$/);
        }
        const limitedOnes = seen.filter((r) => r.status === 429);
        assert.ok(limitedOnes.length >= 1, `statuses ${seen.map((r) => r.status)}`);
        for (const r of limitedOnes) assert.equal(r.headers.get("x-ratelimit-remaining"), "0");
        const okOnes = seen.filter((r) => r.status === 200);
        assert.ok(okOnes.length >= 1, "the window had room before the limit");
        for (const r of okOnes) assert.deepEqual(r.json, []);
        assert.deepEqual(seen.map((r) => r.status).filter((s) => s !== 200 && s !== 429), []);
      });

      test("the limit is per team, and recovers after the window", async () => {
        const c1 = sdk(limited, limitedKey);
        const c2 = sdk(limited, limitedKey2);
        await sleep(1000 - (Date.now() % 1000) + 20);
        await Promise.allSettled(Array.from({ length: 8 }, () => c1.testApiKey()));
        // Team 1 is exhausted in this window; team 2 is not.
        assert.deepEqual(await c2.testApiKey(), { success: true, teamName: "Second Limited Team" });
        await sleep(1100);
        assert.deepEqual(await c1.testApiKey(), { success: true, teamName: "Limited Team" });
      });
    });
  });
}
