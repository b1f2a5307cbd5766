// Run the component module, find the component, render it with act() so effects run, and
// describe the page: errors with their stacks, its visible text, blank or not. Returns a JSON
// string.

const VISIBLE_ELEMENTS = "img,svg,canvas,video,picture,iframe,input:not([type=hidden]),button,textarea,select,progress,meter";

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

// The error's own stack; when it has no frame in the component's code, where the stub being
// placed was used; then React's component stack (the component being rendered when React
// itself threw, e.g. "Objects are not valid as a React child").
function describeError(error, info, stubs) {
  const componentStack = info && typeof info.componentStack === "string" ? info.componentStack : "";
  if (error !== null && typeof error === "object") {
    const own = String(error.stack || "");
    const site = own.includes("component.js:") ? "" : stubs.useSite(componentStack);
    return { message: `${error.name || "Error"}: ${error.message}`, stack: `${own}\n${site}`, componentStack };
  }
  return { message: `thrown: ${String(error)}`, stack: "", componentStack };
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

const HIDDEN_TEXT = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE"]);
const MAX_TEXT = 4000;

// The page's visible text (text nodes outside script/style/template and [hidden]), a space
// between the texts of different elements, whitespace collapsed, at most MAX_TEXT characters.
function visibleText(doc) {
  const body = doc.body;
  if (!body) return "";
  const walker = doc.createTreeWalker(body, 4 /* NodeFilter.SHOW_TEXT */);
  const parts = [];
  let length = 0;
  let previous = null;
  for (let node = walker.nextNode(); node !== null && length < MAX_TEXT; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (parent && (HIDDEN_TEXT.has(parent.tagName) || parent.closest("[hidden]"))) continue;
    const text = node.nodeValue.replace(/\s+/g, " ");
    parts.push(previous !== null && parent !== previous ? ` ${text}` : text);
    previous = parent;
    length += text.length;
  }
  return parts.join("").replace(/\s+/g, " ").trim().slice(0, MAX_TEXT);
}

// Blank: no visible text, no media or form control, and no stub that stands for one.
function pageIsBlank(doc, text) {
  if (text) return false;
  const body = doc.body;
  return !body || body.querySelector(`${VISIBLE_ELEMENTS},[data-stub-visible]`) === null;
}

// Taken when the runtime loads, before any component code runs (which could replace it).
const stringify = JSON.stringify;
const PENDING = stringify({ pending: true });

function isAsyncFunction(value) {
  return Object.prototype.toString.call(value) === "[object AsyncFunction]";
}

function isPlainFunction(value) {
  return typeof value === "function" && !(value.prototype && value.prototype.isReactComponent);
}

// Run the module, pick the component and render it. Synchronous components give the page's
// description (a JSON string) at once; an async component (a server-component page) is awaited
// in microtasks, which the vm drains before it returns: then mount() gives PENDING and the
// description arrives through settle().
export function mount(factory, runtime, options) {
  const { React, ReactDOM, ReactDOMClient, state, stubs, settle, at } = runtime;
  // act() flushes effects synchronously (jsdom); a browser renders with flushSync and lets
  // effects run on their own before the screenshot.
  const flush = options && options.browser ? (fn) => ReactDOM.flushSync(fn) : (fn) => React.act(fn);
  let errors = [];
  const record = (error, info) => errors.push(describeError(error, info, stubs));
  const module = { exports: {} };
  const found = { names: {} };
  let component = null;
  let selfMounted = false;
  let standIn = null;
  const doc = globalThis.document;
  const container = doc.getElementById("root");
  const before = doc.body.childNodes.length;
  const Boundary = makeBoundary(React);
  let root = null;

  function show(element) {
    if (root !== null) {
      flush(() => root.unmount());
      container.textContent = "";
    }
    root = ReactDOMClient.createRoot(container, { onUncaughtError: record, onCaughtError: record, onRecoverableError: record });
    try {
      flush(() => root.render(React.createElement(Boundary, null, element)));
      flush(() => {});
    } catch (error) {
      record(error);
    }
  }

  // A component that fails without props (a page's piece, a layout) is rendered once more with
  // stand-in props; when that fails too, its errors stand (they are the component's own, not
  // those of props it was not given).
  function retryWithStandIns(render) {
    const first = errors;
    errors = [];
    render(stubs.stub("props"));
    if (!errors.length) standIn = first[0].message;
  }

  function describe() {
    const rendered = errors.length === 0 && (component !== null || selfMounted);
    const text = rendered ? visibleText(doc) : "";
    return stringify({
      errors,
      component: component ? component.name : selfMounted ? "self-mounted" : null,
      function_name: component && typeof component.value === "function" ? String(component.value.name || "") : "",
      stand_in: standIn,
      rendered,
      blank: rendered ? pageIsBlank(doc, text) : null,
      text,
      unknown: state.unknown,
    });
  }

  try {
    flush(() => {
      factory(module, module.exports, runtime.require, found, at);
    });
    selfMounted = container.childNodes.length > 0 || doc.body.childNodes.length > before;
    component = pickComponent(module.exports, found.names);
  } catch (error) {
    record(error);
  }
  if (errors.length || !component || selfMounted) return describe();
  const Component = component.value;
  if (isAsyncFunction(Component)) {
    const awaited = async (props) => {
      try {
        const tree = await Component(props);
        show(React.createElement(function AsyncPage() {
          return tree;
        }));
      } catch (error) {
        record(error);
      }
    };
    settle(
      awaited({}).then(async () => {
        if (!errors.length || Component.length < 1) return describe();
        const first = errors;
        errors = [];
        await awaited(stubs.stub("props"));
        if (!errors.length) standIn = first[0].message;
        return describe();
      }),
    );
    return PENDING;
  }
  show(React.createElement(Component));
  if (errors.length && isPlainFunction(Component) && Component.length >= 1) {
    retryWithStandIns((props) => show(React.createElement(function WithStandInProps() {
      return Component(props);
    })));
  }
  return describe();
}
