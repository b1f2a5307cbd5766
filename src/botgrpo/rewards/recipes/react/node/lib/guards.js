"use strict";
// Line guards for the render: each loop body of the component starts with
// `__botgrpo_at(LINE, 1);` and each function body with `__botgrpo_at(LINE);` (an arrow's
// expression body becomes `(__botgrpo_at(LINE), body)`), which record the source line in the
// page. A render cut by the time limit then reports the line that was running: the loop
// entered last, else the function entered last. Guards are inserted into the source text
// without new lines, so every line keeps its number; the code ESLint sees is the original.

const GUARD = "__botgrpo_at";
const LOOPS = new Set(["ForStatement", "ForInStatement", "ForOfStatement", "WhileStatement", "DoWhileStatement"]);
const FUNCTIONS = new Set(["FunctionDeclaration", "FunctionExpression", "ArrowFunctionExpression", "ObjectMethod", "ClassMethod", "ClassPrivateMethod"]);

function call(line, loop = false) {
  return `${GUARD}(${line}${loop ? ", 1" : ""});`;
}

// Where a guard goes for one AST node: [{at, text, closer}] (character offsets in the source).
function guardsFor(node) {
  const line = node.loc.start.line;
  if (LOOPS.has(node.type)) {
    const body = node.body;
    if (body.type === "BlockStatement") return [{ at: body.start + 1, text: call(line, true), closer: false }];
    return [
      { at: body.start, text: `{${call(line, true)}`, closer: false },
      { at: body.end, text: "}", closer: true },
    ];
  }
  if (node.type === "ArrowFunctionExpression" && node.body && node.body.type !== "BlockStatement") {
    return [
      { at: node.body.start, text: `(${GUARD}(${line}), `, closer: false },
      { at: node.body.end, text: ")", closer: true },
    ];
  }
  if (FUNCTIONS.has(node.type) && node.body && node.body.type === "BlockStatement" && node.kind !== "constructor") {
    const directives = node.body.directives || [];
    // after a directive: `;` first, as a directive may end without one
    const at = directives.length ? directives[directives.length - 1].end : node.body.start + 1;
    return [{ at, text: (directives.length ? ";" : "") + call(line), closer: false }];
  }
  return [];
}

// The source with every guard inserted (descending offsets; at one offset closers end up first).
function instrument(code, guards) {
  if (!guards.length) return code;
  const ordered = guards.slice().sort((a, b) => b.at - a.at || Number(a.closer) - Number(b.closer));
  let out = code;
  for (const g of ordered) out = out.slice(0, g.at) + g.text + out.slice(g.at);
  return out;
}

module.exports = { GUARD, guardsFor, instrument };
