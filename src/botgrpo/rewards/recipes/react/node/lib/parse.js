"use strict";
// Compile verdicts: @babel/parser in TSX mode (JSX + TypeScript), every recoverable error with its line.

const babel = require("@babel/parser");
const { guardsFor } = require("./guards");

const PARSE_OPTIONS = {
  sourceType: "module",
  plugins: ["jsx", "typescript"],
  errorRecovery: true,
};

function compileDiagnostic(err) {
  const line = err.loc && Number.isInteger(err.loc.line) ? err.loc.line : null;
  const message = String(err.message || err).replace(/\s*\(\d+:\d+\)\s*$/, "");
  return { line, source: "compile", severity: "fatal", rule: err.reasonCode || null, message };
}

function walk(node, visit) {
  if (node === null || typeof node !== "object") return;
  if (Array.isArray(node)) {
    for (const item of node) walk(item, visit);
    return;
  }
  if (typeof node.type === "string") visit(node);
  for (const key of Object.keys(node)) {
    if (key === "loc" || key === "start" || key === "end" || key === "extra" || key === "comments") continue;
    const value = node[key];
    if (value !== null && typeof value === "object") walk(value, visit);
  }
}

// Top-level names that look like components (capitalised functions, classes and consts),
// with the line each is declared on.
function componentCandidates(program) {
  const found = {};
  for (const stmt of program.body) {
    const decl = stmt.type.startsWith("Export") && stmt.declaration ? stmt.declaration : stmt;
    if ((decl.type === "FunctionDeclaration" || decl.type === "ClassDeclaration") && decl.id) {
      found[decl.id.name] = decl.loc.start.line;
    } else if (decl.type === "VariableDeclaration") {
      for (const d of decl.declarations) {
        if (d.id && d.id.type === "Identifier") found[d.id.name] = d.loc.start.line;
      }
    }
  }
  return Object.fromEntries(Object.entries(found).filter(([n]) => /^[A-Z]/.test(n)));
}

// Parse `code`; returns {diagnostics, thrown (Babel gave up at its first error), imports: [{name, line}], hasJsx, hasTypes,
// candidates: {ComponentName: line}, guards: the line guards' insertions (lib/guards.js)}.
function parseCode(code) {
  let ast;
  try {
    ast = babel.parse(code, PARSE_OPTIONS);
  } catch (err) {
    return { diagnostics: [compileDiagnostic(err)], thrown: true, imports: [], hasJsx: false, hasTypes: false, candidates: {}, guards: [] };
  }
  const diagnostics = (ast.errors || []).map(compileDiagnostic);
  const imports = [];
  let hasJsx = false;
  let hasTypes = false;
  let createsElements = false;
  const guards = [];
  walk(ast.program, (node) => {
    if (node.loc) guards.push(...guardsFor(node));
    if (node.type.startsWith("TS")) hasTypes = true;
    if (node.type === "JSXElement" || node.type === "JSXFragment") hasJsx = true;
    else if (node.type === "ImportDeclaration" || node.type === "ExportNamedDeclaration" || node.type === "ExportAllDeclaration") {
      if (node.source && typeof node.source.value === "string" && node.importKind !== "type") {
        imports.push({ name: node.source.value, line: node.loc.start.line });
      }
    } else if (node.type === "CallExpression") {
      const callee = node.callee;
      if (callee.type === "Identifier" && callee.name === "require" && node.arguments.length === 1 && node.arguments[0].type === "StringLiteral") {
        imports.push({ name: node.arguments[0].value, line: node.loc.start.line });
      } else if (callee.type === "MemberExpression" && callee.property && callee.property.name === "createElement") {
        createsElements = true;
      }
    }
  });
  return {
    diagnostics,
    imports,
    hasJsx: hasJsx || createsElements,
    hasTypes,
    candidates: componentCandidates(ast.program),
    guards,
  };
}

module.exports = { parseCode };
