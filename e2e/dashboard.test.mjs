// Dashboard browser tests: a real `lasso serve` (LASSO_BIN) on a temp data
// dir and a free port, driven by headless Debian Chromium through
// playwright-core. A tiny DNS server (dns2) answers the domain check and a
// local HTTP server receives the webhook test event. Every page is saved as
// a screenshot at 1280 px and 390 px wide in e2e/screenshots/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import http from "node:http";
import net from "node:net";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import dns2 from "dns2";

const here = path.dirname(fileURLToPath(import.meta.url));
const BIN = path.resolve(here, process.env.LASSO_BIN || "../bin/lasso");
const CHROMIUM = ["/usr/lib/chromium/chromium", "/usr/bin/chromium"].find((p) => existsSync(p));
const SHOTS = path.join(here, "screenshots");
const PASSWORD = "correct horse battery";

let server, dns, hook, browser, page, base, dataDir, logs = "";
let dnsSupported = false;
const records = new Map(); // "name|TYPE" → [values]
const hookRequests = [];

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

function startDNS() {
  const { Packet } = dns2;
  const srv = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const [q] = request.questions;
      const name = q.name.toLowerCase().replace(/\.$/, "");
      const type = q.type === Packet.TYPE.MX ? "MX" : q.type === Packet.TYPE.TXT ? "TXT" : String(q.type);
      const known = [...records.keys()].some((k) => k.startsWith(name + "|"));
      const values = records.get(`${name}|${type}`) || [];
      if (!known) response.header.rcode = Packet.RCODE.NXDOMAIN;
      for (const v of values) {
        if (type === "MX") {
          response.answers.push({ name: q.name, type: Packet.TYPE.MX, class: Packet.CLASS.IN, ttl: 60, priority: v.pref, exchange: v.host });
        } else {
          const chunks = [];
          for (let i = 0; i < v.length; i += 255) chunks.push(v.slice(i, i + 255));
          response.answers.push({ name: q.name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 60, data: chunks });
        }
      }
      send(response);
    },
  });
  return srv;
}

// nav follows a link of the main menu.
async function nav(name) {
  await page.locator("nav.nav").getByRole("link", { name, exact: true }).click();
  await page.waitForLoadState();
}

async function shoot(name) {
  mkdirSync(SHOTS, { recursive: true });
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: width === 390 ? 844 : 800 });
    await page.screenshot({ path: path.join(SHOTS, `${name}-${width}.png`), fullPage: true });
    // Nothing may overflow the viewport horizontally (tables scroll inside
    // their own wrapper).
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `${name} at ${width}px overflows by ${overflow}px`);
    // Every menu link is visible without scrolling the menu sideways.
    const hidden = await page.evaluate(() =>
      [...document.querySelectorAll("nav.nav a")]
        .filter((a) => { const r = a.getBoundingClientRect(); return r.left < 0 || r.right > window.innerWidth + 1; })
        .map((a) => a.textContent.trim()));
    assert.deepEqual(hidden, [], `${name} at ${width}px: menu links outside the viewport`);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
}

before(async () => {
  assert.ok(CHROMIUM, "chromium not found: apt-get install chromium");
  // --dns-server is a hidden flag: probe for it.
  try {
    execFileSync(BIN, ["serve", "--dns-server", "127.0.0.1:1", "--help"], { stdio: "ignore" });
    dnsSupported = true;
  } catch {
    dnsSupported = false;
  }

  dns = startDNS();
  await dns.listen({ udp: { port: 0, address: "127.0.0.1" } });
  const dnsPort = dns.addresses().udp.port;

  hook = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      hookRequests.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise((r) => hook.listen(0, "127.0.0.1", r));

  dataDir = mkdtempSync(path.join(tmpdir(), "lasso-e2e-"));
  const port = await freePort();
  const smtpPort = await freePort();
  base = `http://127.0.0.1:${port}`;
  const args = ["serve", "--data-dir", dataDir, "--http-addr", `127.0.0.1:${port}`, "--smtp-addr", `127.0.0.1:${smtpPort}`,
    "--webhook-allow-private"]; // the test's webhook receiver is on 127.0.0.1
  if (dnsSupported) args.push("--dns-server", `127.0.0.1:${dnsPort}`);
  server = spawn(BIN, args, { stdio: ["ignore", "pipe", "pipe"] });
  server.stdout.on("data", (d) => (logs += d));
  server.stderr.on("data", (d) => (logs += d));
  const deadline = Date.now() + 20000;
  while (!/setup_url="?[^"\s]+/.test(logs)) {
    if (Date.now() > deadline || server.exitCode !== null) throw new Error("lasso serve did not print a setup URL:\n" + logs);
    await new Promise((r) => setTimeout(r, 50));
  }

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  page.on("pageerror", (err) => { throw err; });
  page.on("console", (msg) => {
    if (msg.type() === "error") console.error("browser console:", msg.text());
  });
});

after(async () => {
  await browser?.close();
  if (server && server.exitCode === null) {
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
  }
  await dns?.close();
  hook?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

test("setup creates the team and its owner", async () => {
  const url = logs.match(/setup_url="?([^"\s]+)/)[1];
  await page.goto(base + "/login");
  await assert.doesNotReject(page.getByText("setup link").waitFor());
  await shoot("setup-needed");
  await page.goto(url);
  await page.getByLabel("Team name").fill("Acme");
  await page.getByLabel("Your name").fill("Ada");
  await page.getByLabel("Email address").fill("ada@example.com");
  await page.getByLabel("Password", { exact: false }).first().fill(PASSWORD);
  await page.getByLabel("Repeat the password").fill(PASSWORD);
  await shoot("setup");
  await page.getByRole("button", { name: "Create team" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  assert.match(await page.locator(".team").textContent(), /Acme/);
  await shoot("overview");
});

test("log out and log in again", async () => {
  await page.getByRole("button", { name: "Log out" }).click();
  await page.getByRole("heading", { name: "Log in to Lasso" }).waitFor();
  await page.getByLabel("Email address").fill("ada@example.com");
  await page.getByLabel("Password").fill("wrong password");
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByText("Wrong email address or password").waitFor();
  await shoot("login");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
});

test("keyboard navigation reaches the menu", async () => {
  await page.keyboard.press("Tab"); // skip link first
  assert.equal(await page.evaluate(() => document.activeElement.textContent.trim()), "Skip to content");
  await page.keyboard.press("Tab");
  await page.keyboard.press("Tab");
  await page.keyboard.press("Tab");
  const label = await page.evaluate(() => document.activeElement.textContent.trim());
  assert.ok(["Overview", "Log out", "Lasso"].includes(label), `focus on ${label}`);
});

test("create an API key and use it against the API", async () => {
  await nav("API keys");
  await page.getByLabel("Label").fill("Production");
  await page.getByRole("button", { name: "Create key" }).click();
  const key = (await page.getByTestId("new-key").textContent()).trim();
  assert.match(key, /^lso_[0-9a-f]{40}$/);
  await page.getByRole("button", { name: "Copy" }).first().click();
  await shoot("keys");
  const res = await fetch(base + "/api/v1/api-key", { headers: { Authorization: `Bearer ${key}` } });
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { success: true, teamName: "Acme" });
  // Shown once: a reload does not show it.
  await page.goto(base + "/keys");
  assert.equal(await page.getByTestId("new-key").count(), 0);
});

test("add a domain and verify it against a fake DNS server", async (t) => {
  await nav("Domains");
  await page.getByLabel("Domain").fill("example.test");
  await page.getByRole("button", { name: "Add domain" }).click();
  await page.getByRole("heading", { name: "example.test" }).waitFor();
  await page.getByText("up to an hour").waitFor();
  await shoot("domain-records");
  if (!dnsSupported) {
    t.skip("lasso serve has no --dns-server flag: cannot point verification at the fake DNS server");
    return;
  }
  await page.getByRole("button", { name: "Verify" }).click();
  await page.locator('.record[data-status="missing"]').first().waitFor();
  await shoot("domain-missing");
  // Publish exactly what the page says.
  const recs = await page.$$eval(".record", (els) => els.map((el) => ({
    type: el.querySelector(".type").textContent.trim(),
    name: el.querySelector('code[id^="rec-name"]').textContent.trim(),
    value: el.querySelector('code[id^="rec-value"]').textContent.trim(),
  })));
  assert.equal(recs.length, 5);
  for (const r of recs) {
    if (r.type === "MX") {
      const [pref, host] = r.value.split(/\s+/);
      records.set(`${r.name}|MX`, [{ pref: Number(pref), host: host.replace(/\.$/, "") }]);
    } else {
      records.set(`${r.name}|TXT`, [...(records.get(`${r.name}|TXT`) || []), r.value]);
    }
  }
  await page.getByRole("button", { name: "Verify" }).click();
  await page.getByText("This domain can send").waitFor();
  assert.equal(await page.locator('.record[data-status="ok"]').count(), 5);
  await shoot("domain-verified");
  await page.goto(base + "/domains");
  await page.locator(".badge", { hasText: "verified" }).first().waitFor();
  await shoot("domains");
});

test("create and edit a mailing list", async () => {
  await nav("Lists");
  await page.getByLabel("Name").fill("Newsletter");
  await page.getByLabel("Description").fill("Monthly news");
  await page.getByRole("button", { name: "Create list" }).click();
  await page.getByText("The list was created.").waitFor();
  const row = page.locator("#lists-table tbody tr", { hasText: "Newsletter" });
  await row.getByRole("link", { name: "Edit" }).click();
  const nameInput = page.locator('#lists-table input[name="name"]');
  await nameInput.fill("Weekly newsletter");
  await page.getByRole("button", { name: "Save" }).click();
  await page.locator("#lists-table tbody tr", { hasText: "Weekly newsletter" }).waitFor();
  await shoot("lists");
});

test("import a 10,000-row CSV with bad rows", async () => {
  const lines = ["email,firstName,plan"];
  let bad = 0;
  for (let i = 0; i < 10000; i++) {
    if (i % 97 === 13) { lines.push(`broken-address-${i},X,free`); bad++; }
    else lines.push(`person${i}@example.com,P${i},${i % 2 ? "pro" : "free"}`);
  }
  await nav("Import");
  await page.getByLabel("CSV file").setInputFiles({ name: "people.csv", mimeType: "text/csv", buffer: Buffer.from(lines.join("\n") + "\n") });
  await shoot("imports");
  await page.getByRole("button", { name: "Upload" }).click();
  await page.getByRole("heading", { name: "Map the columns" }).waitFor();
  assert.equal(await page.locator("#col0").inputValue(), "email");
  await page.locator("#col2").selectOption("_new");
  await page.locator("#new2").fill("plan");
  await page.getByLabel("Weekly newsletter").check();
  await shoot("import-mapping");
  await page.getByRole("button", { name: "Start the import" }).click();
  await page.locator("#progress").waitFor();
  await page.locator('#progress[data-status="done"]').waitFor({ timeout: 120000 });
  assert.equal(await page.getByTestId("created").textContent(), String(10000 - bad));
  assert.equal(await page.getByTestId("skipped").textContent(), String(bad));
  assert.equal(await page.locator("#bar").getAttribute("value"), "100");
  await page.getByRole("link", { name: /Download the skipped rows/ }).waitFor();
  await shoot("import-report");
});

test("contacts: search, page, contact page", async () => {
  await nav("Contacts");
  await page.locator("tbody tr").first().waitFor();
  await shoot("contacts");
  await page.getByLabel("Search by email").fill("person42@");
  await page.locator("tbody tr", { hasText: "person42@example.com" }).waitFor();
  await page.getByRole("link", { name: "person42@example.com" }).click();
  await page.getByRole("heading", { name: "person42@example.com" }).waitFor();
  await page.getByText("Weekly newsletter").waitFor();
  await shoot("contact");
  await page.goto(base + "/contacts");
  await page.getByRole("link", { name: "Next page »" }).click();
  await page.locator("tbody tr").first().waitFor();
});

test("configure a webhook and see a test delivery", async () => {
  const url = `http://127.0.0.1:${hook.address().port}/hook`;
  await nav("Webhooks");
  await page.getByLabel("Endpoint URL").fill(url);
  await page.getByRole("button", { name: "Save endpoint" }).click();
  await page.getByText("The webhook endpoint was saved.").waitFor();
  await page.getByRole("button", { name: "Reveal" }).click();
  assert.match(await page.getByTestId("webhook-secret").textContent(), /^whsec_/);
  await page.getByRole("button", { name: "Send test event" }).click();
  await page.locator('#log tr[data-event="testing.testEvent"][data-status="delivered"]').waitFor({ timeout: 20000 });
  const got = hookRequests.find((r) => r.body.includes("testing.testEvent"));
  assert.ok(got, "the endpoint received the test event");
  assert.ok(got.headers["webhook-signature"]?.startsWith("v1,"));
  await shoot("webhooks");
});

test("outbox and team pages render", async () => {
  await nav("Outbox");
  await page.getByRole("heading", { name: "Outbox" }).waitFor();
  await shoot("outbox");
  await nav("Team");
  await page.getByLabel("Email address").fill("bob@example.com");
  await page.getByRole("button", { name: "Create invitation" }).click();
  await page.getByText("Send this link").waitFor();
  await shoot("team");
});

test("read views: transactional emails and workflows; contact properties", async () => {
  await nav("API keys");
  await page.getByLabel("Label").fill("Read views");
  await page.getByRole("button", { name: "Create key" }).click();
  const key = (await page.getByTestId("new-key").textContent()).trim();
  const api = async (method, p, body) => {
    const res = await fetch(base + "/api" + p, {
      method,
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: await res.json().catch(() => null) };
  };
  // A transactional email, published through the API (the domain added above
  // lets the team use the content API).
  let r = await api("POST", "/v1/transactional-emails", { name: "Welcome" });
  assert.equal(r.status, 201, JSON.stringify(r.json));
  const { id, draftEmailMessageId, draftEmailMessageContentRevisionId } = r.json;
  r = await api("POST", `/v1/email-messages/${draftEmailMessageId}`, {
    expectedRevisionId: draftEmailMessageContentRevisionId, subject: "Welcome, {data.name}", fromName: "Acme",
    lmx: "<H1>Hi {data.name}</H1><Paragraph>Thanks for signing up. Your code is {data.code}.</Paragraph>",
    dataVariablesFallbacks: { name: "there" },
  });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  r = await api("POST", `/v1/transactional-emails/${id}/publish`);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  await api("POST", "/v1/transactional-emails", { name: "Password reset (draft)" });

  await nav("Transactional");
  await page.getByRole("link", { name: "Welcome", exact: true }).waitFor();
  await shoot("transactionals");
  await page.getByRole("link", { name: "Welcome", exact: true }).click();
  await page.getByRole("heading", { name: "Welcome" }).waitFor();
  await page.frameLocator("iframe.preview").getByText("Hi there").waitFor();
  await shoot("transactional");

  r = await api("POST", "/v1/workflows", { name: "Onboarding" });
  assert.ok(r.status === 200 || r.status === 201, JSON.stringify(r.json));
  await nav("Workflows");
  await page.getByRole("link", { name: "Onboarding" }).waitFor();
  await shoot("workflows");
  await page.getByRole("link", { name: "Onboarding" }).click();
  await page.locator("#workflow-tree").getByText("Trigger: manual").waitFor();
  await shoot("workflow");

  await nav("Properties");
  await page.getByLabel(/^Name/).fill("plan name");
  await page.getByLabel("Type").selectOption("string");
  await page.getByRole("button", { name: "Create property" }).click();
  await page.getByRole("alert").getByText("camelCase").waitFor();
  await page.getByLabel(/^Name/).fill("planName");
  await page.getByRole("button", { name: "Create property" }).click();
  await page.getByText("The property planName was created.").waitFor();
  await shoot("properties");
});
