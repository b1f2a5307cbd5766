// Module resolution inside the page: React itself, empty modules for style sheets and assets,
// an error for Node built-ins, and for any other import a stub module (its exports render
// nothing), recorded so the worker can report it as an "unknown-import" diagnostic.

const BUILTINS = new Set([
  "assert", "async_hooks", "buffer", "child_process", "cluster", "console", "constants", "crypto",
  "dgram", "diagnostics_channel", "dns", "domain", "events", "fs", "fs/promises", "http", "http2",
  "https", "inspector", "module", "net", "os", "path", "perf_hooks", "process", "punycode",
  "querystring", "readline", "repl", "stream", "string_decoder", "sys", "timers", "tls", "trace_events",
  "tty", "url", "util", "v8", "vm", "wasi", "worker_threads", "zlib",
]);
const ASSET = /\.(css|scss|sass|less|svg|png|jpe?g|gif|webp|ico|json|woff2?|ttf)$/i;

function stubComponent() {
  return null;
}

function stubModule() {
  const cache = new Map();
  return new Proxy(
    {},
    {
      get(target, key) {
        if (key === "__esModule") return true;
        if (typeof key !== "string" || key === "then") return undefined;
        if (!cache.has(key)) {
          const stub = function StubComponent() {
            return null;
          };
          cache.set(key, stub);
        }
        return cache.get(key);
      },
      has() {
        return true;
      },
    },
  );
}

export function makeRequire(known, state) {
  return function require(name) {
    if (typeof name !== "string") throw new TypeError("require() needs a module name");
    if (Object.prototype.hasOwnProperty.call(known, name)) return known[name];
    const bare = name.startsWith("node:") ? name.slice(5) : name;
    if (BUILTINS.has(bare) || name.startsWith("node:")) {
      throw new Error(`Cannot import '${name}': Node built-in modules are not available to a React component`);
    }
    if (ASSET.test(name)) return {};
    state.unknown.push(name);
    return stubModule();
  };
}

export { stubComponent };
