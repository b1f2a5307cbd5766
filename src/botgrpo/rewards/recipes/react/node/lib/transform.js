"use strict";
// TSX -> CommonJS with esbuild (automatic JSX runtime), keeping a line map back to the source.

const esbuild = require("esbuild");
const { decodeMappings } = require("./sourcemap");

const OPTIONS = {
  loader: "tsx",
  format: "cjs",
  jsx: "automatic",
  target: "es2020",
  sourcemap: "external",
  sourcefile: "component.tsx",
  logLevel: "silent",
};

// Returns {code, lines} or {diagnostics} when esbuild rejects what the parser accepted.
function transformCode(code) {
  try {
    const result = esbuild.transformSync(code, OPTIONS);
    return { code: result.code, lines: decodeMappings(JSON.parse(result.map).mappings) };
  } catch (err) {
    const errors = Array.isArray(err.errors) && err.errors.length ? err.errors : [{ text: String(err.message || err) }];
    const diagnostics = errors.map((e) => ({
      line: e.location ? e.location.line : null,
      source: "compile",
      severity: "fatal",
      rule: "esbuild",
      message: e.text,
    }));
    return { diagnostics };
  }
}

module.exports = { transformCode };
