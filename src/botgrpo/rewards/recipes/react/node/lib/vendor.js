"use strict";
// One bundle of React 19 (no UMD build exists) plus the in-page module runtime, built once per
// worker with esbuild from node_modules. Evaluated inside each fresh window (jsdom or Chromium),
// it defines globalThis.__botgrpo: require(), the unknown-import stubs and mount().

const path = require("node:path");
const esbuild = require("esbuild");

const NODE_DIR = path.resolve(__dirname, "..");

function buildVendor(mode) {
  const result = esbuild.buildSync({
    entryPoints: [path.join(__dirname, "runtime", "entry.js")],
    bundle: true,
    format: "iife",
    platform: "browser",
    target: "es2020",
    write: false,
    absWorkingDir: NODE_DIR,
    nodePaths: [path.join(NODE_DIR, "node_modules")],
    define: { "process.env.NODE_ENV": JSON.stringify(mode) },
    logLevel: "silent",
  });
  return result.outputFiles[0].text;
}

let cached = null;

// The development bundle (React's act() exists only in development builds), built once.
function vendorSource() {
  if (cached === null) cached = buildVendor("development");
  return cached;
}

module.exports = { buildVendor, vendorSource, NODE_DIR };
