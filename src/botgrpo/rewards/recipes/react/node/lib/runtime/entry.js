// The in-page runtime (bundled with React by lib/vendor.js; runs inside the page's realm only).
import * as React from "react";
import * as ReactDOM from "react-dom";
import * as ReactDOMClient from "react-dom/client";
import * as JsxRuntime from "react/jsx-runtime";
import * as JsxDevRuntime from "react/jsx-dev-runtime";
import { mount } from "./mount.js";
import { makeRequire } from "./modules.js";

const known = {
  react: React,
  "react-dom": ReactDOM,
  "react-dom/client": ReactDOMClient,
  "react/jsx-runtime": JsxRuntime,
  "react/jsx-dev-runtime": JsxDevRuntime,
};
const state = { unknown: [] };
globalThis.React = React;
globalThis.IS_REACT_ACT_ENVIRONMENT = true;
globalThis.__botgrpo = {
  React,
  ReactDOM,
  ReactDOMClient,
  state,
  require: makeRequire(known, state),
  mount: (factory, options) => mount(factory, globalThis.__botgrpo, options),
};
