// Stand-ins for modules the checker does not have (a UI kit, an icon set, "./Button", hooks).
// They behave like a permissive library, so correct code that uses one renders its own content:
//
// - rendered as a component, a stub renders its children (a function child is called as a
//   render prop), its `render*` props, its element-valued props and its visibly-text string
//   props (`title`, `label`, `placeholder`, ...) inside a neutral <div data-stub="Name">; a
//   member named after an HTML tag (`motion.div`, `styled.button`) renders that tag; an
//   icon-like export (`ChevronRight` from an icon set, `MailIcon`, `IconHome`) renders an <svg>;
// - called or constructed (`useTheme()`, `Autoplay({ delay })`, `cn(...)`, `new QueryClient()`)
//   it returns another stub; members (`Select.Trigger`, `user.name`) are stubs; it iterates
//   (`const [value, setValue] = useStore()`); it converts to "" in strings, else 0; names that read as flags
//   (`isLoading`, `hasError`, `disabled`, `error`) are false, so guarded branches stay closed.
//
// A stub never throws for being used the way a library is used; the same expression always
// gives the same stub (stable identities keep effects and memo dependencies still). Whether a
// call is React rendering the stub or user code calling it is told by React's current owner
// (the fiber being rendered; development builds).

const INTERNALS = "__CLIENT_INTERNALS_DO_NOT_USE_OR_WARN_USERS_THEY_CANNOT_UPGRADE";
const TEXT_PROPS = ["title", "subtitle", "heading", "label", "description", "caption", "text", "placeholder", "helperText", "message", "content"];
const RENDER_PROP = /^render(?:[A-Z]\w*)?$/;
const FLAG = /^(?:(?:is|has|should|can|did|was|will)[A-Z_]\w*|loading|pending|fetching|submitting|disabled|error)$/;
const ICON_NAME = /(?:[a-z0-9]Icon|^Icon[A-Z]\w*|^Icon)$/;
const ICON_MODULE = /(?:^|[/@-])icons?(?:[/-]|$)|lucide|feather|heroicons|octicons|phosphor|iconoir|remixicon|iconify|\.svg(?:\?|$)/i;
// Stubs that stand for something visible even when empty (a control, a medium, a graphic).
const VISIBLE = "Button|Input|Textarea|TextArea|Checkbox|Switch|Slider|Select|Radio|Toggle|Image|Img|Avatar|Chart|Video|Player|Map|" +
  "Progress|ProgressBar|Calendar|Picker|Rating|Rate|Spinner|Loader|Logo|Skeleton|Separator|Divider|QRCode|QrCode|Swatch|" +
  "ColorArea|Upload|Pagination|Stepper|Steps";
const VISIBLE_NAME = new RegExp(`(?:${VISIBLE})$`);
const VISIBLE_MODULE = new RegExp(`(?:^|[/-])(?:${VISIBLE.toLowerCase().replace("qrcode|", "qr-?code|")})s?$`);
// Keys of a data prop's items whose string values a library shows (antd's `items`, `columns`,
// `dataSource`, `options`).
const DATA_TEXT = new Set([...TEXT_PROPS, "name", "children", "header", "footer", "extra", "tab"]);
const MAX_DEPTH = 4;
const MAX_PARTS = 200;
const HOST_TAGS = new Set(("a abbr article aside b blockquote button code dd details div dl dt em fieldset figure footer form " +
  "h1 h2 h3 h4 h5 h6 header hr i img input label li main nav ol option p pre section select small span strong " +
  "summary svg table tbody td textarea tfoot th thead tr ul").split(" "));
const VOID_TAGS = new Set(["hr", "img", "input"]);
const HOST_PROP = /^(?:className|style|id|href|src|alt|type|role|name|value|placeholder|htmlFor|on[A-Z]\w*|aria-[\w-]+|data-[\w-]+)$/;
// Keys React, promises and test tools probe to learn what a value is: a stub is none of those.
const NOT_THERE = new Set(["$$typeof", "_context", "_owner", "_store", "_self", "_source", "_debugTask", "_debugStack", "_debugInfo", "_payload", "_init", "defaultProps", "propTypes",
  "contextTypes", "childContextTypes", "contextType", "getDerivedStateFromProps", "getDerivedStateFromError",
  "compare", "toJSON", "asymmetricMatch", "nodeType", "__esModule"]);
const OWN = new Set(["prototype", "call", "apply", "bind", "constructor"]);
const ITEMS = 3; // what iterating a stub yields (enough for `const [a, b, c] = useThing()`)
// Stubbed higher-order functions by name: they wrap any function they are given (`observer(() => ...)`).
const HOC_NAME = /^(?:observer|memo|with[A-Z]\w*|inject|styled|forwardRef)$/;
const MAX_NAME = 240; // past this, members are one self-similar stub (`while (node.parent)` walks)

export function makeStubs(React) {
  const internals = React[INTERNALS];
  let lastRender = null; // {name, fiber} of the stub React rendered last
  const owner = () => {
    const dispatcher = internals && internals.A;
    return dispatcher && typeof dispatcher.getOwner === "function" ? dispatcher.getOwner() : null;
  };

  function hostProps(props, name, tag) {
    const out = { "data-stub": name };
    if (tag !== "div") {
      for (const key of Object.keys(props)) if (HOST_PROP.test(key)) out[key] = props[key];
    } else {
      if (typeof props.className === "string") out.className = props.className;
      if (props.style && typeof props.style === "object") out.style = props.style;
      if (!out.className && !out.style) out.style = { display: "contents" };
    }
    if (props.ref !== undefined) out.ref = props.ref;
    return out;
  }

  // Elements anywhere in a data prop, and the strings a library would show: under text-like
  // keys of its items, and items of arrays (`options={["Daily", "Weekly"]}`).
  function collect(value, depth, parts, textual) {
    if (parts.length >= MAX_PARTS || depth > MAX_DEPTH || value === null || value === undefined) return;
    if (typeof value === "string" || typeof value === "number") {
      if (textual) parts.push(String(value));
    } else if (React.isValidElement(value)) {
      parts.push(value);
    } else if (Array.isArray(value)) {
      for (const item of value.slice(0, MAX_PARTS)) collect(item, depth + 1, parts, depth < 2);
    } else if (typeof value === "object" && isPlainObject(value)) {
      for (const key of Object.keys(value)) collect(value[key], depth + 1, parts, DATA_TEXT.has(key));
    }
  }

  // The parts of a page a library component would show: text props, render props, element and
  // data props, children (a function child is a render prop).
  function shownParts(props, arg) {
    const parts = [];
    for (const key of TEXT_PROPS) {
      const value = props[key];
      if (typeof value === "string" || typeof value === "number") parts.push(String(value));
    }
    for (const key of Object.keys(props)) {
      const value = props[key];
      const text = typeof value === "string" || typeof value === "number";
      if (key === "children" || key === "ref" || key === "style" || (text && TEXT_PROPS.includes(key))) continue;
      if (RENDER_PROP.test(key) && typeof value === "function") parts.push(value(arg));
      else collect(value, 0, parts, false);
    }
    const children = props.children;
    parts.push(typeof children === "function" ? children(arg) : children);
    return parts;
  }

  function render(info, props) {
    props = props !== null && typeof props === "object" ? props : {};
    if (info.wraps) return React.createElement(info.wraps, props);
    if (info.kind === "icon") {
      const svg = { "data-stub": info.name, viewBox: "0 0 24 24", width: "1em", height: "1em", "aria-hidden": "true" };
      if (typeof props.className === "string") svg.className = props.className;
      if (props.ref !== undefined) svg.ref = props.ref;
      return React.createElement("svg", svg);
    }
    const attributes = hostProps(props, info.name, info.tag);
    if (info.visible) attributes["data-stub-visible"] = "";
    if (VOID_TAGS.has(info.tag)) return React.createElement(info.tag, attributes);
    return React.createElement(info.tag, attributes, ...shownParts(props, stub(`${info.name}(...)`, { key: `${info.key}(...)` })));
  }

  // "" in templates and String(), 0 in arithmetic, `+` and dates (`new Date(post.createdAt)`).
  const primitive = (hint) => (hint === "string" ? "" : 0);

  // One stub per expression: `name` is what it stands for ("Select.Trigger", "useTheme()"),
  // `key` tells apart equal names from different modules (`Root` of a dialog and of a slider).
  // Options: icon, visible, icons (capitalised members are icons: an icon set's namespace),
  // wraps (a user component a stubbed higher-order function was given: rendered as it),
  // awaited (no `then`: what awaiting a stub gives), deep (members are the stub itself).
  const byKey = new Map();
  const stubs = new WeakSet();
  const wrapperIds = new WeakMap();
  function stub(name, options = {}) {
    const key = options.key || name;
    if (byKey.has(key)) return byKey.get(key);
    const segment = lastSegment(name);
    const info = {
      name,
      key,
      kind: options.icon || ICON_NAME.test(segment) ? "icon" : "component",
      tag: name.includes(".") && HOST_TAGS.has(segment) ? segment : "div",
      visible: Boolean(options.visible) || VISIBLE_NAME.test(segment),
      wraps: options.wraps,
    };
    const icons = Boolean(options.icons);
    let proxy = null;
    const member = (suffix, extra = {}) => {
      if (options.deep) return proxy;
      if (key.length > MAX_NAME) return stub("...", { key: "\0deep", deep: true });
      const memberName = `${name}${suffix}`;
      // an icon set's members are icons: `Icons.logo`, `icons.Mail`
      const plain = !/(?:Context|Provider|Consumer)$/.test(memberName) && !/[()[\]]/.test(suffix);
      const iconMember = plain && (info.kind === "icon" || (icons && /^[A-Z]/.test(lastSegment(memberName))));
      const inherited = { visible: options.visible, icons, icon: iconMember, wraps: info.wraps };
      return stub(memberName, { key: `${key}${suffix}`, ...inherited, ...extra });
    };
    const wrapper = (component) => {
      if (!wrapperIds.has(component)) wrapperIds.set(component, wrapperIds.size + 1);
      const label = String(component.displayName || component.name || "Component");
      return stub(`${name}(${label})`, { key: `${key}(#${wrapperIds.get(component)})`, wraps: component });
    };
    const assigned = new Map();
    const target = anonymousFunction(); // no own name to leak into the page when frozen
    proxy = new Proxy(target, {
      get(t, key) {
        if (assigned.has(key)) return assigned.get(key);
        const own = Reflect.getOwnPropertyDescriptor(t, key);
        if (own && !own.configurable && own.writable === false) return own.value; // Proxy invariant
        if (typeof key === "symbol") {
          if (key === Symbol.toPrimitive) return primitive;
          if (key === Symbol.iterator) return () => Array.from({ length: ITEMS }, (_, i) => member(`[${i}]`))[Symbol.iterator]();
          return undefined;
        }
        if (NOT_THERE.has(key)) return undefined;
        if (key === "then") return options.awaited ? undefined : thenable(member);
        if (key === "status" && !options.awaited) return "fulfilled"; // React's use() reads it
        if (OWN.has(key)) return Reflect.get(t, key);
        if (key === "displayName") return name;
        if (key === "length") return 0;
        if (key === "toString" || key === "toLocaleString") return () => "";
        if (key === "valueOf") return () => 0;
        if (FLAG.test(key)) return key === "error" ? null : false;
        return member(`.${key}`, key === "value" ? { awaited: true } : {});
      },
      set(t, key, value) {
        assigned.set(key, value);
        return true;
      },
      apply(t, self, args) {
        const fiber = owner();
        const type = fiber ? fiber.type : null;
        if (type === proxy || (fiber && fiber.elementType === proxy) || (type && type.render === proxy)) {
          lastRender = { name, fiber };
          return render(info, args[0]);
        }
        const hoc = HOC_NAME.test(segment);
        const component = args.find((a) => isUserComponent(a) || (hoc && typeof a === "function" && !stubs.has(a)));
        return component ? wrapper(component) : member("()");
      },
      construct() {
        return member("(new)");
      },
    });
    stubs.add(proxy);
    byKey.set(key, proxy);
    return proxy;
  }

  // An exported `...Context` is a real React context whose default value is a stub, so
  // useContext(), use() and <X.Provider> work as with the library's own.
  const contexts = new Map();
  function context(key, name) {
    if (!contexts.has(key)) {
      const made = React.createContext(stub(`${name}.value`, { key: `${key}.value`, awaited: true }));
      made.displayName = name;
      contexts.set(key, made);
    }
    return contexts.get(key);
  }

  // `stub.then(onFulfilled)`: a stub is a settled promise of another stub (one without `then`,
  // so awaiting ends), as an API client's call would be.
  const thenable = (member) =>
    function then(onFulfilled, onRejected) {
      return Promise.resolve(member("(awaited)", { awaited: true })).then(onFulfilled, onRejected);
    };

  // A component of the code (not a stub): what `observer(C)`, `withRouter(C)`, `styled(C)` wrap.
  function isUserComponent(value) {
    if (stubs.has(value)) return false;
    if (typeof value === "function") return /^[A-Z]/.test(String(value.displayName || value.name || ""));
    return value !== null && typeof value === "object" && typeof value.$$typeof === "symbol" && !React.isValidElement(value);
  }

  // A module the checker does not have: every export is a stub named after it.
  function stubModule(moduleName) {
    const icons = ICON_MODULE.test(moduleName);
    const visible = VISIBLE_MODULE.test(moduleName.split("?")[0].replace(/\.\w+$/, "").toLowerCase());
    const exportStub = (key) => {
      const name = key === "default" ? defaultName(moduleName) : key;
      if (/^[A-Z]\w*Context$/.test(name)) return context(`${moduleName}\0${key}`, name);
      const icon = icons && /^[A-Z]/.test(name) && !/(?:Context|Provider)$/.test(name);
      return stub(name, { key: `${moduleName}\0${key}`, icon, icons, visible });
    };
    // esbuild's __toESM copies a module onto an object made from the module's prototype, so
    // the prototype answers every export too.
    const exportsProto = new Proxy(Object.create(null), {
      get: (t, key) => (typeof key === "string" && key !== "then" && !NOT_THERE.has(key) ? exportStub(key) : undefined),
      getPrototypeOf: () => null,
    });
    return new Proxy({}, {
      get(target, key) {
        if (key === "__esModule") return true;
        if (typeof key !== "string" || key === "then" || NOT_THERE.has(key)) return undefined;
        return exportStub(key);
      },
      has: () => true,
      getPrototypeOf: () => exportsProto,
    });
  }

  // Where the stub React rendered last was used (the JSX's creation stack, React's development
  // builds keep one per element), when `componentStack`'s innermost component is that stub:
  // React threw while placing what the stub rendered (say, an object as a child).
  function useSite(componentStack) {
    if (lastRender === null) return "";
    const frames = [...String(componentStack).matchAll(/^\s*at (\S+) \(/gm)].map((m) => m[1]);
    const inner = frames.find((n) => !HOST_TAGS.has(n) && !/^[a-z][\w-]*$/.test(n));
    const debugStack = lastRender.fiber._debugStack;
    if (inner !== lastRender.name || !debugStack) return "";
    return String(debugStack.stack || "");
  }

  return { stub, stubModule, useSite, isStub: (value) => stubs.has(value) };
}

function isPlainObject(value) {
  const proto = Object.getPrototypeOf(value);
  return proto === null || proto === Object.prototype;
}

function lastSegment(name) {
  const bare = name.replace(/(?:\((?:\.*|new)\)|\[\d+\])+$/, "");
  return bare.slice(bare.lastIndexOf(".") + 1);
}

// "embla-carousel-autoplay" -> "EmblaCarouselAutoplay"; "./Button" -> "Button"; "./logo.svg?react" -> "Logo".
function defaultName(moduleName) {
  const base = moduleName.split("?")[0].replace(/\/+$/, "").split("/").pop().replace(/\.\w+$/, "");
  const words = base.split(/[^A-Za-z0-9]+/).filter(Boolean);
  const name = words.map((w) => w[0].toUpperCase() + w.slice(1)).join("");
  return /^[A-Za-z]/.test(name) ? name : `Default${name}`;
}

function anonymousFunction() {
  return function () {};
}
