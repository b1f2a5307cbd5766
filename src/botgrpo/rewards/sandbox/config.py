"""Settings of one sandboxed run, and the error raised when no sandbox can be set up.

:class:`SandboxConfig` is the one place every limit and isolation option is defined and
validated; :func:`botgrpo.rewards.sandbox.run_python` and friends take its fields as keyword
options, and the process launcher reads it.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

Status = Literal["ok", "error", "timeout", "crashed", "limit"]
Isolation = Literal["auto", "namespaces", "userns", "rlimits"]
ISOLATION_MODES: tuple[str, ...] = ("auto", "namespaces", "userns", "rlimits")


class SandboxError(RuntimeError):
    """The sandbox itself could not be set up (the program did not run)."""


@dataclass(frozen=True)
class SandboxConfig:
    """Limits and isolation settings of one sandboxed run (every field is a keyword option of
    :func:`run_python`, :func:`run_many` and :func:`run_python_tests`)."""

    timeout_s: float = 5.0
    """Wall-clock limit in seconds from the program's start; at the limit the program and every
    process it started are killed (status "timeout")."""
    memory_mb: int = 512
    """Address-space limit (RLIMIT_AS) of each of the program's processes, in MiB. Allocations
    beyond it fail, which Python reports as MemoryError (status "limit")."""
    cpu_time_s: float | None = None
    """CPU-time limit (RLIMIT_CPU) of each process, rounded up to whole seconds. None means
    ``ceil(timeout_s) + 1``, so a single-threaded busy loop is reported as a timeout."""
    max_processes: int = 32
    """Most processes and threads the program may have at once (RLIMIT_NPROC, enforced because
    the program never runs as real root); fork and thread start fail beyond it. The program's
    total address space is bounded by memory_mb * max_processes."""
    max_output_bytes: int = 65536
    """Bytes kept of stdout and of stderr each; a program that writes more is killed (status
    "limit") and the kept prefix is returned, marked truncated."""
    max_file_bytes: int = 16 << 20
    """Largest file the program may write (RLIMIT_FSIZE), in bytes."""
    max_open_files: int = 256
    """Most file descriptors per process (RLIMIT_NOFILE)."""
    tmpfs_mb: int = 64
    """Size in MiB of each private tmpfs: the working directory, /tmp, /var/tmp and /dev/shm
    (with namespaces only)."""
    python: str | None = None
    """Interpreter that runs the program; None means the caller's own (``sys.executable``,
    so the program can import the caller's installed packages)."""
    isolation: Isolation = "auto"
    """"namespaces" (needs root), "userns" (unprivileged user namespace), "rlimits" (no
    namespaces: limits, uid drop when root, socket audit hook), or "auto": the first of these
    that works on this machine."""
    hide_paths: tuple[str, ...] = ()
    """Further absolute directories to hide behind an empty tmpfs (with namespaces only), e.g.
    a data directory holding reference answers."""
    seccomp: bool = True
    """Run the program under the system-call filter (``botgrpo.rewards.sandbox.seccomp``: no
    new namespaces, mounts, keyrings, bpf, io_uring, ptrace, module loading, ...). Where this
    machine refuses seccomp, programs run without it, a one-time warning says so and results
    name it in ``unavailable``. False turns it off (for debugging a program the filter stops)."""
    extra_env: Mapping[str, str] = field(default_factory=dict)
    """Environment variables added to the program's minimal environment (PATH, LANG, LC_ALL,
    HOME and TMPDIR (the working directory), PYTHONHASHSEED=0, PYTHONIOENCODING=utf-8,
    PYTHONDONTWRITEBYTECODE=1, and OMP/OPENBLAS/MKL_NUM_THREADS=1)."""

    def __post_init__(self) -> None:
        _require(
            _finite_positive(self.timeout_s) and self.timeout_s <= MAX_TIMEOUT_S,
            f"timeout_s must be a finite number of seconds > 0 and at most {MAX_TIMEOUT_S}, "
            f"got {self.timeout_s!r}",
        )
        _require(
            self.cpu_time_s is None or _finite_positive(self.cpu_time_s),
            f"cpu_time_s must be a finite number of seconds > 0 (or None), got {self.cpu_time_s!r}",
        )
        for name in ("memory_mb", "max_processes", "max_output_bytes", "max_open_files"):
            value = getattr(self, name)
            whole = isinstance(value, int) and not isinstance(value, bool)
            _require(whole and value >= 1, f"{name} must be a whole number >= 1, got {value!r}")
        _require(self.max_file_bytes >= 0, "max_file_bytes must be >= 0")
        _require(self.tmpfs_mb >= 1, "tmpfs_mb must be >= 1")
        _require(
            self.isolation in ISOLATION_MODES,
            f"isolation={self.isolation!r} is not one of {ISOLATION_MODES}",
        )
        _require(
            isinstance(self.seccomp, bool), f"seccomp must be True or False, got {self.seccomp!r}"
        )
        object.__setattr__(self, "hide_paths", tuple(self.hide_paths))
        object.__setattr__(self, "extra_env", MappingProxyType(dict(self.extra_env)))
        for path in self.hide_paths:
            _require(os.path.isabs(path), f"hide_paths entries must be absolute, got {path!r}")
        for key, value in self.extra_env.items():
            _require(
                isinstance(key, str) and isinstance(value, str), "extra_env must map str to str"
            )

    @property
    def cpu_limit_s(self) -> int:
        """The CPU-time limit actually applied, in whole seconds."""
        if self.cpu_time_s is None:
            return math.ceil(self.timeout_s) + 1
        return math.ceil(self.cpu_time_s)


#: The longest wall-clock limit a sandboxed program may get (a day).
MAX_TIMEOUT_S = 86_400


def check_timeout(name: str, value: object) -> None:
    """Refuse a wall-clock limit that is not a number of seconds in (0, MAX_TIMEOUT_S].

    The task and recipe configs and the React checks, which hand a limit to the sandbox or a
    render worker, check it here when they are built, so that ``inf``, ``nan``, a month or a
    string fail in one line instead of at scoring (:class:`SandboxConfig` checks its own).
    ``name`` is the field as the user spells it (``"ReactRewardConfig.render_timeout_s"``)."""
    number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not (number and 0 < value <= MAX_TIMEOUT_S):  # type: ignore[operator]
        raise ValueError(
            f"{name} must be > 0 and at most {MAX_TIMEOUT_S} (a day), a number of seconds; "
            f"got {value!r}"
        )


def _finite_positive(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < math.inf


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(f"SandboxConfig: {message}")
