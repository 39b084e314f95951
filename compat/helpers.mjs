// Shared helpers for the compat suites (sdk.test.mjs, content.test.mjs):
// locate the lasso binary, make a data dir (and PostgreSQL schema), run the
// CLI, start/stop `lasso serve` on free ports, and assert SDK/raw errors.

import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { LoopsClient, APIError, ValidationError } from "loops";

export const here = path.dirname(fileURLToPath(import.meta.url));
export const BIN = process.env.LASSO_BIN
  ? path.resolve(process.cwd(), process.env.LASSO_BIN)
  : path.resolve(here, "..", "bin", "lasso");
export const PG_URL = process.env.LASSO_TEST_POSTGRES_URL || "";

if (!existsSync(BIN)) {
  throw new Error(`lasso binary not found at ${BIN} (build it with: go build -o bin/lasso ./cmd/lasso, or set LASSO_BIN)`);
}

// ---------------------------------------------------------------------------
// Process and environment helpers

export const liveServers = new Set();
process.on("exit", () => {
  // Last resort if a hook could not run: never leave servers behind.
  for (const s of liveServers) {
    try { s.proc.kill("SIGKILL"); } catch { /* already gone */ }
  }
});

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export function psql(url, sql) {
  return execFileSync("psql", [url, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
}

let envSeq = 0;

// makeEnv creates a data dir and, for PostgreSQL, a fresh schema.
export function makeEnv(backend, label) {
  const dir = mkdtempSync(path.join(os.tmpdir(), `lasso-compat-${label}-`));
  const env = { backend, dir, args: ["--data-dir", dir], schema: null };
  if (backend.pg) {
    env.schema = `compat_${process.pid}_${Date.now()}_${++envSeq}_${label}`.replace(/[^a-z0-9_]/gi, "_").toLowerCase();
    psql(backend.pg, `CREATE SCHEMA ${env.schema}`);
    const sep = backend.pg.includes("?") ? "&" : "?";
    env.dbUrl = `${backend.pg}${sep}search_path=${env.schema}`;
    env.args.push("--database-url", env.dbUrl);
  }
  return env;
}

export function dropEnv(env) {
  if (!env) return;
  if (env.schema) {
    try { psql(env.backend.pg, `DROP SCHEMA IF EXISTS ${env.schema} CASCADE`); } catch (e) { console.error(`drop schema ${env.schema}: ${e.message}`); }
  }
  rmSync(env.dir, { recursive: true, force: true });
}

// cli runs one lasso admin command and returns its trimmed stdout.
export function cli(env, ...args) {
  return execFileSync(BIN, [...args, ...env.args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
}

// sql runs one statement against the env's database (sqlite3 or psql) and
// returns the output. Used only to plant suppressions, which have no API.
export function sql(env, statement) {
  if (env.backend.pg) return psql(env.dbUrl.replace(/[?&]search_path=[^&]*/, ""), `SET search_path TO ${env.schema}; ${statement}`);
  return execFileSync("sqlite3", ["-cmd", ".timeout 10000", path.join(env.dir, "lasso.db"), statement], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
}

export function haveTool(name) {
  try { execFileSync("sh", ["-c", `command -v ${name}`], { stdio: "ignore" }); return true; } catch { return false; }
}

export async function startServer(env, extra = []) {
  const port = await freePort();
  const smtpPort = await freePort();
  const bounce = extra.includes("--bounce-addr") ? [] : ["--bounce-addr", `127.0.0.1:${await freePort()}`];
  const args = ["serve", ...env.args, "--http-addr", `127.0.0.1:${port}`, "--smtp-addr", `127.0.0.1:${smtpPort}`, ...bounce, "--log-level", "warn",
    // Test webhook receivers listen on 127.0.0.1.
    "--webhook-allow-private", ...extra];
  const proc = spawn(BIN, args, { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  proc.stdout.on("data", (d) => { log += d; });
  proc.stderr.on("data", (d) => { log += d; });
  const exited = new Promise((resolve) => proc.on("exit", (code, sig) => resolve({ code, sig })));
  const server = { proc, url: `http://127.0.0.1:${port}`, log: () => log, exited };
  liveServers.add(server);
  server.stop = async () => {
    if (!liveServers.has(server)) return;
    liveServers.delete(server);
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(t);
    }
  };
  let done = false;
  exited.then(() => { done = true; });
  const deadline = Date.now() + 20000;
  for (;;) {
    if (done) throw new Error(`lasso serve exited early:\n${log}`);
    try {
      const r = await fetch(`${server.url}/healthz`);
      if (r.ok) break;
    } catch { /* not up yet */ }
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`lasso serve did not answer /healthz within 20 s:\n${log}`);
    }
    await sleep(50);
  }
  return server;
}

export function sdk(server, key) {
  const c = new LoopsClient(key);
  c.apiRoot = `${server.url}/api/`;
  return c;
}

// raw issues a request without the SDK (for cases the SDK validates
// client-side, and for headers).
export async function raw(server, method, p, { key, body, headers = {} } = {}) {
  const h = { ...headers };
  if (key) h.Authorization = `Bearer ${key}`;
  if (body !== undefined) h["Content-Type"] = "application/json";
  const res = await fetch(`${server.url}${p}`, { method, headers: h, body: body === undefined ? undefined : (typeof body === "string" ? body : JSON.stringify(body)) });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, json };
}

// rejectsAPI awaits p, which must reject with the SDK's APIError carrying the
// contract's error envelope {"success": false, "message": …}.
export async function rejectsAPI(p, status, message) {
  const err = await Promise.resolve(p).then(
    (v) => assert.fail(`expected APIError ${status}, got success ${JSON.stringify(v)}`),
    (e) => e,
  );
  assert.ok(err instanceof APIError, `expected APIError ${status}, got ${err && err.stack}`);
  assert.equal(err.statusCode, status, `status (body ${JSON.stringify(err.json ?? err.rawBody)})`);
  assert.ok(err.json && typeof err.json === "object", `error body must be JSON, got ${err.rawBody}`);
  assert.equal(err.json.success, false, `error body ${JSON.stringify(err.json)}`);
  assert.equal(typeof err.json.message, "string");
  if (message !== undefined) assert.equal(err.json.message, message);
  return err;
}

export async function rejectsValidation(p) {
  await assert.rejects(p, (e) => e instanceof ValidationError);
}

export function assertRawError(r, status, message) {
  assert.equal(r.status, status, `status (body ${r.text})`);
  assert.match(r.headers.get("content-type") || "", /^application\/json/);
  assert.equal(r.json?.success, false, r.text);
  assert.equal(typeof r.json?.message, "string", r.text);
  if (message !== undefined) assert.equal(r.json.message, message);
}

export const backends = [{ name: "sqlite", pg: null }];
if (PG_URL) backends.push({ name: "postgres", pg: PG_URL });

// Assertions and waits shared by the content and workflow suites.

export const PAGINATION_KEYS = ["totalResults", "returnedResults", "perPage", "totalPages", "nextCursor", "nextPage"];

export function assertKeys(obj, keys, label = "") {
  assert.ok(obj && typeof obj === "object" && !Array.isArray(obj), `${label} must be an object, got ${JSON.stringify(obj)}`);
  assert.deepEqual(Object.keys(obj).sort(), [...keys].sort(), `${label} keys of ${JSON.stringify(obj)}`);
}

export function assertPage(res, { total, returned, perPage, path }) {
  assertKeys(res, ["pagination", "data"], "page");
  assertKeys(res.pagination, PAGINATION_KEYS, "pagination");
  assert.ok(Array.isArray(res.data));
  const p = res.pagination;
  assert.equal(p.totalResults, total, "totalResults");
  assert.equal(p.returnedResults, returned, "returnedResults");
  assert.equal(res.data.length, returned, "data length");
  assert.equal(p.perPage, perPage, "perPage");
  assert.equal(p.totalPages, Math.ceil(total / perPage), "totalPages");
  if (p.nextCursor === null) assert.equal(p.nextPage, null);
  else {
    assert.equal(typeof p.nextCursor, "string");
    const u = new URL(p.nextPage);
    if (path) assert.ok(u.pathname.endsWith(`/v1/${path}`), p.nextPage);
    assert.deepEqual([...u.searchParams.keys()], ["cursor", "perPage"], p.nextPage);
    assert.equal(u.searchParams.get("cursor"), p.nextCursor);
    assert.equal(u.searchParams.get("perPage"), String(perPage));
  }
}

export async function drain(list, perPage) {
  const pages = [];
  let cursor;
  for (let i = 0; i < 100; i++) {
    const page = await list({ perPage, cursor });
    pages.push(page);
    if (page.pagination.nextCursor === null) return pages;
    cursor = page.pagination.nextCursor;
  }
  throw new Error("pagination did not end");
}

export async function waitFor(what, fn, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(150);
  }
}

// mailbox parses `lasso mailbox list`: ID  RECEIVED  FROM  TO  SUBJECT.
export function mailbox(env) {
  const lines = cli(env, "mailbox", "list").split("\n").slice(1).filter((l) => l.trim());
  return lines.map((l) => {
    const m = l.match(/^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(.*)$/);
    assert.ok(m, `unparsable mailbox line: ${l}`);
    return { id: m[1], received: m[2], from: m[3], to: m[4], subject: m[5].trim() };
  });
}

