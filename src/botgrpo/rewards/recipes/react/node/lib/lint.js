"use strict";
// ESLint 9 (flat config, Linter API): eslint-plugin-react and react-hooks rules plus error-prone
// core rules. Code with TypeScript syntax is parsed by typescript-eslint's parser (and its
// no-unused-vars, which knows type-only uses); plain JSX by ESLint's own espree, which is faster.
// Severity 2 -> "error", 1 -> "warning", a parse failure -> "fatal".

const { Linter } = require("eslint");
const reactPlugin = require("eslint-plugin-react");
const hooksPlugin = require("eslint-plugin-react-hooks");
const globals = require("globals");

const ERROR = 2;
const WARN = 1;

const RULES = {
  // React
  "react/jsx-key": ERROR,
  "react/jsx-no-undef": ERROR,
  "react/jsx-no-duplicate-props": ERROR,
  "react/jsx-uses-vars": ERROR,
  // JSX uses React (the classic runtime's import React is not an unused variable)
  "react/jsx-uses-react": ERROR,
  "react/no-direct-mutation-state": ERROR,
  "react/no-danger-with-children": ERROR,
  "react/no-find-dom-node": ERROR,
  "react/no-is-mounted": ERROR,
  "react/no-render-return-value": ERROR,
  "react/no-string-refs": ERROR,
  "react/no-unknown-property": ERROR,
  "react/require-render-return": ERROR,
  "react/no-children-prop": WARN,
  "react/no-deprecated": WARN,
  "react/no-unescaped-entities": WARN,
  "react/jsx-no-comment-textnodes": WARN,
  "react/jsx-no-target-blank": WARN,
  // Hooks
  "react-hooks/rules-of-hooks": ERROR,
  "react-hooks/exhaustive-deps": WARN,
  // Core rules that catch bugs
  "no-undef": ERROR,
  "no-unreachable": ERROR,
  "no-dupe-keys": ERROR,
  "no-duplicate-case": ERROR,
  "no-const-assign": ERROR,
  "no-func-assign": ERROR,
  "no-import-assign": ERROR,
  "no-obj-calls": ERROR,
  "no-unsafe-negation": ERROR,
  "no-unsafe-finally": ERROR,
  "no-unsafe-optional-chaining": ERROR,
  "use-isnan": ERROR,
  "valid-typeof": ERROR,
  "getter-return": ERROR,
  "no-setter-return": ERROR,
  "no-dupe-class-members": ERROR,
  "constructor-super": ERROR,
  "no-this-before-super": ERROR,
  "for-direction": ERROR,
  "no-redeclare": ERROR,
  "no-self-assign": WARN,
  "no-self-compare": WARN,
  "no-cond-assign": WARN,
  "no-constant-condition": WARN,
  "no-debugger": WARN,
  "no-empty": WARN,
  "no-fallthrough": WARN,
  "no-sparse-arrays": WARN,
  "no-loss-of-precision": WARN,
  "no-async-promise-executor": WARN,
  "no-compare-neg-zero": WARN,
};
const UNUSED = [WARN, { args: "none", ignoreRestSiblings: true }];
// React as a global (pages that load it from a script tag) and process.env (bundlers define it).
const GLOBALS = { ...globals.browser, ...globals.es2021, React: "readonly", process: "readonly" };
const PLUGINS = { react: reactPlugin, "react-hooks": hooksPlugin };
const SETTINGS = { react: { version: "19.0" } };

// typescript-eslint loads TypeScript (most of the worker's start-up): only when TSX comes.
function typescriptConfig() {
  const tseslint = require("typescript-eslint");
  return {
    files: ["**/*.tsx"],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { ecmaFeatures: { jsx: true }, sourceType: "module", lib: ["esnext", "dom", "dom.iterable"] },
      globals: GLOBALS,
    },
    plugins: { ...PLUGINS, "@typescript-eslint": tseslint.plugin },
    settings: SETTINGS,
    rules: { ...RULES, "@typescript-eslint/no-unused-vars": UNUSED },
  };
}

const JSX_CONFIG = {
  files: ["**/*.jsx"],
  languageOptions: {
    ecmaVersion: "latest",
    sourceType: "module",
    parserOptions: { ecmaFeatures: { jsx: true } },
    globals: GLOBALS,
  },
  plugins: PLUGINS,
  settings: SETTINGS,
  rules: { ...RULES, "no-unused-vars": UNUSED },
};
let tsxConfig = null;

const linter = new Linter({ configType: "flat" });

function lintCode(code, typescript = true) {
  if (typescript && tsxConfig === null) tsxConfig = typescriptConfig();
  const config = typescript ? [tsxConfig] : [JSX_CONFIG];
  const filename = typescript ? "component.tsx" : "component.jsx";
  const messages = linter.verify(code, config, { filename });
  return messages.map((m) => ({
    line: Number.isInteger(m.line) ? m.line : null,
    source: "lint",
    severity: m.fatal ? "fatal" : m.severity === 2 ? "error" : "warning",
    rule: m.ruleId || null,
    message: m.message,
  }));
}

module.exports = { lintCode, RULES };
