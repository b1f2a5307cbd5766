"""The comparison's pool workers end with the comparison's process (no orphan runs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

PARENT = textwrap.dedent(
    """
    import multiprocessing, os, sys, time
    from concurrent.futures import ProcessPoolExecutor
    from botgrpo.harness.compare import die_with_parent

    def work(path):
        with open(path, "w") as f:
            f.write(str(os.getpid()))
        time.sleep(120)

    if __name__ == "__main__":
        ctx = multiprocessing.get_context("spawn")
        initializer = die_with_parent if sys.argv[2] == "guarded" else None
        initargs = (os.getpid(),) if initializer else ()
        pool = ProcessPoolExecutor(1, mp_context=ctx, initializer=initializer, initargs=initargs)
        pool.submit(work, sys.argv[1])
        time.sleep(120)
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:  # a zombie has exited
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:  # reaped between the two looks
        return False


def _worker_after_parent_killed(tmp_path: Path, mode: str) -> bool:
    """Start a pool in a child process, SIGKILL that process once its worker runs, and say
    whether the worker is still alive 10 s later."""
    script, pid_file = tmp_path / "parent.py", tmp_path / f"worker-{mode}.pid"
    script.write_text(PARENT)
    parent = subprocess.Popen([sys.executable, str(script), str(pid_file), mode])
    try:
        for _ in range(600):
            if pid_file.exists() and pid_file.read_text():
                break
            time.sleep(0.1)
        worker = int(pid_file.read_text())
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        for _ in range(100):
            if not _alive(worker):
                return False
            time.sleep(0.1)
        os.kill(worker, signal.SIGKILL)
        return True
    finally:
        parent.kill()


def test_worker_ends_when_the_comparison_is_killed(tmp_path):
    assert not _worker_after_parent_killed(tmp_path, "guarded")


def test_without_the_guard_the_worker_outlives_its_parent(tmp_path):
    # the control: the guard is what ends the worker
    assert _worker_after_parent_killed(tmp_path, "plain")
