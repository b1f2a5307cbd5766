"""What a sandboxed run returns: the program's outcome, and the outcome of test cases."""

from __future__ import annotations

from dataclasses import dataclass

from botgrpo.rewards.sandbox.config import Status


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
    "uid-drop", "no-new-privs", "rlimits", "seccomp" (the system-call filter of
    :mod:`botgrpo.rewards.sandbox.seccomp`), "socket-hook" (sockets refused by an audit hook,
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
    unavailable: tuple[str, ...] = ()
    """Protections the config asked for that this machine refused, each as "name: why"
    (e.g. "seccomp: the kernel refuses seccomp filters ..."); empty when all were active."""

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
    """First line of the case in the test program (1 for a snippet; 0 for the failure of a
    statement outside every case, counted as one more failed case)."""
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
