"""Classification of a finished run: "ok", "error", "timeout", "crashed" or "limit", with a reason.

The supervisor reports a wait status, CPU time and whether it killed the program; the pipes
report overflowing output; stderr's last line tells a MemoryError or a refused fork from an
ordinary exception. :func:`build_result` turns these into one :class:`SandboxResult`.
"""

from __future__ import annotations

import os
import signal

from botgrpo.rewards.sandbox.config import SandboxConfig, Status
from botgrpo.rewards.sandbox.process import RawRun
from botgrpo.rewards.sandbox.results import SandboxResult


def build_result(raw: RawRun, config: SandboxConfig) -> SandboxResult:
    """The :class:`SandboxResult` of one supervisor run: status, exit code and a one-line reason."""
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
        unavailable=_unavailable(report, config),
    )


def _unavailable(report: dict, config: SandboxConfig) -> tuple[str, ...]:
    """Protections the config asked for that this machine could not give, with why."""
    if config.seccomp and "seccomp" not in report.get("protections", ()):
        from botgrpo.rewards.sandbox.process import seccomp_unavailable_reason

        return (f"seccomp: {seccomp_unavailable_reason() or 'not installed'}",)
    return ()


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
    if sig == signal.SIGSYS and "seccomp" in report.get("protections", ()):
        return (
            "crashed",
            -sig,
            (
                "killed by SIGSYS: a system call of another architecture, which the sandbox's "
                "filter forbids"
            ),
        )
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
