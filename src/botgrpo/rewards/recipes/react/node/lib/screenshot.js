"use strict";
// Screenshots of components in headless Chromium (Debian's `chromium`, driven by puppeteer-core
// over a pipe: no port, no browser download). Each item gets its own file:// page, so no
// window state carries over; React comes from the same locally built vendor bundle as the jsdom
// render, Tailwind from @tailwindcss/browser in node_modules.

const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const puppeteer = require("puppeteer-core");
const { parseCode } = require("./parse");
const { transformCode } = require("./transform");
const { vendorSource, NODE_DIR } = require("./vendor");
const { wrapModule } = require("./wrap");

const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--headless",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-dev-shm-usage",
  "--hide-scrollbars",
  "--mute-audio",
];

function chromiumPath() {
  const candidates = [process.env.BOTGRPO_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"];
  const found = candidates.find((p) => p && fs.existsSync(p));
  if (!found) throw new Error("Chromium not found: install Debian's `chromium` package or set BOTGRPO_CHROMIUM");
  return found;
}

function pageHtml(cjs, candidates) {
  const body = `window.__botgrpo_result = ${wrapModule(cjs, candidates, "{ browser: true }")}`;
  return (
    '<!DOCTYPE html><html><head><meta charset="utf-8">' +
    '<script>if (typeof process === "undefined") window.process = { env: { NODE_ENV: "development" }, browser: true };</script>' +
    '<script src="tailwind.js"></script><script src="vendor.js"></script></head>' +
    `<body><div id="root"></div><script>${body.replace(/<\/script/gi, "<\\/script")}</script></body></html>`
  );
}

function withDeadline(promise, ms, what) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

function createShooter() {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "botgrpo-shots-"));
  fs.writeFileSync(path.join(scratch, "vendor.js"), vendorSource());
  fs.copyFileSync(path.join(NODE_DIR, "node_modules", "@tailwindcss", "browser", "dist", "index.global.js"), path.join(scratch, "tailwind.js"));
  let browser = null;
  let page = null;
  let counter = 0;

  async function ensurePage() {
    if (browser === null || !browser.connected) {
      const profile = fs.mkdtempSync(path.join(scratch, "profile-"));
      browser = await puppeteer.launch({
        executablePath: chromiumPath(),
        pipe: true,
        headless: true,
        args: [...CHROMIUM_ARGS, `--user-data-dir=${profile}`],
        userDataDir: profile,
        protocolTimeout: 30000,
      });
      page = null;
    }
    if (page === null || page.isClosed()) {
      page = await browser.newPage();
    }
    return page;
  }

  async function dropPage() {
    const old = page;
    page = null;
    if (old) await Promise.race([old.close().catch(() => {}), new Promise((r) => setTimeout(r, 2000))]);
  }

  async function shoot(req) {
    if (typeof req.code !== "string" || !req.code.trim()) throw new Error("code must be a non-empty string");
    const width = Number.isInteger(req.width) && req.width > 0 ? req.width : 1280;
    const height = Number.isInteger(req.height) && req.height > 0 ? req.height : 800;
    const timeoutMs = Number.isInteger(req.timeout_ms) && req.timeout_ms > 0 ? req.timeout_ms : 5000;
    const parsed = parseCode(req.code);
    if (parsed.diagnostics.length) return { png_base64: null, reason: "the code does not compile" };
    const transformed = transformCode(req.code);
    if (transformed.diagnostics) return { png_base64: null, reason: "the code does not transform" };
    const file = path.join(scratch, `item-${++counter}.html`);
    fs.writeFileSync(file, pageHtml(transformed.code, parsed.candidates));
    const start = process.hrtime.bigint();
    try {
      const p = await ensurePage();
      await p.setViewport({ width, height });
      await p.goto(`file://${file}`, { waitUntil: "load", timeout: timeoutMs });
      const settle = p.evaluate(
        () => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => {
          const first = String(window.__botgrpo_result || "null");
          let pending = false;
          try {
            pending = JSON.parse(first).pending === true; // an async page settles later
          } catch (err) {
            pending = false;
          }
          resolve(pending ? window.__botgrpo.settled() || "null" : first);
        }))),
      );
      const state = await withDeadline(settle, timeoutMs, "the page did not settle");
      const shot = p.screenshot({ type: "png", encoding: "base64", clip: { x: 0, y: 0, width, height } });
      const png = await withDeadline(shot, timeoutMs, "the screenshot did not finish");
      const page = JSON.parse(state) || {};
      return {
        png_base64: png,
        rendered: Boolean(page.rendered),
        blank: page.blank === undefined ? null : page.blank,
        errors: (page.errors || []).map((e) => String(e.message)),
        ms: Number(process.hrtime.bigint() - start) / 1e6,
      };
    } catch (err) {
      await dropPage();
      return { png_base64: null, reason: `no screenshot: ${String(err && err.message || err).slice(0, 300)}` };
    } finally {
      fs.rmSync(file, { force: true });
    }
  }

  async function close() {
    if (browser !== null) await browser.close().catch(() => {});
    fs.rmSync(scratch, { recursive: true, force: true });
  }

  return { shoot, close };
}

module.exports = { createShooter, CHROMIUM_ARGS };
