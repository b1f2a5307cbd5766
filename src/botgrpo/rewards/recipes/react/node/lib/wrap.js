"use strict";
// The page script around a transformed component: the module runs as a factory that mount()
// calls with (module, exports, require, found, at); `found` receives the top-level component
// candidates by name (components declared but not exported), `at` is the line guard.

const { GUARD } = require("./guards");

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

// `candidates`: {ComponentName: line}; `options`: mount()'s options as a JS literal ("" for none).
function wrapModule(cjs, candidates, options = "") {
  const names = Object.keys(candidates)
    .filter((n) => IDENTIFIER.test(n))
    .map((n) => `${JSON.stringify(n)}: typeof ${n} === "undefined" ? undefined : ${n}`)
    .join(", ");
  const rest = options ? `, ${options}` : "";
  return `__botgrpo.mount(function (module, exports, require, __botgrpo_found, ${GUARD}) {${cjs}\n;__botgrpo_found.names = {${names}};\n}${rest});`;
}

module.exports = { wrapModule };
