"""Start a long-lived program (a Node worker, a browser) under the sandbox's protections.

:func:`botgrpo.rewards.sandbox.run_python` runs one program to completion; a service such as
the React checking worker must instead stay up and talk over its pipes. :func:`spawn_sandboxed`
starts any executable through the same supervisor (``supervisor.py``): private mount,
network, PID, IPC and UTS namespaces, a fresh unprivileged uid, ``no_new_privs``, a read-only
filesystem with only a private tmpfs writable, hidden home directories, resource limits, no
network; when the process or its supervisor dies, every process it started dies with it.

Differences from one-shot runs: the wall-clock limit is a lifetime (:attr:`SpawnConfig.lifetime_s`),
there is no CPU-time limit by default, and memory is bounded with ``RLIMIT_DATA`` (heap and
other private writable memory) rather than ``RLIMIT_AS``: V8 and Chromium reserve far more
address space than they use, which an address-space limit would refuse.

>>> with spawn_sandboxed(["/bin/cat"]) as proc:
...     _ = proc.stdin.write(b"echo\\n"); proc.stdin.flush()
...     proc.stdout.readline()
b'echo\\n'
"""

from __future__ import annotations

import marshal
import os
import resource
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import IO, Any

from botgrpo.rewards.sandbox.process import (
    HIDDEN_DIRS,
    PROGRAM_ENV,
    SUPERVISOR,
    SUPERVISOR_ENV,
    TMP_DIRS,
    _fresh_ids,
    _parse_status,
    _remove_tree,
    seccomp_program,
    seccomp_unavailable_reason,
)
from botgrpo.rewards.sandbox.run import _modes_to_try

__all__ = ["SandboxedProcess", "SpawnConfig", "isolation_modes", "spawn_sandboxed"]


@dataclass(frozen=True)
class SpawnConfig:
    """Limits of one long-lived sandboxed program."""

    lifetime_s: float = 24 * 3600.0
    """The program (and all it started) is killed this many seconds after its start."""
    memory_mb: int | None = 4096
    """RLIMIT_DATA of each process in MiB (private writable memory); None: no limit."""
    cpu_time_s: float | None = None
    """RLIMIT_CPU of each process in seconds; None: no limit (a service runs for long)."""
    max_processes: int = 512
    """Most processes and threads at once (RLIMIT_NPROC under the fresh uid)."""
    max_open_files: int = 1024
    """RLIMIT_NOFILE of each process."""
    max_file_bytes: int = 64 << 20
    """Largest file the program may write (RLIMIT_FSIZE)."""
    tmpfs_mb: int = 256
    """Size of each private tmpfs: the working directory (HOME, TMPDIR), /tmp, /dev/shm."""
    isolation: str = "auto"
    """As :attr:`botgrpo.rewards.sandbox.SandboxConfig.isolation`."""
    readable_paths: tuple[str, ...] = ()
    """Directories the program must read although they may sit under a hidden directory
    (e.g. its node_modules under /root); the executable's directory is added."""
    hide_paths: tuple[str, ...] = ()
    """Further absolute directories hidden behind an empty tmpfs."""
    extra_env: Mapping[str, str] = field(default_factory=dict)
    """Variables added to the minimal environment (PATH, LANG, HOME and TMPDIR)."""
    seccomp: bool = True
    """As :attr:`botgrpo.rewards.sandbox.SandboxConfig.seccomp`: the program and everything
    it starts (Chromium included) run under the system-call filter."""

    def __post_init__(self) -> None:
        if not self.lifetime_s > 0:
            raise ValueError(f"SpawnConfig.lifetime_s must be > 0, got {self.lifetime_s}")
        for name in ("max_processes", "max_open_files", "tmpfs_mb"):
            if getattr(self, name) < 1:
                raise ValueError(f"SpawnConfig.{name} must be >= 1")
        if self.memory_mb is not None and self.memory_mb < 1:
            raise ValueError("SpawnConfig.memory_mb must be >= 1 or None")
        for path in (*self.readable_paths, *self.hide_paths):
            if not os.path.isabs(path):
                raise ValueError(f"SpawnConfig: paths must be absolute, got {path!r}")
        if not isinstance(self.seccomp, bool):
            raise ValueError(f"SpawnConfig.seccomp must be True or False, got {self.seccomp!r}")
        object.__setattr__(self, "readable_paths", tuple(self.readable_paths))
        object.__setattr__(self, "hide_paths", tuple(self.hide_paths))
        object.__setattr__(self, "extra_env", MappingProxyType(dict(self.extra_env)))


class SandboxedProcess:
    """A running sandboxed program: ``stdin`` and ``stdout`` are its pipes (binary)."""

    def __init__(
        self,
        proc: subprocess.Popen,
        workdir: str,
        status_fd: int,
        mode: str,
        unavailable: tuple[str, ...] = (),
    ) -> None:
        self._proc = proc
        self._workdir = workdir
        self._status_fd = status_fd
        self.isolation = mode
        """The isolation mode it runs in."""
        self.unavailable = unavailable
        """Protections the config asked for that this machine refused, as "name: why" (as
        :attr:`botgrpo.rewards.sandbox.SandboxResult.unavailable`)."""
        self._report: dict = {}

    @property
    def stdin(self) -> IO[bytes]:
        """The program's standard input."""
        assert self._proc.stdin is not None
        return self._proc.stdin

    @property
    def stdout(self) -> IO[bytes]:
        """The program's standard output."""
        assert self._proc.stdout is not None
        return self._proc.stdout

    @property
    def pid(self) -> int:
        """PID of the supervisor (the session leader of the program's process group)."""
        return self._proc.pid

    def alive(self) -> bool:
        """Whether the supervisor (and so the program) is still running."""
        return self._proc.poll() is None

    @property
    def last_report(self) -> dict:
        """The supervisor's report ("isolation", "protections", "wait_status"), read once the
        program ended ({} before, or when it was killed and left none); a "setup_error" entry
        says why the sandbox could not start."""
        return self._report

    def _collect_report(self) -> None:
        if self._status_fd < 0:
            return
        os.set_blocking(self._status_fd, False)
        chunks = []
        with suppress(BlockingIOError, OSError):
            while chunk := os.read(self._status_fd, 65536):
                chunks.append(chunk)
        os.close(self._status_fd)
        self._status_fd = -1
        self._report = _parse_status(b"".join(chunks)) if chunks else {}

    def kill(self) -> None:
        """Kill the program and everything it started at once, then clean up (idempotent)."""
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        with suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=10)
        for stream in (self._proc.stdin, self._proc.stdout):
            with suppress(OSError):
                if stream is not None:
                    stream.close()
        self._collect_report()
        _remove_tree(self._workdir)

    def close(self, timeout_s: float = 5.0) -> None:
        """Close the program's stdin and give it ``timeout_s`` to exit (then kill it); its
        supervisor's report is then in :attr:`last_report`."""
        with suppress(OSError):
            self.stdin.close()
        with suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=timeout_s)
        self.kill()

    def __enter__(self) -> SandboxedProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _spec(argv: list[str], cfg: SpawnConfig, mode: str, workdir: str, status_fd: int) -> dict:
    uid, gid = _fresh_ids()
    files = min(cfg.max_open_files, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    rlimits: dict[str, list[int]] = {
        "FSIZE": [cfg.max_file_bytes, cfg.max_file_bytes],
        "NOFILE": [files, files],
        "CORE": [0, 0],
    }
    if cfg.memory_mb is not None:
        rlimits["DATA"] = [cfg.memory_mb << 20, cfg.memory_mb << 20]
    if cfg.cpu_time_s is not None:
        cpu = int(-(-cfg.cpu_time_s // 1))
        rlimits["CPU"] = [cpu, cpu + 1]
    readable = {os.path.realpath(p) for p in cfg.readable_paths}
    readable.add(os.path.dirname(os.path.realpath(argv[0])))
    readable.discard("/")
    return {
        "isolation": mode,
        "uid": uid,
        "gid": gid,
        "workdir": workdir,
        "python_paths": sorted(readable),
        "argv": argv,
        "env": {**PROGRAM_ENV, "HOME": workdir, "TMPDIR": workdir, **cfg.extra_env},
        "timeout_s": float(cfg.lifetime_s),
        "rlimits": rlimits,
        "max_processes": cfg.max_processes,
        "tmpfs_mb": cfg.tmpfs_mb,
        "tmp_dirs": list(TMP_DIRS),
        "hide_dirs": [*HIDDEN_DIRS, *cfg.hide_paths],
        "status_fd": status_fd,
        "keep_fds": [],
    }


def _start(argv: list[str], cfg: SpawnConfig, mode: str, stderr: Any) -> SandboxedProcess:
    spec_seccomp = seccomp_program(cfg.seccomp)  # before any folder or pipe is made
    unavailable = ()
    if cfg.seccomp and spec_seccomp is None:
        unavailable = (f"seccomp: {seccomp_unavailable_reason()}",)
    workdir = tempfile.mkdtemp(prefix="botgrpo-service-")
    status_r, status_w = os.pipe()
    spec = {**_spec(argv, cfg, mode, workdir, status_w), "seccomp": spec_seccomp}
    command = [sys.executable, "-I", "-S", str(SUPERVISOR), marshal.dumps(spec).hex()]
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            pass_fds=(status_w,),
            start_new_session=True,
            env=SUPERVISOR_ENV,
            cwd="/",
        )
    except BaseException:
        os.close(status_r)
        _remove_tree(workdir)
        raise
    finally:
        os.close(status_w)
    return SandboxedProcess(proc, workdir, status_r, mode, unavailable)


def isolation_modes(isolation: str = "auto") -> list[str]:
    """The isolation modes to try for ``isolation``, best first ("auto": "namespaces" when root,
    then "userns", then "rlimits"; modes the kernel refused earlier in this process are left
    out). A caller that sees a start fail (a "setup_error" in the report) tries the next."""
    return _modes_to_try(isolation)


def spawn_sandboxed(
    argv: Sequence[str],
    config: SpawnConfig | None = None,
    *,
    stderr: Any = subprocess.DEVNULL,
    mode: str | None = None,
) -> SandboxedProcess:
    """Start ``argv`` (an absolute executable path first) in the sandbox; returns at once.

    The program's stdin and stdout are pipes to the caller; ``stderr`` is passed to
    :class:`subprocess.Popen` (default: discarded). ``mode`` forces an isolation mode (the
    caller's fallback logic picks it; default: the first of "namespaces", "userns", "rlimits"
    this process may use, as :func:`botgrpo.rewards.sandbox.run_python` does). Whether set-up
    succeeded shows once the program answers; if it exits instead, after
    :meth:`SandboxedProcess.kill` its :attr:`~SandboxedProcess.last_report` holds the
    supervisor's "setup_error" (and :func:`isolation_modes` the modes left to try).
    """
    cfg = config or SpawnConfig()
    argv = [str(a) for a in argv]
    if not argv or not os.path.isabs(argv[0]) or not os.access(argv[0], os.X_OK):
        raise ValueError(
            f"spawn_sandboxed: argv[0] must be an executable's absolute path, got {argv[:1]}"
        )
    if mode is None:
        modes = isolation_modes(cfg.isolation)
        if not modes:
            raise RuntimeError("spawn_sandboxed: no isolation mode is available on this machine")
        mode = modes[0]
    return _start(argv, cfg, mode, stderr)
