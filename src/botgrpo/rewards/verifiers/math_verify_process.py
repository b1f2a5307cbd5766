"""math-verify in a child process, so that a check off the main thread has a timeout too.

math-verify guards itself with ``signal.alarm``, which only works in the main thread; in any
other thread (TRL's async reward loop, verl's reward workers, a thread pool) a short input such
as ``9^{9^9}`` would run for minutes holding the GIL and freeze the whole process. There the
check runs in one child process instead (``python -m`` this module, started on first use and
reused; started as a module, never by re-running the caller's script), which applies the same
timeout with its own alarm; if the child overruns it by ``_GRACE_S`` (a long C-level big-int
operation does not see the alarm) it is killed and a new one is started on the next call.
Calls from several threads take turns, as they would under the GIL.

Protocol: one JSON line per request ``{"prediction", "gold", "float_rounding", "timeout"}``;
one per reply ``{"correct", "method"}``; the child writes ``{"ready": true}`` once imported.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
from pathlib import Path

__all__ = ["verify_in_process"]

#: Seconds the child may take to start (it imports sympy and math-verify).
_START_S = 120.0
#: Seconds past the check's timeout before the child is killed.
_GRACE_S = 2.0

_lock = threading.Lock()
_child: subprocess.Popen[str] | None = None


def _read_line(proc: subprocess.Popen[str], seconds: float) -> str | None:
    """The child's next line, or None when none came within ``seconds`` or it exited."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], seconds)
    if not ready:
        return None
    line = proc.stdout.readline()
    return line or None


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()


def _start() -> subprocess.Popen[str]:
    root = str(Path(__file__).resolve().parents[3])  # the folder holding the botgrpo package
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    proc = subprocess.Popen(
        [sys.executable, "-m", __name__],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    line = _read_line(proc, _START_S)
    if line is None or not json.loads(line).get("ready"):
        _stop(proc)
        raise RuntimeError(
            f"the math-verify child process did not start within {_START_S:g} s "
            f"({sys.executable} -m {__name__}); check that botgrpo imports in a fresh interpreter"
        )
    return proc


def verify_in_process(
    prediction: str, gold: str, float_rounding: int, timeout: int
) -> tuple[bool, str]:
    """:func:`~botgrpo.rewards.verifiers.math_verify_check.verify_answer` in the child process,
    bounded by ``timeout`` seconds from any thread: (correct, method), method "math_verify",
    "error" or "timeout"."""
    global _child
    request = {
        "prediction": prediction,
        "gold": gold,
        "float_rounding": float_rounding,
        "timeout": timeout,
    }
    with _lock:
        if _child is None or _child.poll() is not None:
            _child = _start()
        proc = _child
        assert proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
        except OSError:  # the child died between calls
            _stop(proc)
            _child = None
            return False, "error"
        line = _read_line(proc, timeout + _GRACE_S)
        if line is None:
            timed_out = proc.poll() is None
            _stop(proc)
            _child = None
            return False, "timeout" if timed_out else "error"
    reply = json.loads(line)
    return bool(reply["correct"]), str(reply["method"])


def _serve() -> None:
    """The child: answer requests from stdin until it closes."""
    from math_verify.errors import TimeoutException

    from botgrpo.rewards.verifiers.math_verify_check import verify_answer

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        try:
            ok, method = verify_answer(
                req["prediction"], req["gold"], req["float_rounding"], req["timeout"]
            )
        except TimeoutException:
            ok, method = False, "timeout"
        print(json.dumps({"correct": ok, "method": method}), flush=True)


if __name__ == "__main__":
    _serve()
