// render.mjs loads one HTML file in headless Chromium (the Debian package,
// driven by playwright-core) at several viewport widths, saves a full-page
// screenshot per width and prints layout measurements as one JSON object on
// stdout. internal/lmx/browser_test.go runs it and asserts on the result.
//
//   node render.mjs --html /tmp/x/message.html --out ./out [--widths 600,375] [--name message]
//
// Only file:// requests are allowed; anything else (http images, fonts) is
// aborted so the render is hermetic and never waits on the network.
import { chromium } from "playwright-core";
import { existsSync, mkdirSync } from "node:fs";
import { resolve, join } from "node:path";
import { pathToFileURL } from "node:url";

function parseArgs(argv) {
  const a = { widths: "600,375", name: "message" };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (!k.startsWith("--")) throw new Error("unexpected argument " + k);
    a[k.slice(2)] = argv[++i];
  }
  if (!a.html || !a.out) throw new Error("usage: node render.mjs --html FILE --out DIR [--widths 600,375] [--name NAME]");
  return a;
}

const args = parseArgs(process.argv.slice(2));
const CHROMIUM = process.env.CHROMIUM || ["/usr/lib/chromium/chromium", "/usr/bin/chromium"].find((p) => existsSync(p));
if (!CHROMIUM) {
  console.error("chromium not found: apt-get install chromium (or set CHROMIUM)");
  process.exit(3);
}
const outDir = resolve(args.out);
mkdirSync(outDir, { recursive: true });
const url = pathToFileURL(resolve(args.html)).href;
const widths = args.widths.split(",").map((w) => parseInt(w, 10));

// chromium.launch gives every run a fresh temporary profile (--user-data-dir),
// removed again on close.
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
});
const result = { url, chromium: browser.version(), viewports: [] };
try {
  for (const width of widths) {
    const context = await browser.newContext({ viewport: { width, height: 800 }, deviceScaleFactor: 1 });
    const page = await context.newPage();
    const errors = [];
    const blocked = [];
    page.on("pageerror", (err) => errors.push(String(err)));
    page.on("console", (msg) => { if (msg.type() === "error") errors.push("console: " + msg.text()); });
    await page.route("**/*", (route) => {
      const u = route.request().url();
      if (u.startsWith("file:") || u.startsWith("data:")) return route.continue();
      blocked.push(u);
      return route.abort();
    });
    await page.goto(url, { waitUntil: "load" });
    const m = await page.evaluate(() => {
      const box = (el) => {
        const r = el.getBoundingClientRect();
        return { x: Math.round(r.left + window.scrollX), y: Math.round(r.top + window.scrollY), w: Math.round(r.width), h: Math.round(r.height) };
      };
      const visible = (el) => {
        const cs = getComputedStyle(el);
        const r = el.getBoundingClientRect();
        return cs.display !== "none" && cs.visibility !== "hidden" && Number(cs.opacity) > 0 && r.width > 0 && r.height > 0;
      };
      // One entry per row that holds columns: the cells in source order.
      const rows = [];
      for (const tr of document.querySelectorAll("tr")) {
        const cells = [...tr.children].filter((c) => c.classList.contains("lx-col"));
        if (cells.length) rows.push({ dir: tr.getAttribute("dir") || "", cells: cells.map((c) => ({ text: c.innerText.trim().replace(/\s+/g, " ").slice(0, 60), ...box(c) })) });
      }
      const buttons = [...document.querySelectorAll("a")]
        .filter((a) => /display:\s*inline-block/.test(a.getAttribute("style") || ""))
        .map((a) => ({ text: a.innerText.trim(), href: a.getAttribute("href"), visible: visible(a), ...box(a) }));
      const images = [...document.querySelectorAll("img")].map((img) => ({
        src: img.getAttribute("src"), alt: img.getAttribute("alt"), loaded: img.complete && img.naturalWidth > 0,
        naturalWidth: img.naturalWidth, visible: visible(img), ...box(img),
      }));
      const container = document.querySelector(".lx-container");
      return {
        innerWidth: window.innerWidth,
        scrollWidth: document.documentElement.scrollWidth,
        bodyScrollWidth: document.body.scrollWidth,
        scrollHeight: document.documentElement.scrollHeight,
        container: container ? box(container) : null,
        headings: [...document.querySelectorAll("h1,h2,h3")].map((h) => ({ tag: h.tagName.toLowerCase(), text: h.innerText.trim(), ...box(h) })),
        listItems: document.querySelectorAll("li").length,
        columnRows: rows,
        buttons,
        images,
        text: document.body.innerText,
      };
    });
    const screenshot = join(outDir, `${args.name}-${width}.png`);
    await page.screenshot({ path: screenshot, fullPage: true });
    result.viewports.push({ width, screenshot, errors, blocked, ...m });
    await context.close();
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(result) + "\n");
