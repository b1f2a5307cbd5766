"use strict";
// One "check" request: parse (compile verdict), transform, lint, render, with stage timings.

const { parseCode } = require("./parse");
const { transformCode } = require("./transform");
const { instrument } = require("./guards");
const { lintCode } = require("./lint");
const { renderCode } = require("./render");

const MAX_CODE_CHARS = 200000;

function elapsed(start) {
  return Number((Number(process.hrtime.bigint() - start) / 1e6).toFixed(3));
}

function unknownImportDiagnostics(imports, unknown) {
  const seen = new Set();
  const out = [];
  for (const name of unknown) {
    if (seen.has(name)) continue;
    seen.add(name);
    const where = imports.find((i) => i.name === name);
    out.push({
      line: where ? where.line : null,
      source: "render",
      severity: "warning",
      rule: "unknown-import",
      message: `'${name}' is not available here; it was replaced by a stub (its components render their children and text, its hooks and functions return stand-ins), so its use was not checked`,
    });
  }
  return out;
}

function notAComponent(message) {
  return { line: null, source: "render", severity: "error", rule: "not-a-component", message };
}

// The code with line guards, transformed; the plain code when esbuild rejects the guarded one
// (its diagnostics, when it rejects that too, are the compile verdict).
function transformForRender(code, guards) {
  if (guards.length) {
    const guarded = transformCode(instrument(code, guards));
    if (!guarded.diagnostics) return guarded;
  }
  return transformCode(code);
}

// When Babel gives up at its first error, its position is often where it began to backtrack
// (a TSX arrow or generic call many lines up); esbuild's error, when it rejects the code too,
// sits on the broken line more often (docs/results/react-verdicts.md). Only its first error:
// the rest cascade from it onto correct lines.
function unrecoverable(code, babelDiagnostics) {
  const transformed = transformCode(code);
  return transformed.diagnostics ? transformed.diagnostics.slice(0, 1) : babelDiagnostics.slice();
}

function checkCode(req) {
  const code = req.code;
  if (typeof code !== "string") throw new Error("code must be a string");
  if (!code.trim()) throw new Error("code is empty");
  if (code.length > MAX_CODE_CHARS) throw new Error(`code has ${code.length} characters; at most ${MAX_CODE_CHARS}`);
  const timeoutMs = Number.isInteger(req.timeout_ms) && req.timeout_ms > 0 ? req.timeout_ms : 2000;
  const timings = {};
  let t = process.hrtime.bigint();
  const parsed = parseCode(code);
  let diagnostics = parsed.thrown ? unrecoverable(code, parsed.diagnostics) : parsed.diagnostics.slice();
  let compiled = diagnostics.length === 0;
  let transformed = null;
  if (compiled) {
    transformed = transformForRender(code, parsed.guards);
    if (transformed.diagnostics) {
      diagnostics = diagnostics.concat(transformed.diagnostics);
      compiled = false;
    }
  }
  timings.compile = elapsed(t);
  const result = { compiled, rendered: null, blank: null, text: null, is_component: parsed.hasJsx, component: null, unknown_imports: [] };
  if (compiled && req.lint !== false) {
    t = process.hrtime.bigint();
    diagnostics = diagnostics.concat(lintCode(code, parsed.hasTypes));
    timings.lint = elapsed(t);
  }
  if (compiled && req.render !== false) {
    t = process.hrtime.bigint();
    const r = renderCode(transformed.code, transformed.lines, parsed.candidates, timeoutMs);
    timings.render = elapsed(t);
    Object.assign(result, { rendered: r.rendered, blank: r.blank, text: r.rendered ? r.text : null, component: r.component, unknown_imports: r.unknown });
    if (r.component !== null) result.is_component = true;
    diagnostics = diagnostics.concat(r.diagnostics, unknownImportDiagnostics(parsed.imports, r.unknown));
    if (r.component === null && r.diagnostics.length === 0) {
      result.is_component = false;
      diagnostics.push(notAComponent("the code defines no React component (no default export, no capitalised component, nothing mounted)"));
    }
  }
  if (compiled && !parsed.hasJsx && result.component === null && !diagnostics.some((d) => d.rule === "not-a-component")) {
    result.is_component = false;
    if (req.render === false) diagnostics.push(notAComponent("the code has no JSX and creates no React element"));
  }
  result.diagnostics = diagnostics;
  result.timings_ms = timings;
  return result;
}

module.exports = { checkCode, MAX_CODE_CHARS };
