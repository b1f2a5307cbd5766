// The in-page runtime (bundled with React by lib/vendor.js; runs inside the page's realm only).
import * as React from "react";
import * as ReactDOM from "react-dom";
import * as ReactDOMClient from "react-dom/client";
import * as JsxRuntime from "react/jsx-runtime";
import * as JsxDevRuntime from "react/jsx-dev-runtime";
import { mount } from "./mount.js";
import { makeRequire } from "./modules.js";
import { makeStubs } from "./stubs.js";

const state = { unknown: [] };
const stubs = makeStubs(React);

// A host element never gets a stand-in as its style (React throws for a style that is not an
// object; `style={styles.card}` from a stubbed module is fine code).
function hostProps(type, props) {
  if (typeof type !== "string" || props === null || typeof props !== "object") return props;
  if (!stubs.isStub(props.style)) return props;
  const { style, ...rest } = props;
  return rest;
}
const wrapJsx = (jsx) => (type, props, ...rest) => jsx(type, hostProps(type, props), ...rest);
const ReactForCode = {
  ...React,
  createElement: (type, props, ...children) => React.createElement(type, hostProps(type, props), ...children),
};
const known = {
  react: ReactForCode,
  "react-dom": ReactDOM,
  "react-dom/client": ReactDOMClient,
  "react/jsx-runtime": { ...JsxRuntime, jsx: wrapJsx(JsxRuntime.jsx), jsxs: wrapJsx(JsxRuntime.jsxs) },
  "react/jsx-dev-runtime": { ...JsxDevRuntime, jsxDEV: wrapJsx(JsxDevRuntime.jsxDEV) },
};
// Loop and function entries in the component record their source line (lib/guards.js), so a
// render cut by the time limit can say which line was running: the loop entered last, else
// the function entered last.
let lastLoop = null;
let lastFunction = null;
// The description of a page whose component is async (mount() returned "pending").
let settled = null;
// What mount() hands the component's module; closure-private, so the code cannot rebind it.
const internal = {
  React,
  ReactDOM,
  ReactDOMClient,
  state,
  stubs,
  require: makeRequire(known, state, stubs),
  at: (line, loop) => {
    if (loop) lastLoop = line;
    else lastFunction = line;
  },
  settle: (promise) => {
    promise.then((json) => {
      settled = json;
    });
  },
};
globalThis.React = ReactForCode;
globalThis.IS_REACT_ACT_ENVIRONMENT = true;
globalThis.__botgrpo = {
  lastLine: () => [lastLoop, lastFunction].find((n) => typeof n === "number") ?? null,
  settled: () => (typeof settled === "string" ? settled : null),
  mount: (factory, options) => mount(factory, internal, options),
};
