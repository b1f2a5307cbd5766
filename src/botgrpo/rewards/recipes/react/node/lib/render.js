"use strict";
// Render a transformed component in a fresh jsdom window per item (with stubs for the browser
// APIs jsdom lacks: matchMedia, observers, scrolling, dialogs, canvas contexts, fetch). Everything the component
// touches (React, its require(), the DOM) lives in the window's own realm; no host object is
// handed to it. Synchronous loops and microtask loops are cut by the vm timeout (the window's
// context drains its microtasks after each evaluation); timers never run: the window is closed.

const vm = require("node:vm");
const { JSDOM, VirtualConsole } = require("jsdom");
const { vendorSource } = require("./vendor");
const { originalLine } = require("./sourcemap");
const { wrapModule } = require("./wrap");

const HTML = '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body><div id="root"></div></body></html>';

const BROWSER_STUBS = new vm.Script(
  `(() => {
  const noop = () => {};
  class ObserverStub { constructor() {} observe() {} unobserve() {} disconnect() {} takeRecords() { return []; } }
  globalThis.ResizeObserver = ObserverStub;
  globalThis.IntersectionObserver = ObserverStub;
  globalThis.MutationObserver = globalThis.MutationObserver || ObserverStub;
  globalThis.matchMedia = (query) => ({ matches: false, media: String(query), onchange: null,
    addListener: noop, removeListener: noop, addEventListener: noop, removeEventListener: noop,
    dispatchEvent: () => false });
  globalThis.scrollTo = noop;
  globalThis.scroll = noop;
  globalThis.alert = noop;
  globalThis.confirm = () => false;
  globalThis.prompt = () => null;
  // A canvas context whose every method does nothing (jsdom draws nothing).
  const context2d = new Proxy({}, {
    get: (target, key) => (key === "measureText" ? () => ({ width: 0 }) : key in target ? target[key] : noop),
    set: (target, key, value) => { target[key] = value; return true; },
  });
  if (globalThis.HTMLCanvasElement) {
    globalThis.HTMLCanvasElement.prototype.getContext = () => context2d;
    globalThis.HTMLCanvasElement.prototype.toDataURL = () => "data:,";
  }
  // What bundlers give a page: process.env (NODE_ENV and nothing else).
  if (typeof globalThis.process === "undefined") globalThis.process = { env: { NODE_ENV: "development" }, browser: true };
  // No network while checking: requests fail later, as they would offline.
  globalThis.fetch = () => Promise.reject(new TypeError("Failed to fetch (no network while rendering)"));
  if (globalThis.Element) globalThis.Element.prototype.scrollIntoView = noop;
  // Browser APIs jsdom lacks, that correct components call (a missing one is not the code's fault).
  if (typeof globalThis.structuredClone !== "function") {
    globalThis.structuredClone = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));
  }
  if (globalThis.Element && !globalThis.Element.prototype.animate) {
    const animation = () => ({ cancel: noop, finish: noop, pause: noop, play: noop, reverse: noop,
      finished: Promise.resolve(), onfinish: null, oncancel: null });
    globalThis.Element.prototype.animate = animation;
    globalThis.Element.prototype.getAnimations = () => [];
  }
  if (globalThis.HTMLDialogElement && !globalThis.HTMLDialogElement.prototype.showModal) {
    const dialog = globalThis.HTMLDialogElement.prototype;
    dialog.show = function () { this.setAttribute("open", ""); };
    dialog.showModal = function () { this.setAttribute("open", ""); };
    dialog.close = function (value) { this.removeAttribute("open"); if (value !== undefined) this.returnValue = String(value); };
  }
  if (globalThis.navigator && !globalThis.navigator.geolocation) {
    // a position that never comes, as when the user has not answered the permission prompt
    Object.defineProperty(globalThis.navigator, "geolocation", { configurable: true,
      value: { getCurrentPosition: noop, watchPosition: () => 0, clearWatch: noop } });
  }
})();`,
  { filename: "stubs.js" },
);

let vendorScript = null;

function vendor() {
  if (vendorScript === null) {
    vendorScript = new vm.Script(vendorSource(), { filename: "vendor.js" });
  }
  return vendorScript;
}

function newWindow() {
  const original = vm.createContext;
  vm.createContext = (object, options) => original(object, { ...options, microtaskMode: "afterEvaluate" });
  try {
    return new JSDOM(HTML, {
      runScripts: "outside-only",
      pretendToBeVisual: true,
      url: "http://localhost/",
      virtualConsole: new VirtualConsole(),
    });
  } finally {
    vm.createContext = original;
  }
}

// The source line of an error: its innermost frame in the component's code (the error's own
// stack, or where the element that failed was written); else (React threw, e.g. "Objects are not
// valid as a React child") the declaration of the innermost component of the code on React's
// component stack. The component stack's own positions are not read: React takes them by
// calling the component until its first hook, a line that did nothing wrong.
function errorLine(stack, componentStack, lines, candidates) {
  const match = /component\.js:(\d+):(\d+)/.exec(stack || "");
  if (match) return originalLine(lines, Number(match[1]), Number(match[2]));
  for (const frame of `${stack || ""}\n${componentStack || ""}`.matchAll(/^\s*at ([A-Za-z_$][\w$]*) \(/gm)) {
    if (Object.prototype.hasOwnProperty.call(candidates, frame[1])) return candidates[frame[1]];
  }
  return null;
}

// `candidates`: {ComponentName: declaration line}. Returns {rendered, blank, text, component,
// unknown, diagnostics}.
function renderCode(cjs, lines, candidates, timeoutMs) {
  const dom = newWindow();
  const context = dom.getInternalVMContext();
  try {
    BROWSER_STUBS.runInContext(context);
    vendor().runInContext(context);
    // Taken before the component runs (it could rebind the globals).
    const [lastLine, settled] = vm.runInContext("[__botgrpo.lastLine, __botgrpo.settled]", context);
    let result;
    try {
      const script = new vm.Script(wrapModule(cjs, candidates), { filename: "component.js" });
      result = JSON.parse(script.runInContext(context, { timeout: timeoutMs }));
      if (result.pending) result = JSON.parse(settled() || NEVER_SETTLED);
    } catch (err) {
      if (err && err.code === "ERR_SCRIPT_EXECUTION_TIMEOUT") {
        const message = `render did not finish within ${timeoutMs} ms (an endless loop?)`;
        return timedOut(message, lastLine());
      }
      throw err;
    }
    const diagnostics = result.errors.map((e) => ({
      line: errorLine(e.stack, e.componentStack, lines, candidates),
      source: "render",
      severity: "fatal",
      rule: "runtime-error",
      message: String(e.message).slice(0, 500),
    }));
    if (result.never_settled) diagnostics.push(neverSettled());
    if (result.stand_in) diagnostics.push(standInDiagnostic(result, candidates));
    return {
      rendered: Boolean(result.rendered),
      blank: result.blank === null ? null : Boolean(result.blank),
      text: typeof result.text === "string" ? result.text : "",
      component: result.component,
      unknown: Array.isArray(result.unknown) ? result.unknown.map(String) : [],
      diagnostics,
    };
  } finally {
    dom.window.close();
  }
}

const NEVER_SETTLED = JSON.stringify({ errors: [], rendered: false, blank: null, text: "", component: null, unknown: [], never_settled: true });

// The component failed without props and rendered with stand-ins: a warning on its declaration.
function standInDiagnostic(result, candidates) {
  const name = [result.function_name, result.component].find((n) => n && Object.prototype.hasOwnProperty.call(candidates, n));
  return {
    line: name ? candidates[name] : null,
    source: "render",
    severity: "warning",
    rule: "needs-props",
    message: `it failed without props (${String(result.stand_in).slice(0, 200)}); it rendered with stand-in props`,
  };
}

function neverSettled() {
  const message = "the async component never resolved (it awaits something that does not settle offline)";
  return { line: null, source: "render", severity: "fatal", rule: "timeout", message };
}

// A render cut by the time limit, blamed on the line its guards recorded last (null: none ran).
function timedOut(message, line) {
  return {
    rendered: false,
    blank: null,
    text: "",
    component: null,
    unknown: [],
    diagnostics: [{ line: Number.isInteger(line) && line > 0 ? line : null, source: "render", severity: "fatal", rule: "timeout", message }],
  };
}

module.exports = { renderCode, vendor };
