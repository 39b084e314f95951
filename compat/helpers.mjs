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
  const args = ["serve", ...env.args, "--http-addr", `127.0.0.1:${port}`, "--smtp-addr", `127.0.0.1:${smtpPort}`, ...bounce, "--log-level", "warn", ...extra];
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
