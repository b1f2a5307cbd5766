// The in-page runtime (bundled with React by lib/vendor.js; runs inside the page's realm only).
import * as React from "react";
import * as ReactDOM from "react-dom";
import * as ReactDOMClient from "react-dom/client";
import * as JsxRuntime from "react/jsx-runtime";
import * as JsxDevRuntime from "react/jsx-dev-runtime";
import { mount } from "./mount.js";
import { makeRequire } from "./modules.js";
import { makeStubs } from "./stubs.js";

const known = {
  react: React,
  "react-dom": ReactDOM,
  "react-dom/client": ReactDOMClient,
  "react/jsx-runtime": JsxRuntime,
  "react/jsx-dev-runtime": JsxDevRuntime,
};
const state = { unknown: [] };
// Loop and function entries in the component record their source line here (lib/guards.js),
// so a render cut by the time limit can say which line was running.
let lastLine = null;
// The description of a page whose component is async (mount() returned "pending").
let settled = null;
const stubs = makeStubs(React);
globalThis.React = React;
globalThis.IS_REACT_ACT_ENVIRONMENT = true;
globalThis.__botgrpo = {
  React,
  ReactDOM,
  ReactDOMClient,
  state,
  stubs,
  require: makeRequire(known, state, stubs),
  at: (line) => {
    lastLine = line;
  },
  lastLine: () => (typeof lastLine === "number" ? lastLine : null),
  settle: (promise) => {
    promise.then((json) => {
      settled = json;
    });
  },
  settled: () => (typeof settled === "string" ? settled : null),
  mount: (factory, options) => mount(factory, globalThis.__botgrpo, options),
};
