"use strict";
// Long-lived React checking worker: one JSON request per stdin line, one JSON reply per stdout line.
//
// Requests:  {"id": any, "op": "check", "code": str, "render": bool, "lint": bool, "timeout_ms": int}
//            {"id": any, "op": "screenshot", "code": str, "width": int, "height": int, "timeout_ms": int}
//            {"id": any, "op": "ping"}
// Replies carry the same id. A check reply: {compiled, rendered, blank, is_component,
// diagnostics: [{line, source, severity, rule, message}], unknown_imports, timings_ms}.
// The worker is meant to run inside botgrpo's OS sandbox; node's vm is not a security boundary.

const readline = require("node:readline");
const { checkCode } = require("./lib/check");

const out = process.stdout;
let screenshots = null; // the browser starts on the first screenshot request

function reply(obj) {
  out.write(JSON.stringify(obj) + "\n");
}

async function handle(req) {
  if (req === null || typeof req !== "object") throw new Error("request must be a JSON object");
  if (req.op === "ping") return { pong: true, node: process.version };
  if (req.op === "check") return checkCode(req);
  if (req.op === "screenshot") {
    if (screenshots === null) screenshots = require("./lib/screenshot").createShooter();
    return await screenshots.shoot(req);
  }
  throw new Error(`unknown op ${JSON.stringify(req.op)}`);
}

// Code generated from strings in this (host) realm is what a constructor-chain escape from a
// page needs (x.constructor.constructor("return process")); once every module is loaded and
// warmed up, the host's function constructors refuse. Pages keep their own, working ones.
function sealHostRealm() {
  const kinds = [function () {}, async function () {}, function* () {}, async function* () {}];
  for (const fn of kinds) {
    const prototype = Object.getPrototypeOf(fn);
    const refuse = function () {
      throw new EvalError("code generation is disabled in the worker's realm");
    };
    Object.defineProperty(refuse, "name", { value: prototype.constructor.name });
    Object.defineProperty(prototype, "constructor", { value: refuse, writable: false, configurable: false });
  }
}

function warmUp() {
  checkCode({ code: "export default function App() {\n  return <p>ready</p>;\n}\n" });
}

async function main() {
  console.log = console.info = console.debug = console.warn = console.error;  // stdout is the protocol
  warmUp();
  sealHostRealm();
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  reply({ id: null, ready: true, node: process.version });
  for await (const line of rl) {
    if (!line.trim()) continue;
    let req = null;
    try {
      req = JSON.parse(line);
      const result = await handle(req);
      reply({ id: req.id ?? null, ok: true, ...result });
    } catch (err) {
      reply({ id: req && req.id !== undefined ? req.id : null, ok: false, error: String(err && err.message || err) });
    }
  }
  if (screenshots !== null) await screenshots.close();
  process.exit(0);
}

main();
