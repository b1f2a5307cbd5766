"""Run untrusted, model-generated Python in an isolated, resource-limited subprocess.

Each run gets a fresh supervisor process (``supervisor.py``) that

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

import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from botgrpo.rewards.sandbox import bootstrap
from botgrpo.rewards.sandbox.classify import build_result
from botgrpo.rewards.sandbox.config import SandboxConfig, SandboxError
from botgrpo.rewards.sandbox.process import Job, SetupFailed, run_once
from botgrpo.rewards.sandbox.results import SandboxResult, TestCaseResult, TestRunResult

_TEXT_LIMIT = 4000
T = TypeVar("T")


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
    if isinstance(codes, str) or isinstance(stdins, str):
        raise TypeError(
            "run_many takes a list of programs (and of stdins); for one, use run_python"
        )
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
      statement holding an ``assert``, in the module or in ``check``'s body, is one case, and
      so is each pytest-style ``def test*()`` and each ``unittest.TestCase`` test method; see
      :func:`botgrpo.rewards.sandbox.bootstrap.plan_test_program`; or
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


def count_test_cases(tests: str | Sequence[str], entry_point: str | None = None) -> int:
    """How many cases ``tests`` hold, as :func:`run_python_tests` numbers them, checked without
    running anything: ValueError or TypeError naming the problem for tests that cannot run (a
    program that does not parse, checks nothing, or defines ``check`` without an
    ``entry_point``). Lets a caller check a dataset's rows before any completion is run."""
    return len(_plan_tests(tests, entry_point).case_lines)


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
    elif isinstance(tests, list | tuple):
        payload, lines = _plan_snippets(list(tests))
    else:
        raise TypeError(
            f"tests must be a test program (a str) or a list of snippets (str), got "
            f"{type(tests).__name__}"
        )
    if not lines:
        raise ValueError(
            "the tests hold no test case: no assert, no call, no test function or TestCase "
            "(imports, constants and definitions alone check nothing)"
        )
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
        _case_result(i, line, found.get(i), why_not_run)
        for i, line in enumerate(case_lines)
        if found.get(i, {}).get("skipped") is not True  # skipped by the tests: not counted
    )
    setup = next(
        (r["setup_error"] for r in outcome.reports if isinstance(r.get("setup_error"), dict)), None
    )
    if setup is not None:  # the program failed outside every case: a check that failed too
        cases += (
            TestCaseResult(
                len(case_lines),
                False,
                0,
                error="failed outside any test case: " + _text(setup.get("error")),
                traceback=_text(setup.get("traceback")),
                solution_lines=_lines(setup.get("solution_lines")),
            ),
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
            return _Outcome(build_result(raw, config), raw.reports)
    raise SandboxError(
        "the sandbox could not be set up (" + "; ".join(failures) + "). The program did not "
        "run; see docs/rewards/sandbox.md for what each isolation mode needs."
    )
