// Module resolution inside the page: React itself; empty modules for style sheets; a URL (and,
// for SVG, an icon component) for images, media and fonts; an error for Node built-ins; and for
// any other import a stub module (./stubs.js), recorded so the worker can report it as an
// "unknown-import" diagnostic.

const BUILTINS = new Set([
  "assert", "async_hooks", "buffer", "child_process", "cluster", "console", "constants", "crypto",
  "dgram", "diagnostics_channel", "dns", "domain", "events", "fs", "fs/promises", "http", "http2",
  "https", "inspector", "module", "net", "os", "path", "perf_hooks", "process", "punycode",
  "querystring", "readline", "repl", "stream", "string_decoder", "sys", "timers", "tls", "trace_events",
  "tty", "url", "util", "v8", "vm", "wasi", "worker_threads", "zlib",
]);
const STYLE = /\.(css|scss|sass|less|styl)$/i;
const CSS_MODULE = /\.module\.(css|scss|sass|less|styl)$/i;
const MEDIA = /\.(svg|png|jpe?g|gif|webp|avif|ico|bmp|mp4|webm|ogg|mp3|wav|woff2?|ttf|otf|eot)$/i;

// `import styles from "./App.module.css"`: every class name maps to itself.
function cssModule() {
  const classes = new Proxy({}, {
    get: (target, key) => (typeof key === "string" && key !== "then" && key !== "__esModule" ? key : undefined),
  });
  return { __esModule: true, default: classes };
}

function mediaModule(name, stubs) {
  const url = `/${name.split("/").pop()}`;
  const module = { __esModule: true, default: url };
  if (/\.svg$/i.test(name)) module.ReactComponent = stubs.stub("ReactComponent", "icon");
  return module;
}

export function makeRequire(known, state, stubs) {
  return function require(name) {
    if (typeof name !== "string") throw new TypeError("require() needs a module name");
    if (Object.prototype.hasOwnProperty.call(known, name)) return known[name];
    const bare = name.startsWith("node:") ? name.slice(5) : name;
    if (BUILTINS.has(bare) || name.startsWith("node:")) {
      throw new Error(`Cannot import '${name}': Node built-in modules are not available to a React component`);
    }
    if (CSS_MODULE.test(name)) return cssModule();
    if (STYLE.test(name)) return {};
    if (MEDIA.test(name)) return mediaModule(name, stubs);
    state.unknown.push(name);
    return stubs.stubModule(name);
  };
}
