"""Verdicts on React components from a real toolchain: compile, lint, render, screenshot.

:func:`check_components` sends each code to a sandboxed Node worker (:mod:`.worker`), which

- parses it with @babel/parser in TSX mode (compile verdict, every recoverable error's line),
- transforms it to CommonJS with esbuild (automatic JSX runtime, source map kept),
- lints it with ESLint 9 (eslint-plugin-react, react-hooks and error-prone core rules),
- renders it in a fresh jsdom window with React 19's ``act()`` (effects run), with stubs for
  matchMedia, ResizeObserver and IntersectionObserver; loops are cut by a vm timeout (blamed on
  the loop or function that was running), runtime errors are mapped back to source lines; and
  tells whether the page is blank and what text it shows.

Blank means nothing visible: no text (text that stubs carry counts), no img/svg/canvas/input/
button/... element, and no stub that stands for a control or a medium (``Button``, ``Input``,
``Avatar``, ``Chart``, ...). A component that needs props (a page's piece) and fails without
them is rendered again with stand-in props: when that works it counts as rendered, with a
"needs-props" warning on its declaration. An async component (a server-component page) is
awaited.

Imports (the unknown-import policy): ``react``, ``react-dom``, ``react-dom/client`` and the JSX
runtimes are real; style sheets are empty modules (CSS modules map each class to its name);
images, media and fonts are URLs (an SVG also exports ``ReactComponent``, an icon); Node
built-ins (``fs``, ``child_process``, ``node:*``) throw, so the render fails; any other module
(``lucide-react``, ``@/components/ui/card``, ``./Button``) is a stub that behaves like a
permissive library, reported as an "unknown-import" warning on its import line (so a user sees
what was not checked):

- its components render their children (a function child is a render prop), ``render*``
  props, element and data props (``items``, ``columns``, ``options``: the strings under
  ``title``/``label``/``name``/...) and visibly-text props (``title``, ``label``,
  ``placeholder``, ``description``, ...) in a ``<div data-stub="Name">``; members named after
  a tag (``motion.div``) render that tag; icon-like exports (an icon set's, ``*Icon``) an svg;
- its hooks and functions (``useTheme()``, ``Autoplay({...})``, ``cn()``) return stand-ins that
  can be destructured, called, iterated and read at any depth; flag-like names (``isLoading``,
  ``disabled``, ``error``) read false, so guarded branches stay closed.

A runtime error in the component's own code is still a render failure on its line; an error
React raises while placing what a stub rendered is blamed on the line that used the stub.
``React`` and ``process.env`` are globals (ESLint knows them), as bundlers provide.

>>> [r] = check_components(["export default () => <p>hi</p>;\\n"])
>>> r.compiled, r.rendered, r.blank, r.diagnostics
(True, True, False, ())
"""

from __future__ import annotations

import atexit
import base64
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from botgrpo.rewards.recipes.react.worker import NodeWorker, WorkerError, WorkerPool
from botgrpo.rewards.sandbox.config import check_timeout

__all__ = [
    "MAX_CODE_CHARS",
    "ReactCheck",
    "ReactDiagnostic",
    "Screenshot",
    "check_components",
    "default_pool",
    "screenshot_components",
]

Source = Literal["compile", "lint", "render"]
Severity = Literal["fatal", "error", "warning"]
MAX_CODE_CHARS = 200_000
"""Longest code a worker accepts (the worker enforces the same bound)."""


@dataclass(frozen=True)
class ReactDiagnostic:
    """One finding about a component."""

    line: int | None
    """1-based line within the code; None for a finding about the whole code ("not a
    component", a timeout outside any loop or function)."""
    source: Source
    """"compile" (parser or transform), "lint" (ESLint) or "render" (jsdom)."""
    severity: Severity
    """"fatal" (compile errors, runtime errors, timeouts), "error" or "warning"."""
    rule: str | None
    """ESLint rule, Babel reason code, "runtime-error", "timeout", "unknown-import",
    "needs-props", "not-a-component", "worker" (the worker died on this item), or None."""
    message: str
    """Human-readable description."""


@dataclass(frozen=True)
class ReactCheck:
    """The verdicts on one component."""

    compiled: bool
    """Babel parsed it and esbuild transformed it."""
    rendered: bool | None
    """It rendered without error (None: not attempted, e.g. it does not compile)."""
    blank: bool | None
    """The rendered page shows nothing (None: nothing rendered)."""
    is_component: bool
    """A React component was found (or the code mounted itself); False for code without JSX
    that exports nothing renderable."""
    diagnostics: tuple[ReactDiagnostic, ...]
    """Every finding, compile first, then lint, then render."""
    unknown_imports: tuple[str, ...] = ()
    """Modules replaced by stubs."""
    timings_ms: dict[str, float] = field(default_factory=dict)
    """Milliseconds per stage in the worker ("compile", "lint", "render")."""
    text: str | None = None
    """The rendered page's visible text, whitespace collapsed, at most 4000 characters (None:
    nothing rendered)."""


@dataclass(frozen=True)
class Screenshot:
    """A headless-Chromium screenshot of one component (PNG)."""

    png: bytes | None
    """The PNG bytes, None when there is no usable screenshot."""
    rendered: bool | None
    """The page rendered without error (None: no page)."""
    blank: bool | None
    """The page shows nothing (None: no page)."""
    reason: str = ""
    """Why there is no screenshot ("" when there is one)."""


_pool: WorkerPool | None = None
_pool_lock = threading.Lock()


def default_pool() -> WorkerPool:
    """The process-wide pool (one worker per core), created on first use, stopped at exit."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = WorkerPool()
            atexit.register(_pool.close)
        return _pool


def _validate(codes: Sequence[Any], where: str) -> list[str]:
    if isinstance(codes, str):
        raise TypeError(f"{where}: pass a list of codes, not one str")
    out = list(codes)
    for i, code in enumerate(out):
        if not isinstance(code, str):
            raise TypeError(f"{where}: codes[{i}] is a {type(code).__name__}, not a str")
        if not code.strip():
            raise ValueError(f"{where}: codes[{i}] is empty; pass the component's source")
    return out


def _failed(rule: str, message: str, source: Source = "compile") -> ReactCheck:
    diagnostic = ReactDiagnostic(None, source, "fatal", rule, message)
    return ReactCheck(False, None, None, False, (diagnostic,))


def _diagnostic(item: Any) -> ReactDiagnostic:
    line = item.get("line")
    return ReactDiagnostic(
        line=line if isinstance(line, int) and line >= 1 else None,
        source=item.get("source")
        if item.get("source") in ("compile", "lint", "render")
        else "render",
        severity=item.get("severity")
        if item.get("severity") in ("fatal", "error", "warning")
        else "error",
        rule=item.get("rule") if isinstance(item.get("rule"), str) else None,
        message=str(item.get("message", ""))[:1000],
    )


def _parse_check(reply: dict[str, Any]) -> ReactCheck:
    if not reply.get("ok"):
        return _failed("worker", f"the worker refused the code: {reply.get('error')}")
    return ReactCheck(
        compiled=reply.get("compiled") is True,
        rendered=reply.get("rendered") if isinstance(reply.get("rendered"), bool) else None,
        blank=reply.get("blank") if isinstance(reply.get("blank"), bool) else None,
        is_component=reply.get("is_component") is True,
        diagnostics=tuple(
            _diagnostic(d) for d in reply.get("diagnostics", ()) if isinstance(d, dict)
        ),
        unknown_imports=tuple(str(m) for m in reply.get("unknown_imports", ())),
        timings_ms={str(k): float(v) for k, v in (reply.get("timings_ms") or {}).items()},
        text=reply.get("text") if isinstance(reply.get("text"), str) else None,
    )


def _check_one(
    worker: NodeWorker, code: str, render: bool, lint: bool, timeout_s: float
) -> ReactCheck:
    if len(code) > MAX_CODE_CHARS:
        return _failed("too-long", f"code has {len(code)} characters; at most {MAX_CODE_CHARS}")
    payload = {"op": "check", "code": code, "render": render, "lint": lint}
    payload["timeout_ms"] = max(1, int(timeout_s * 1000))
    try:
        reply = worker.request(payload, timeout_s=timeout_s + 10.0)
    except WorkerError as exc:
        return _failed("worker", f"the check did not finish: {exc}", source="render")
    return _parse_check(reply)


def check_components(
    codes: Sequence[str],
    *,
    render: bool = True,
    lint: bool = True,
    timeout_s: float = 2.0,
    pool: WorkerPool | None = None,
) -> list[ReactCheck]:
    """Compile, lint and (``render=True``) render each code; one :class:`ReactCheck` each.

    ``timeout_s`` bounds each render (a longer one fails with a "timeout" diagnostic); a worker
    that dies or hangs on an item is restarted and the item fails with rule "worker". Codes
    that are not str raise TypeError, empty ones ValueError; longer than
    :data:`MAX_CODE_CHARS` fail without being sent. ``pool`` defaults to :func:`default_pool`.
    """
    items = _validate(codes, "check_components")
    check_timeout("check_components: timeout_s", timeout_s)
    workers = pool or default_pool()
    return workers.map(lambda w, i: _check_one(w, items[i], render, lint, timeout_s), len(items))


def _shoot_one(
    worker: NodeWorker, code: str, width: int, height: int, timeout_s: float
) -> Screenshot:
    payload = {"op": "screenshot", "code": code, "width": width, "height": height}
    payload["timeout_ms"] = max(1, int(timeout_s * 1000))
    try:
        reply = worker.request(payload, timeout_s=timeout_s * 3 + 30.0)
    except WorkerError as exc:
        return Screenshot(None, None, None, f"the worker failed: {exc}")
    if not reply.get("ok"):
        return Screenshot(None, None, None, str(reply.get("error")))
    png = reply.get("png_base64")
    return Screenshot(
        png=base64.b64decode(png) if isinstance(png, str) else None,
        rendered=reply.get("rendered") if isinstance(reply.get("rendered"), bool) else None,
        blank=reply.get("blank") if isinstance(reply.get("blank"), bool) else None,
        reason="" if isinstance(png, str) else str(reply.get("reason", "no screenshot")),
    )


def screenshot_components(
    codes: Sequence[str],
    *,
    width: int = 1280,
    height: int = 800,
    timeout_s: float = 5.0,
    pool: WorkerPool | None = None,
) -> list[Screenshot]:
    """A ``width`` x ``height`` PNG of each component in headless Chromium (the paper's
    1280x800 default), each on a fresh file:// page; the browser starts on first use."""
    items = _validate(codes, "screenshot_components")
    check_timeout("screenshot_components: timeout_s", timeout_s)
    workers = pool or default_pool()
    return workers.map(lambda w, i: _shoot_one(w, items[i], width, height, timeout_s), len(items))
