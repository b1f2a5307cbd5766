"""Run untrusted, model-generated Python in an isolated, resource-limited subprocess.

Each run gets a fresh supervisor process (``_sandbox_supervisor.py``) that

1. puts the program in private mount, network, PID, IPC and UTS namespaces (created directly
   when the caller is root, inside an unprivileged user namespace otherwise);
2. runs it under a fresh, unused uid (when the caller is root) with ``no_new_privs`` set, so
   the kernel enforces the process limit and set-uid programs gain nothing;
3. applies resource limits: address space, CPU time, processes, file size, open files;
4. shows it a read-only filesystem with empty private ``/tmp``, ``/var/tmp`` and ``/dev/shm``,
   hidden ``/root``, ``/home`` and ``/run``, a small tmpfs as working directory, and an
   environment without the caller's variables; and
5. kills every process the program started before the call returns (the PID namespace's init
   dies, taking the whole namespace with it), also on timeout.

Where the kernel refuses namespaces, runs fall back to resource limits, a uid drop when root,
a child-subreaper sweep of leftover processes and an audit hook that refuses sockets;
:attr:`SandboxResult.protections` lists what was active. The docs page
``docs/rewards/sandbox.md`` describes the threat model and its gaps.

>>> result = run_python("print(sum(range(4)))")
>>> result.status, result.stdout
('ok', '6\\n')
>>> run_python("1 / 0").reason
'ZeroDivisionError: division by zero'
"""

from __future__ import annotations

import math
import os
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal, TypeVar

from botgrpo.rewards import _sandbox_bootstrap as bootstrap
from botgrpo.rewards._sandbox_process import Job, RawRun, SetupFailed, run_once

Status = Literal["ok", "error", "timeout", "crashed", "limit"]
Isolation = Literal["auto", "namespaces", "userns", "rlimits"]
ISOLATION_MODES: tuple[str, ...] = ("auto", "namespaces", "userns", "rlimits")

_TEXT_LIMIT = 4000
T = TypeVar("T")


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
    extra_env: Mapping[str, str] = field(default_factory=dict)
    """Environment variables added to the program's minimal environment (PATH, LANG, LC_ALL,
    HOME and TMPDIR (the working directory), PYTHONHASHSEED=0, PYTHONIOENCODING=utf-8,
    PYTHONDONTWRITEBYTECODE=1, and OMP/OPENBLAS/MKL_NUM_THREADS=1)."""

    def __post_init__(self) -> None:
        _require(self.timeout_s > 0, f"timeout_s must be > 0, got {self.timeout_s}")
        _require(self.cpu_time_s is None or self.cpu_time_s > 0, "cpu_time_s must be > 0")
        for name in ("memory_mb", "max_processes", "max_output_bytes", "max_open_files"):
            _require(getattr(self, name) >= 1, f"{name} must be >= 1, got {getattr(self, name)}")
        _require(self.max_file_bytes >= 0, "max_file_bytes must be >= 0")
        _require(self.tmpfs_mb >= 1, "tmpfs_mb must be >= 1")
        _require(
            self.isolation in ISOLATION_MODES,
            f"isolation={self.isolation!r} is not one of {ISOLATION_MODES}",
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


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(f"SandboxConfig: {message}")


@dataclass(frozen=True)
class SandboxResult:
    """What happened to one sandboxed program."""

    status: Status
    """"ok" (exit code 0), "error" (non-zero exit, e.g. an uncaught exception), "timeout"
    (wall-clock limit), "crashed" (killed by a signal such as SIGSEGV) or "limit" (a resource
    limit: memory, CPU time, processes, file size, output size)."""
    returncode: int | None
    """Exit code, or minus the signal number; None when the sandbox killed the program
    (timeout, output limit)."""
    stdout: str
    """Standard output (UTF-8, undecodable bytes replaced), at most max_output_bytes."""
    stderr: str
    """Standard error, likewise bounded; holds the traceback of an uncaught exception."""
    reason: str
    """One human-readable line: why the program ended (e.g. the exception line)."""
    protections: tuple[str, ...]
    """Protections that were active: "userns", "netns", "pidns", "ipcns", "mntns", "ro-root",
    "uid-drop", "no-new-privs", "rlimits", "socket-hook" (sockets refused by an audit hook,
    without a network namespace) and "subreaper" (leftover processes swept, without a PID
    namespace)."""
    isolation: str
    """Isolation mode used: "namespaces", "userns" or "rlimits"."""
    wall_s: float
    """Wall-clock seconds of the whole run, sandbox set-up included."""
    cpu_s: float | None
    """CPU seconds used by the program and the processes it waited for, interpreter start-up
    included; None when the sandbox killed the program."""
    stdout_truncated: bool = False
    """Whether stdout was cut at max_output_bytes."""
    stderr_truncated: bool = False
    """Whether stderr was cut at max_output_bytes."""

    @property
    def ok(self) -> bool:
        """True when the program exited with code 0."""
        return self.status == "ok"


@dataclass(frozen=True)
class TestCaseResult:
    """Outcome of one test case of :func:`run_python_tests`."""

    __test__ = False  # not a pytest test class

    index: int
    """Position of the case (module-level cases first, then those in ``check``)."""
    passed: bool
    """Whether the case ran without raising."""
    lineno: int
    """First line of the case in the test program (1 for a snippet)."""
    error: str = ""
    """The exception line (e.g. "AssertionError"), or why the case did not run; "" if passed."""
    traceback: str = ""
    """Traceback text; frames of the candidate read ``File "solution.py", line N``."""
    solution_lines: tuple[int, ...] = ()
    """Lines of solution.py on the traceback, outermost first (empty for a wrong answer)."""


@dataclass(frozen=True)
class TestRunResult:
    """Outcome of running test cases against one candidate solution."""

    __test__ = False

    passed: int
    """Number of test cases that passed."""
    total: int
    """Number of test cases."""
    cases: tuple[TestCaseResult, ...]
    """Every case, in order."""
    error: str
    """What stopped the tests early ("" if nothing did): solution.py failed to load (its
    traceback), the entry point is missing, or a statement outside any case raised."""
    error_lines: tuple[int, ...]
    """Lines of solution.py on that error's traceback (for a syntax error: its line)."""
    run: SandboxResult
    """The sandboxed process (its stdout, stderr, status and protections)."""

    @property
    def fraction(self) -> float:
        """passed / total."""
        return self.passed / self.total if self.total else 0.0

    @property
    def all_passed(self) -> bool:
        """True when every case passed."""
        return self.total > 0 and self.passed == self.total

    @property
    def failing_lines(self) -> tuple[int, ...]:
        """Innermost solution.py line of each failure with a traceback into the solution."""
        lines = {c.solution_lines[-1] for c in self.cases if not c.passed and c.solution_lines}
        if self.error_lines:
            lines.add(self.error_lines[-1])
        return tuple(sorted(lines))


# ---------------------------------------------------------------------------------------------
# Public API


def run_python(
    code: str, *, stdin: str = "", timeout_s: float = 5.0, memory_mb: int = 512, **options: Any
) -> SandboxResult:
    """Run ``code`` as a script (``solution.py``, run as ``__main__``) in a fresh sandbox.

    ``options`` are further :class:`SandboxConfig` fields (cpu_time_s, max_processes,
    max_output_bytes, max_file_bytes, python, isolation, ...). Raises :class:`SandboxError`
    only when no isolation mode can be set up; anything the program does is reported in the
    result.

    >>> run_python("print(input()[::-1])", stdin="abc").stdout
    'cba\\n'
    """
    config = _make_config(timeout_s=timeout_s, memory_mb=memory_mb, **options)
    return _run_script(code, stdin, config)


def run_many(
    codes: Sequence[str],
    *,
    stdins: Sequence[str] | None = None,
    max_workers: int | None = None,
    timeout_s: float = 5.0,
    memory_mb: int = 512,
    **options: Any,
) -> list[SandboxResult]:
    """:func:`run_python` over many programs, at most ``max_workers`` at a time; results in order.

    ``max_workers`` defaults to :func:`max_concurrency`, which also bounds all runs of this
    process together.

    >>> [r.stdout for r in run_many(["print(1)", "print(2)"], max_workers=2)]
    ['1\\n', '2\\n']
    """
    config = _make_config(timeout_s=timeout_s, memory_mb=memory_mb, **options)
    codes = list(codes)
    inputs = [""] * len(codes) if stdins is None else list(stdins)
    if len(inputs) != len(codes):
        raise ValueError(f"run_many: {len(codes)} codes but {len(inputs)} stdins")
    _check_codes(codes, "run_many")
    _check_codes(inputs, "run_many (stdins)")
    return _map_bounded(lambda i: _run_script(codes[i], inputs[i], config), len(codes), max_workers)


def run_python_tests(
    code: str,
    tests: str | Sequence[str],
    entry_point: str | None = None,
    *,
    timeout_s: float = 5.0,
    memory_mb: int = 512,
    **options: Any,
) -> TestRunResult:
    """Run test cases against candidate ``code`` in one sandbox; count the cases that pass.

    ``code`` is written to ``solution.py`` and imported as the module ``solution``; its
    ``entry_point`` function is bound to the name ``candidate``, and every name the solution
    defines is visible to the tests. ``tests`` is either

    - a test program (a string), e.g. HumanEval's ``def check(candidate): assert ...``
      (``check(candidate)`` is called for you) or MBPP-style top-level asserts: every top-level
      statement holding an ``assert``, in the module or in ``check``'s body, is one case, see
      :func:`botgrpo.rewards._sandbox_bootstrap.plan_test_program`; or
    - a list of snippets, each one case, run in order in one shared namespace.

    A failing case does not stop the others; a case that hangs times the whole run out, and
    the cases not reached count as failed. Tracebacks name ``solution.py`` so
    :attr:`TestRunResult.failing_lines` point into ``code``.

    >>> tests = "def check(candidate):\\n    assert candidate(2) == 4\\n    assert candidate(3) == 9\\n"
    >>> result = run_python_tests("def square(x):\\n    return x * 2\\n", tests, "square")
    >>> result.passed, result.total, result.cases[1].error
    (1, 2, 'AssertionError')
    """
    config = _make_config(timeout_s=timeout_s, memory_mb=memory_mb, **options)
    try:
        plan = _plan_tests(tests, entry_point)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"run_python_tests: {exc}") from exc
    return _run_tests(code, plan, config)


def run_python_tests_many(
    codes: Sequence[str],
    tests: Sequence[str | Sequence[str]],
    entry_points: Sequence[str | None] | None = None,
    *,
    max_workers: int | None = None,
    timeout_s: float = 5.0,
    memory_mb: int = 512,
    **options: Any,
) -> list[TestRunResult]:
    """:func:`run_python_tests` for each ``(codes[i], tests[i], entry_points[i])``, at most
    ``max_workers`` at a time; results in order."""
    config = _make_config(timeout_s=timeout_s, memory_mb=memory_mb, **options)
    codes, tests = list(codes), list(tests)
    points = [None] * len(codes) if entry_points is None else list(entry_points)
    if not len(codes) == len(tests) == len(points):
        raise ValueError(
            f"run_python_tests_many: {len(codes)} codes, {len(tests)} tests and "
            f"{len(points)} entry_points; pass one of each per program"
        )
    plans = []
    for i, (item_tests, entry_point) in enumerate(zip(tests, points, strict=True)):
        try:
            plans.append(_plan_tests(item_tests, entry_point))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"run_python_tests_many: program {i}: {exc}") from exc
    _check_codes(codes, "run_python_tests_many")
    return _map_bounded(lambda i: _run_tests(codes[i], plans[i], config), len(codes), max_workers)


_max_concurrency = os.cpu_count() or 1
_slots = threading.BoundedSemaphore(_max_concurrency)
_unavailable_modes: set[str] = set()


def set_max_concurrency(n: int) -> None:
    """Allow at most ``n`` sandboxes of this process to run at once (default: CPU count)."""
    global _max_concurrency, _slots
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"set_max_concurrency: n must be an int >= 1, got {n!r}")
    _max_concurrency, _slots = n, threading.BoundedSemaphore(n)


def max_concurrency() -> int:
    """How many sandboxes of this process may run at once."""
    return _max_concurrency


# ---------------------------------------------------------------------------------------------
# Internals


@dataclass(frozen=True)
class _TestPlan:
    payload: Mapping[str, Any]
    case_lines: tuple[int, ...]


@dataclass(frozen=True)
class _Outcome:
    result: SandboxResult
    reports: list[dict]
    """The test harness's report records (empty for scripts)."""


def _make_config(**options: Any) -> SandboxConfig:
    names = [f.name for f in fields(SandboxConfig)]
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise TypeError(f"unknown sandbox option(s) {unknown}; valid options: {names}")
    return SandboxConfig(**options)


def _map_bounded(fn: Callable[[int], T], n: int, max_workers: int | None) -> list[T]:
    workers = _max_concurrency if max_workers is None else max_workers
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"max_workers must be an int >= 1, got {max_workers!r}")
    if n == 0:
        return []
    with ThreadPoolExecutor(min(workers, n), thread_name_prefix="botgrpo-sandbox") as pool:
        return list(pool.map(fn, range(n)))


def _check_codes(texts: Sequence[object], where: str) -> None:
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{where}: item {i} is not a str but {type(text).__name__}")


def _run_script(code: str, stdin: str, config: SandboxConfig) -> SandboxResult:
    if not isinstance(code, str) or not isinstance(stdin, str):
        raise TypeError("run_python: code and stdin must be str")
    return _execute(Job(code, "script", stdin.encode()), config).result


def _plan_tests(tests: str | Sequence[str], entry_point: str | None) -> _TestPlan:
    """Validate the tests in the caller's process and number their cases like the harness."""
    if entry_point is not None and not (
        isinstance(entry_point, str) and entry_point.isidentifier()
    ):
        raise ValueError(f"entry_point must be a function name, got {entry_point!r}")
    if isinstance(tests, str):
        payload, lines = _plan_program(tests, entry_point)
    else:
        payload, lines = _plan_snippets(list(tests))
    if not lines:
        raise ValueError("the tests hold no test case (no statement to run)")
    payload["entry_point"] = entry_point
    return _TestPlan(payload, tuple(lines))


def _plan_program(tests: str, entry_point: str | None) -> tuple[dict[str, Any], list[int]]:
    try:
        tree, lines, _ = bootstrap.plan_test_program(tests)
    except SyntaxError as exc:
        raise ValueError(f"the test program does not parse: {exc}") from exc
    if bootstrap.find_check(tree) is not None and entry_point is None:
        raise ValueError("the tests define check(candidate); pass entry_point")
    return {"tests": tests}, lines


def _plan_snippets(snippets: list[Any]) -> tuple[dict[str, Any], list[int]]:
    for i, snippet in enumerate(snippets):
        if not isinstance(snippet, str):
            raise TypeError(f"test snippet {i} is not a str but {type(snippet).__name__}")
        try:
            compile(snippet, f"test_{i}.py", "exec")
        except SyntaxError as exc:
            raise ValueError(f"test snippet {i} does not parse: {exc}") from exc
    return {"snippets": snippets}, [1] * len(snippets)


def _run_tests(code: str, plan: _TestPlan, config: SandboxConfig) -> TestRunResult:
    if not isinstance(code, str):
        raise TypeError("run_python_tests: code must be str")
    outcome = _execute(Job(code, "tests", tests=plan.payload), config)
    return _collect_test_result(outcome, plan.case_lines)


def _collect_test_result(outcome: _Outcome, case_lines: Sequence[int]) -> TestRunResult:
    """Merge the harness's case reports (first report of each case wins) into a result."""
    found: dict[int, dict] = {}
    stopper: dict = {}
    for record in outcome.reports:
        index = record.get("case")
        if isinstance(index, int) and 0 <= index < len(case_lines):
            found.setdefault(index, record)
        for key in ("load_error", "setup_error"):
            if isinstance(record.get(key), dict) and not stopper:
                stopper = record[key]
    why_not_run = "no result: " + (_text(stopper.get("error")) or outcome.result.reason)
    cases = tuple(
        _case_result(i, line, found.get(i), why_not_run) for i, line in enumerate(case_lines)
    )
    return TestRunResult(
        passed=sum(c.passed for c in cases),
        total=len(cases),
        cases=cases,
        error=_text(stopper.get("traceback")) or _text(stopper.get("error")),
        error_lines=_lines(stopper.get("solution_lines")),
        run=outcome.result,
    )


def _case_result(index: int, lineno: int, record: dict | None, why_not_run: str) -> TestCaseResult:
    if record is None:
        return TestCaseResult(index, False, lineno, error=why_not_run)
    passed = record.get("passed") is True
    return TestCaseResult(
        index,
        passed,
        lineno,
        error="" if passed else _text(record.get("error")),
        traceback=_text(record.get("traceback")),
        solution_lines=_lines(record.get("solution_lines")),
    )


def _text(value: object) -> str:
    return value[:_TEXT_LIMIT] if isinstance(value, str) else ""


def _lines(value: object) -> tuple[int, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, int) and not isinstance(v, bool))


# ---------------------------------------------------------------------------------------------
# Execution


@contextmanager
def _slot() -> Iterator[None]:
    slots = _slots
    with slots:
        yield


def _modes_to_try(isolation: str) -> list[str]:
    root = os.geteuid() == 0
    if isolation == "auto":
        modes = ["namespaces", "userns", "rlimits"] if root else ["userns", "rlimits"]
        return [m for m in modes if m not in _unavailable_modes]
    if isolation == "namespaces" and not root:
        raise SandboxError("isolation='namespaces' needs root; use 'userns' or 'auto'")
    return [isolation]


def _execute(job: Job, config: SandboxConfig) -> _Outcome:
    """Run ``job`` in the first isolation mode that sets up; remember modes the kernel refuses."""
    failures = []
    with _slot():
        for mode in _modes_to_try(config.isolation):
            try:
                raw = run_once(mode, job, config)
            except SetupFailed as exc:
                failures.append(f"{mode}: {exc}")
                if exc.refused and mode != "rlimits":
                    _unavailable_modes.add(mode)  # the kernel refuses it: skip it from now on
                continue
            return _Outcome(_build_result(raw, config), raw.reports)
    raise SandboxError(
        "the sandbox could not be set up (" + "; ".join(failures) + "). The program did not "
        "run; see docs/rewards/sandbox.md for what each isolation mode needs."
    )


# ---------------------------------------------------------------------------------------------
# Classification


def _build_result(raw: RawRun, config: SandboxConfig) -> SandboxResult:
    stderr = raw.stderr.decode("utf-8", errors="replace")
    status, returncode, reason = _classify(raw, stderr, config)
    report = raw.report
    cpu_s = report.get("cpu_s") if isinstance(report.get("wait_status"), int) else None
    return SandboxResult(
        status=status,
        returncode=returncode,
        stdout=raw.stdout.decode("utf-8", errors="replace"),
        stderr=stderr,
        reason=reason,
        protections=tuple(report.get("protections", ())),
        isolation=str(report.get("isolation", "")),
        wall_s=raw.wall_s,
        cpu_s=float(cpu_s) if isinstance(cpu_s, int | float) else None,
        stdout_truncated=raw.stdout_truncated,
        stderr_truncated=raw.stderr_truncated,
    )


def _classify(raw: RawRun, stderr: str, config: SandboxConfig) -> tuple[Status, int | None, str]:
    """(status, returncode, reason) from what the supervisor and the pipes reported."""
    report = raw.report
    if raw.supervisor_killed:
        return "timeout", None, f"the sandbox overran its {config.timeout_s:g} s limit; killed"
    if raw.overflow:
        limit = config.max_output_bytes
        return "limit", None, f"{raw.overflow} exceeded {limit} bytes; the program was killed"
    if report.get("timed_out"):
        return "timeout", None, f"wall-clock limit of {config.timeout_s:g} s exceeded; killed"
    if not isinstance(report.get("wait_status"), int):
        if not report:
            return "crashed", None, f"the sandbox exited ({raw.supervisor_rc}) without a report"
        return "crashed", None, "the program's exit status was lost"
    code = os.waitstatus_to_exitcode(report["wait_status"])
    if code < 0:
        return _classify_signal(-code, report, config)
    if code == 0:
        return "ok", 0, "exited normally"
    return _classify_exit(code, stderr, config)


def _classify_signal(sig: int, report: dict, config: SandboxConfig) -> tuple[Status, int, str]:
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    cpu_s = report.get("cpu_s") or 0.0
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_s >= config.cpu_limit_s - 0.05):
        return "limit", -sig, f"CPU-time limit of {config.cpu_limit_s} s exceeded ({name})"
    if sig == signal.SIGXFSZ:
        return "limit", -sig, f"file-size limit of {config.max_file_bytes} bytes exceeded"
    return "crashed", -sig, f"killed by {name} ({signal.strsignal(sig)})"


def _classify_exit(code: int, stderr: str, config: SandboxConfig) -> tuple[Status, int, str]:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    last = lines[-1][:300] if lines else ""
    if last.startswith("MemoryError"):
        return "limit", code, f"memory limit of {config.memory_mb} MiB reached ({last})"
    if "[Errno 27] File too large" in last:
        return "limit", code, f"file-size limit of {config.max_file_bytes} bytes reached"
    forking = "[Errno 11] Resource temporarily unavailable" in last and "fork" in stderr
    if forking or last.startswith("RuntimeError: can't start new thread"):
        return "limit", code, f"process limit of {config.max_processes} reached ({last})"
    return "error", code, last or f"exited with code {code}"
