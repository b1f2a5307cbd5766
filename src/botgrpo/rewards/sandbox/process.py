"""One sandboxed process: start the supervisor, feed and drain its pipes, collect its report.

:func:`run_once` is the mechanism behind :mod:`botgrpo.rewards.sandbox.run` (which owns the
policy: isolation-mode fallback and concurrency; :mod:`botgrpo.rewards.sandbox.classify` names
the outcome). It writes the candidate to ``solution.py`` in a fresh temporary directory, starts
``supervisor.py`` in a new session with a config that names the isolation mode, the
interpreter, the resource limits and a fresh unused uid (when we are root), pumps stdin, stdout,
stderr, the supervisor's status pipe and the test harness's report pipe without blocking, keeps
only bounded prefixes, asks the supervisor to kill the program when an output bound is exceeded,
kills the supervisor's whole process group if it overruns, and removes the directory.
"""

from __future__ import annotations

import functools
import grp
import json
import marshal
import os
import pwd
import resource
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botgrpo.rewards.sandbox import bootstrap, seccomp
from botgrpo.rewards.sandbox.config import SandboxConfig, SandboxError

SUPERVISOR = Path(__file__).resolve().with_name("supervisor.py")
TMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
"""Directories replaced by an empty, writable, size-limited tmpfs (with namespaces)."""
HIDDEN_DIRS = ("/root", "/home", "/run", "/mnt", "/media", "/srv")
"""Directories replaced by an empty read-only tmpfs (with namespaces)."""
PROGRAM_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONIOENCODING": "utf-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
"""The program's whole environment, plus HOME and TMPDIR (its working directory)."""
SUPERVISOR_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
BACKSTOP_S = 10.0
"""Grace beyond the wall-clock limit before the supervisor itself is killed."""
_STATUS_LIMIT = 1 << 20
_REPORT_LIMIT = 4 << 20


class SetupFailed(Exception):
    """The isolation mode could not be set up here; the program did not run.

    ``refused`` is True when the kernel refused it (the mode will not work in this process).
    """

    def __init__(self, message: str, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


@dataclass(frozen=True)
class Job:
    """One program: its solution.py, the bootstrap mode, its stdin (or its test payload)."""

    code: str
    mode: str
    stdin: bytes = b""
    tests: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class RawRun:
    """What one supervisor run left behind, before classification."""

    report: dict
    """The supervisor's report ({} if it never wrote one)."""
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    overflow: str
    """"stdout" or "stderr" if that stream exceeded its bound (the program was killed)."""
    supervisor_killed: bool
    """Whether the supervisor overran its backstop and was killed with its process group."""
    supervisor_rc: int | None
    wall_s: float
    reports: list[dict] = field(default_factory=list)
    """The test harness's genuine (nonce-carrying) report records."""


def run_once(mode: str, job: Job, config: SandboxConfig) -> RawRun:
    """Run ``job`` once in isolation mode ``mode``; raises :class:`SetupFailed` if it cannot."""
    workdir = tempfile.mkdtemp(prefix="botgrpo-sandbox-")
    try:
        Path(workdir, bootstrap.SOLUTION_FILE).write_text(job.code, encoding="utf-8")
        return _launch(mode, job, config, workdir)
    finally:
        _remove_tree(workdir)


def _launch(mode: str, job: Job, config: SandboxConfig, workdir: str) -> RawRun:
    """Start the supervisor on ``workdir`` and pump its pipes until it is done."""
    status_r, status_w = os.pipe()
    report_r, report_w = os.pipe()
    stdin, nonce = job.stdin, ""
    if job.tests is not None:
        nonce = secrets.token_hex(16)
        stdin = json.dumps({**job.tests, "nonce": nonce, "report_fd": report_w}).encode()
    spec = _supervisor_spec(mode, job, config, workdir, status_w, report_w)
    command = [sys.executable, "-I", "-S", str(SUPERVISOR), marshal.dumps(spec).hex()]
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(status_w, report_w) if nonce else (status_w,),
            start_new_session=True,
            env=SUPERVISOR_ENV,
            cwd="/",
        )
    except BaseException:
        for fd in (status_r, report_r):
            os.close(fd)
        raise
    finally:
        os.close(status_w)
        os.close(report_w)
    captured = _pump(proc, stdin, status_r, report_r, config)
    report = _parse_status(captured.status.data)
    if "setup_error" in report:
        raise SetupFailed(str(report["setup_error"]).strip(), bool(report.get("refused")))
    return RawRun(
        report=report,
        stdout=bytes(captured.stdout.data),
        stderr=bytes(captured.stderr.data),
        stdout_truncated=captured.stdout.overflowed,
        stderr_truncated=captured.stderr.overflowed,
        overflow=captured.overflow,
        supervisor_killed=captured.supervisor_killed,
        supervisor_rc=captured.supervisor_rc,
        wall_s=time.monotonic() - start,
        reports=_parse_reports(bytes(captured.report.data), nonce) if nonce else [],
    )


def _supervisor_spec(
    mode: str, job: Job, config: SandboxConfig, workdir: str, status_fd: int, report_fd: int
) -> dict[str, Any]:
    """The supervisor's config (see supervisor.py)."""
    python, paths = _interpreter(config.python)
    uid, gid = _fresh_ids()
    argv = [python, "-s", "-B", "-c", _bootstrap_source(), job.mode]
    if mode == "rlimits":
        argv.append("--block-network")
    cpu, memory = config.cpu_limit_s, config.memory_mb << 20
    files = min(config.max_open_files, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    return {
        "isolation": mode,
        "uid": uid,
        "gid": gid,
        "workdir": workdir,
        "python_paths": list(paths),
        "argv": argv,
        "env": {**PROGRAM_ENV, "HOME": workdir, "TMPDIR": workdir, **config.extra_env},
        "timeout_s": config.timeout_s,
        "rlimits": {
            "AS": [memory, memory],
            "CPU": [cpu, cpu + 1],
            "FSIZE": [config.max_file_bytes, config.max_file_bytes],
            "NOFILE": [files, files],
            "CORE": [0, 0],
        },
        "max_processes": config.max_processes,
        "tmpfs_mb": config.tmpfs_mb,
        "tmp_dirs": list(TMP_DIRS),
        "hide_dirs": [*HIDDEN_DIRS, *config.hide_paths],
        "status_fd": status_fd,
        "keep_fds": [report_fd] if job.tests is not None else [],
        "seccomp": seccomp_program(config.seccomp),
    }


# ---------------------------------------------------------------------------------------------
# The system-call filter: compiled by seccomp.py, checked here once per process


#: Exit statuses of the supervisor's probe that settle the question for this machine.
_SECCOMP_PROBE_REFUSED = (3, 4)


@functools.cache
def seccomp_probe() -> str:
    """ "" when this machine installs the filter in a process, else why not (tried once, in a
    throwaway child, since a filter cannot be removed). A probe that ends any other way (a
    signal, a timeout) answers nothing: SandboxError, and the next run asks again."""
    try:
        program = seccomp.filter_program()
    except seccomp.SeccompUnavailable as err:
        return str(err)
    command = [sys.executable, "-I", "-S", str(SUPERVISOR), "--seccomp-probe", program.hex()]
    try:
        proc = subprocess.run(
            command, capture_output=True, text=True, env=SUPERVISOR_ENV, cwd="/", timeout=60
        )
    except subprocess.TimeoutExpired:
        raise SandboxError(
            "checking whether this machine accepts seccomp filters timed out"
        ) from None
    if proc.returncode == 0:
        return ""
    why = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
    if proc.returncode in _SECCOMP_PROBE_REFUSED:
        return why
    raise SandboxError(
        f"checking whether this machine accepts seccomp filters failed (exit status "
        f"{proc.returncode}{': ' + why if why else ''}); the program did not run"
    )


_SECCOMP_WARNED: set[str] = set()


def seccomp_program(requested: bool) -> bytes | None:
    """The filter bytes a sandboxed program should run under: None when not ``requested``, or
    when this machine refuses seccomp (then a one-time warning says so, and results list
    "seccomp" in ``unavailable`` rather than in ``protections``)."""
    if not requested:
        return None
    why = seccomp_probe()
    if not why:
        return seccomp.filter_program()
    if why not in _SECCOMP_WARNED:
        _SECCOMP_WARNED.add(why)
        warnings.warn(
            f"the sandbox runs programs without its system-call filter on this machine ({why}); "
            "see docs/rewards/sandbox.md",
            RuntimeWarning,
            stacklevel=3,
        )
    return None


def seccomp_unavailable_reason() -> str:
    """Why this machine runs without the filter ("" when it has it)."""
    return seccomp_probe()


@functools.cache
def _bootstrap_source() -> str:
    return Path(bootstrap.__file__).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=8)
def _interpreter(python: str | None) -> tuple[str, tuple[str, ...]]:
    """The interpreter to exec and the directories it needs to stay readable."""
    if python is None:
        executable = sys.executable
        prefixes = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    else:
        executable = shutil.which(python) or python
        if not os.path.isfile(executable):
            raise ValueError(f"SandboxConfig.python: no interpreter at {python!r}")
        prefixes = _query_prefixes(executable)
    paths = {os.path.realpath(p) for p in prefixes}
    paths.add(os.path.dirname(os.path.realpath(executable)))
    paths.discard("/")
    outermost = {p for p in paths if not any(p != q and p.startswith(q + "/") for q in paths)}
    return os.path.abspath(executable), tuple(sorted(outermost))


def _query_prefixes(executable: str) -> list[str]:
    """sys.prefix and sys.base_prefix of another (trusted, caller-chosen) interpreter."""
    query = "import json, sys; print(json.dumps([sys.prefix, sys.base_prefix]))"
    command = [executable, "-I", "-c", query]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
        return json.loads(done.stdout)
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        raise ValueError(f"SandboxConfig.python: {executable!r} is not a working Python") from exc


def _fresh_ids() -> tuple[int | None, int | None]:
    """An unused uid and gid for the program when we are root (else None, None)."""
    if os.geteuid() != 0:
        return None, None
    uid = _fresh_id("/proc/self/uid_map", pwd.getpwuid)
    return uid, _fresh_id("/proc/self/gid_map", grp.getgrgid)


def _fresh_id(map_path: str, lookup: Callable[[int], object]) -> int:
    """A random id from the upper half of the largest range this namespace maps."""
    with open(map_path) as handle:
        ranges = [tuple(map(int, line.split())) for line in handle if line.strip()]
    start, _, count = max(ranges, key=lambda r: r[2])
    low, high = start + count // 2, start + count - 2
    for _ in range(32):
        candidate = secrets.randbelow(max(high - low, 1)) + low
        try:
            lookup(candidate)
        except KeyError:
            return candidate
    raise SetupFailed(f"no unused id found in {map_path}")


def _remove_tree(path: str) -> None:
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        pass
    except OSError:  # the program may have left directories without permissions
        for root, dirs, _ in os.walk(path):
            for name in dirs:
                with suppress(OSError):
                    os.chmod(os.path.join(root, name), 0o700)
        shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Pumping the pipes


class _Sink:
    """Keeps the first ``limit`` bytes read from one pipe and counts the rest."""

    def __init__(self, name: str, limit: int) -> None:
        self.name, self.limit = name, limit
        self.data = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    @property
    def overflowed(self) -> bool:
        return self.total > self.limit


@dataclass
class _Captured:
    stdout: _Sink
    stderr: _Sink
    status: _Sink
    report: _Sink
    overflow: str = ""
    supervisor_killed: bool = False
    supervisor_rc: int | None = None


class _StdinFeeder:
    """Writes the program's stdin without blocking, as the pipe drains."""

    def __init__(self, proc: subprocess.Popen, data: bytes, selector: selectors.BaseSelector):
        self.pipe, self.view, self.selector = proc.stdin, memoryview(data), selector
        assert self.pipe is not None
        self.fd = self.pipe.fileno()
        if self.view:
            os.set_blocking(self.fd, False)
            selector.register(self.fd, selectors.EVENT_WRITE)
        else:
            self.pipe.close()

    def write(self) -> None:
        try:
            self.view = self.view[os.write(self.fd, self.view[:65536]) :]
        except BlockingIOError:
            return
        except OSError:  # the program closed its stdin or exited
            self.view = self.view[:0]
        if not self.view:
            self.close()

    def close(self) -> None:
        if not self.pipe.closed:
            with suppress(KeyError, ValueError):
                self.selector.unregister(self.fd)
            with suppress(OSError):
                self.pipe.close()


def _pump(
    proc: subprocess.Popen, stdin: bytes, status_r: int, report_r: int, config: SandboxConfig
) -> _Captured:
    """Feed stdin and drain every pipe until the supervisor is done, enforcing the bounds."""
    assert proc.stdout is not None and proc.stderr is not None
    limit = config.max_output_bytes
    sinks = {
        proc.stdout.fileno(): _Sink("stdout", limit),
        proc.stderr.fileno(): _Sink("stderr", limit),
        status_r: _Sink("status", _STATUS_LIMIT),
        report_r: _Sink("report", _REPORT_LIMIT),
    }
    captured = _Captured(*sinks.values())
    selector = selectors.DefaultSelector()
    for fd in sinks:
        os.set_blocking(fd, False)
        selector.register(fd, selectors.EVENT_READ)
    feeder = _StdinFeeder(proc, stdin, selector)
    try:
        _pump_loop(proc, selector, sinks, feeder, captured, config)
    finally:
        feeder.close()
        selector.close()
        for fd in (status_r, report_r):
            os.close(fd)
        proc.stdout.close()
        proc.stderr.close()
        captured.supervisor_rc = _reap_supervisor(proc)
    return captured


def _pump_loop(
    proc: subprocess.Popen,
    selector: selectors.BaseSelector,
    sinks: dict[int, _Sink],
    feeder: _StdinFeeder,
    captured: _Captured,
    config: SandboxConfig,
) -> None:
    open_fds = set(sinks)
    deadline = time.monotonic() + config.timeout_s + BACKSTOP_S
    while open_fds:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            if captured.supervisor_killed:
                return  # something outside the sandbox holds a pipe open: give up on it
            _signal_group(proc, signal.SIGKILL)
            captured.supervisor_killed, deadline = True, time.monotonic() + 2.0
            continue
        for key, _ in selector.select(remaining):
            if key.fd == feeder.fd:
                feeder.write()
                continue
            try:
                chunk = os.read(key.fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                selector.unregister(key.fd)
                open_fds.discard(key.fd)
                continue
            sink = sinks[key.fd]
            sink.feed(chunk)
            if sink.overflowed and sink.name in ("stdout", "stderr") and not captured.overflow:
                captured.overflow = sink.name
                with suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)  # the supervisor kills the program


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _reap_supervisor(proc: subprocess.Popen) -> int:
    try:
        return proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        return proc.wait()


def _parse_status(raw: bytes | bytearray) -> dict:
    """The supervisor's report (only the supervisor holds the status pipe)."""
    try:
        report = marshal.loads(bytes(raw)) if raw else {}
    except (EOFError, ValueError, TypeError):
        return {}
    return report if isinstance(report, dict) else {}


def _parse_reports(raw: bytes, nonce: str) -> list[dict]:
    """Report lines that carry the nonce (the candidate cannot forge them casually)."""
    records = []
    for line in raw.split(b"\n"):
        prefix, _, body = line.partition(b" ")
        if prefix != nonce.encode():
            continue
        with suppress(ValueError):
            record = json.loads(body)
            if isinstance(record, dict):
                records.append(record)
    return records
