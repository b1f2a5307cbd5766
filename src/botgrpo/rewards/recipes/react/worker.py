"""Long-lived Node workers (``node/worker.js``) in the sandbox, one JSON line per request.

A :class:`NodeWorker` starts ``node worker.js`` through
:func:`botgrpo.rewards.sandbox.spawn_sandboxed` on first use, waits for its "ready"
line, and then answers requests one at a time. A request that overruns its deadline, or a
worker that dies (a crash, an escape that called ``process.exit``), kills the whole sandbox;
the next request starts a fresh one. A :class:`WorkerPool` holds one worker per core and hands
items to idle workers.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import secrets
import selectors
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from botgrpo.rewards.sandbox.spawn import (
    SandboxedProcess,
    SpawnConfig,
    isolation_modes,
    spawn_sandboxed,
)

__all__ = [
    "NODE_DIR",
    "NodeWorker",
    "WorkerError",
    "WorkerPool",
    "WorkerStartError",
    "require_node_project",
]

NODE_DIR = Path(__file__).resolve().with_name("node")
"""The worker's Node project (package.json, package-lock.json, worker.js, lib/)."""
MAX_LINE_BYTES = 64 << 20
T = TypeVar("T")


class WorkerError(RuntimeError):
    """The worker could not answer this request (it died or overran its deadline)."""


class WorkerStartError(RuntimeError):
    """The worker could not be started in any isolation mode (a set-up problem, not an item's)."""


class _Died(WorkerError):
    """The worker's process ended (or broke its protocol) during a request."""


def require_node_project() -> tuple[str, Path]:
    """The node executable and the worker script; a clear error when either is missing."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError(
            "React rewards need Node.js >= 18 on PATH (Debian: apt-get install nodejs)"
        )
    if not (NODE_DIR / "node_modules" / "eslint").is_dir():
        raise RuntimeError(
            f"the React worker's npm packages are not installed; run `npm ci --prefix {NODE_DIR}` "
            "(`make test` does it)"
        )
    return os.path.realpath(node), NODE_DIR / "worker.js"


class _Lines:
    """Reads newline-terminated lines from a pipe with a deadline."""

    def __init__(self, stream: Any) -> None:
        self._fd = stream.fileno()
        os.set_blocking(self._fd, False)
        self._buffer = bytearray()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._fd, selectors.EVENT_READ)

    def readline(self, deadline: float) -> bytes | None:
        """The next line (without newline), None at the deadline; raises EOFError at the end."""
        while True:
            cut = self._buffer.find(b"\n")
            if cut >= 0:
                line = bytes(self._buffer[:cut])
                del self._buffer[: cut + 1]
                return line
            if len(self._buffer) > MAX_LINE_BYTES:
                raise WorkerError(f"the worker wrote a line over {MAX_LINE_BYTES} bytes")
            left = deadline - time.monotonic()
            if left <= 0 or not self._selector.select(left):
                return None
            try:
                chunk = os.read(self._fd, 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                raise EOFError
            self._buffer += chunk

    def close(self) -> None:
        self._selector.close()


class NodeWorker:
    """One sandboxed ``node worker.js`` process, started on first use and restarted as needed.

    Args:
        startup_timeout_s: seconds allowed for start-up (loading ESLint, bundling React).
        max_requests: requests served before the worker is recycled (bounds slow leaks).
        spawn: limits of the sandbox (:class:`SpawnConfig`); the Node project is made readable.
    """

    def __init__(
        self,
        *,
        startup_timeout_s: float = 60.0,
        max_requests: int = 2000,
        spawn: SpawnConfig | None = None,
    ) -> None:
        self.startup_timeout_s = startup_timeout_s
        self.max_requests = max_requests
        self._spawn = spawn
        self._proc: SandboxedProcess | None = None
        self._lines: _Lines | None = None
        self._served = 0
        self.starts = 0
        """How many times a process was started (1 + restarts)."""
        self.startup_s: float | None = None
        """Seconds the last start took (spawn until the "ready" line)."""

    def _config(self) -> SpawnConfig:
        base = self._spawn or SpawnConfig()
        paths = {*base.readable_paths, str(NODE_DIR)}
        env = dict(base.extra_env)
        chromium = os.environ.get("BOTGRPO_CHROMIUM")
        if chromium:  # a browser elsewhere than /usr/bin
            env["BOTGRPO_CHROMIUM"] = chromium
            paths.add(os.path.dirname(os.path.realpath(chromium)))
        return dataclasses.replace(base, readable_paths=tuple(sorted(paths)), extra_env=env)

    @property
    def isolation(self) -> str | None:
        """The isolation mode the running process got ("namespaces", "userns" or "rlimits";
        None when none runs). In "rlimits" the worker has the host's network and filesystem
        view: see docs/rewards/react.md."""
        return self._proc.isolation if self._proc is not None else None

    def start(self) -> None:
        """Start the process now (a no-op when it runs); tries each isolation mode in turn."""
        if self._proc is not None and self._proc.alive():
            return
        self.stop()
        node, script = require_node_project()
        config = self._config()
        failures = []
        for mode in isolation_modes(config.isolation):
            begin = time.monotonic()
            proc = spawn_sandboxed(
                [node, "--max-old-space-size=2048", str(script)], config, mode=mode
            )
            lines = _Lines(proc.stdout)
            if self._ready(lines, begin + self.startup_timeout_s):
                self._proc, self._lines, self._served = proc, lines, 0
                self.starts += 1
                self.startup_s = time.monotonic() - begin
                return
            lines.close()
            proc.kill()
            report = proc.last_report
            failures.append(f"{mode}: {report.get('setup_error') or 'no ready line in time'}")
        raise WorkerStartError("the React worker did not start (" + "; ".join(failures) + ")")

    @staticmethod
    def _ready(lines: _Lines, deadline: float) -> bool:
        try:
            line = lines.readline(deadline)
            return bool(line) and json.loads(line).get("ready") is True
        except (EOFError, ValueError, AttributeError):
            return False

    def stop(self) -> None:
        """Kill the process (and everything it started)."""
        if self._lines is not None:
            self._lines.close()
        if self._proc is not None:
            self._proc.kill()
        self._proc, self._lines = None, None

    def request(self, payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one request; its reply (a dict with "ok"). Raises :class:`WorkerError` when the
        worker dies or overruns ``timeout_s`` (it is then stopped and restarts on next use),
        :class:`WorkerStartError` when it cannot be started at all.

        A process that had served earlier requests may die of one of them (a memory bomb that
        outlives its reply): when it dies on this request, the request is sent once more to a
        fresh process, and only a death there is this request's own (so the wait can reach
        twice ``timeout_s``). A fresh process that dies is not retried."""
        if self._served >= self.max_requests:
            self.stop()
        self.start()
        inherited = self._served > 0
        try:
            return self._send(payload, timeout_s)
        except _Died:
            if not inherited:
                raise
            return self._send(payload, timeout_s)

    def _send(self, payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """One try of :meth:`request` on the current (started) process."""
        self.start()
        assert self._proc is not None and self._lines is not None
        rid = secrets.token_hex(8)
        data = (json.dumps({**payload, "id": rid}) + "\n").encode()
        deadline = time.monotonic() + timeout_s
        try:
            self._proc.stdin.write(data)
            self._proc.stdin.flush()
            while True:
                line = self._lines.readline(deadline)
                if line is None:
                    raise WorkerError(f"no answer within {timeout_s:g} s; the worker was restarted")
                reply = json.loads(line)
                if isinstance(reply, dict) and reply.get("id") == rid:
                    self._served += 1
                    return reply
        except (EOFError, BrokenPipeError, OSError, ValueError) as exc:
            self.stop()
            raise _Died(f"the worker died ({type(exc).__name__}); it will be restarted") from exc
        except WorkerError:
            self.stop()
            raise

    def __enter__(self) -> NodeWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class WorkerPool:
    """``n_workers`` :class:`NodeWorker`, each serving one item at a time.

    ``n_workers`` defaults to the CPU count. Workers start on first use (in parallel).
    """

    def __init__(self, n_workers: int | None = None, **worker_options: Any) -> None:
        n = n_workers if n_workers is not None else (os.cpu_count() or 1)
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"WorkerPool: n_workers must be an int >= 1, got {n_workers!r}")
        self.workers = [NodeWorker(**worker_options) for _ in range(n)]
        self._idle: queue.SimpleQueue[NodeWorker] = queue.SimpleQueue()
        for worker in self.workers:
            self._idle.put(worker)

    def map(self, fn: Callable[[NodeWorker, int], T], n_items: int) -> list[T]:
        """``fn(worker, i)`` for i in range(n_items), each on an idle worker; results in order."""
        if n_items == 0:
            return []

        def run(i: int) -> T:
            worker = self._idle.get()
            try:
                return fn(worker, i)
            finally:
                self._idle.put(worker)

        with ThreadPoolExecutor(min(len(self.workers), n_items), "botgrpo-react") as pool:
            return list(pool.map(run, range(n_items)))

    def close(self) -> None:
        """Stop every worker."""
        for worker in self.workers:
            worker.stop()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
