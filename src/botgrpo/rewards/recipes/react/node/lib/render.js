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

const HTML = '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body><div id="root"></div></body></html>';
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

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
  // No network while checking: requests fail later, as they would offline.
  globalThis.fetch = () => Promise.reject(new TypeError("Failed to fetch (no network while rendering)"));
  if (globalThis.Element) globalThis.Element.prototype.scrollIntoView = noop;
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

// The source line of an error: its innermost frame in the component's code; else (React threw,
// e.g. "Objects are not valid as a React child") the declaration of the innermost component of
// the code on React's component stack.
function errorLine(stack, lines, candidates) {
  const match = /component\.js:(\d+):(\d+)/.exec(stack || "");
  if (match) return originalLine(lines, Number(match[1]), Number(match[2]));
  for (const frame of (stack || "").matchAll(/^\s*at ([A-Za-z_$][\w$]*) \(/gm)) {
    if (Object.prototype.hasOwnProperty.call(candidates, frame[1])) return candidates[frame[1]];
  }
  return null;
}

function wrap(cjs, candidates) {
  const names = Object.keys(candidates)
    .filter((n) => IDENTIFIER.test(n))
    .map((n) => `${JSON.stringify(n)}: typeof ${n} === "undefined" ? undefined : ${n}`)
    .join(", ");
  return `__botgrpo.mount(function (module, exports, require, __botgrpo_found) {${cjs}\n;__botgrpo_found.names = {${names}};\n});`;
}

// `candidates`: {ComponentName: declaration line}. Returns {rendered, blank, component,
// unknown, diagnostics}.
function renderCode(cjs, lines, candidates, timeoutMs) {
  const dom = newWindow();
  const context = dom.getInternalVMContext();
  try {
    BROWSER_STUBS.runInContext(context);
    vendor().runInContext(context);
    let result;
    try {
      const script = new vm.Script(wrap(cjs, candidates), { filename: "component.js" });
      result = JSON.parse(script.runInContext(context, { timeout: timeoutMs }));
    } catch (err) {
      if (err && err.code === "ERR_SCRIPT_EXECUTION_TIMEOUT") {
        const message = `render did not finish within ${timeoutMs} ms (an endless loop?)`;
        return timedOut(message);
      }
      throw err;
    }
    const diagnostics = result.errors.map((e) => ({
      line: errorLine(e.stack, lines, candidates),
      source: "render",
      severity: "fatal",
      rule: "runtime-error",
      message: String(e.message).slice(0, 500),
    }));
    return {
      rendered: Boolean(result.rendered),
      blank: result.blank === null ? null : Boolean(result.blank),
      component: result.component,
      unknown: Array.isArray(result.unknown) ? result.unknown.map(String) : [],
      diagnostics,
    };
  } finally {
    dom.window.close();
  }
}

function timedOut(message) {
  return {
    rendered: false,
    blank: null,
    component: null,
    unknown: [],
    diagnostics: [{ line: null, source: "render", severity: "fatal", rule: "timeout", message }],
  };
}

module.exports = { renderCode, vendor };
