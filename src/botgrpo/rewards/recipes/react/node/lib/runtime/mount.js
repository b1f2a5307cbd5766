// Run the component module, find the component, render it with act() so effects run, and
// describe the page: errors with their stacks, blank or not. Returns a JSON string.

const VISIBLE_ELEMENTS = "img,svg,canvas,video,picture,iframe,input,button,textarea,select,progress,meter";

function isComponentLike(value) {
  if (typeof value === "function") return true;
  return value !== null && typeof value === "object" && typeof value.$$typeof === "symbol";
}

function pickComponent(exports, candidates) {
  if (exports && isComponentLike(exports.default)) return { value: exports.default, name: "default" };
  if (isComponentLike(exports) && typeof exports === "function") return { value: exports, name: "module.exports" };
  const names = exports && typeof exports === "object" ? Object.keys(exports) : [];
  const prefer = ["App", ...names.filter((n) => /^[A-Z]/.test(n))];
  for (const name of prefer) {
    if (exports && isComponentLike(exports[name])) return { value: exports[name], name };
  }
  const top = candidates || {};
  const found = ["App", ...Object.keys(top)].find((n) => isComponentLike(top[n]));
  return found ? { value: top[found], name: found } : null;
}

// The error's own stack, then React's component stack (the component being rendered when
// React itself threw, e.g. "Objects are not valid as a React child").
function describeError(error, info) {
  const componentStack = info && typeof info.componentStack === "string" ? info.componentStack : "";
  if (error !== null && typeof error === "object") {
    const stack = `${String(error.stack || "")}\n${componentStack}`;
    return { message: `${error.name || "Error"}: ${error.message}`, stack };
  }
  return { message: `thrown: ${String(error)}`, stack: componentStack };
}

// Catches render errors so that React reports them with its component stack (onCaughtError).
function makeBoundary(React) {
  return class Boundary extends React.Component {
    constructor(props) {
      super(props);
      this.state = { failed: false };
    }
    static getDerivedStateFromError() {
      return { failed: true };
    }
    render() {
      return this.state.failed ? null : this.props.children;
    }
  };
}

function pageIsBlank(doc) {
  const body = doc.body;
  if (!body) return true;
  const text = typeof body.innerText === "string" ? body.innerText : body.textContent;
  if ((text || "").trim()) return false;
  return body.querySelector(VISIBLE_ELEMENTS) === null;
}

export function mount(factory, runtime, options) {
  const { React, ReactDOM, ReactDOMClient, state } = runtime;
  // act() flushes effects synchronously (jsdom); a browser renders with flushSync and lets
  // effects run on their own before the screenshot.
  const flush = options && options.browser ? (fn) => ReactDOM.flushSync(fn) : (fn) => React.act(fn);
  const errors = [];
  const record = (error, info) => errors.push(describeError(error, info));
  const module = { exports: {} };
  const found = { names: {} };
  let component = null;
  let selfMounted = false;
  const doc = globalThis.document;
  const container = doc.getElementById("root");
  const before = doc.body.childNodes.length;
  try {
    flush(() => {
      factory(module, module.exports, runtime.require, found);
    });
    selfMounted = container.childNodes.length > 0 || doc.body.childNodes.length > before;
    component = pickComponent(module.exports, found.names);
  } catch (error) {
    record(error);
  }
  if (!errors.length && component && !selfMounted) {
    const root = ReactDOMClient.createRoot(container, {
      onUncaughtError: record,
      onCaughtError: record,
      onRecoverableError: record,
    });
    try {
      const Boundary = makeBoundary(React);
      flush(() => root.render(React.createElement(Boundary, null, React.createElement(component.value))));
      flush(() => {});
    } catch (error) {
      record(error);
    }
  }
  const rendered = errors.length === 0 && (component !== null || selfMounted);
  return JSON.stringify({
    errors,
    component: component ? component.name : selfMounted ? "self-mounted" : null,
    rendered,
    blank: rendered ? pageIsBlank(doc) : null,
    unknown: state.unknown,
  });
}
