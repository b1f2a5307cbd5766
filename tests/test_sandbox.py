"""Tests of the sandbox for untrusted generated code: real subprocesses, real hostile programs.

Every hostile sample must be contained and reported with its reason, and leave this test
process (and its files, environment and sockets) untouched.
"""

from __future__ import annotations

import doctest
import itertools
import os
import shutil
import signal
import socket
import stat
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from botgrpo.rewards import sandbox
from botgrpo.rewards.sandbox import (
    SandboxConfig,
    SandboxError,
    classify,
    config,
    process,
    results,
    run_many,
    run_python,
    run_python_tests,
    run_python_tests_many,
)
from botgrpo.rewards.sandbox import bootstrap as _sandbox_bootstrap
from botgrpo.rewards.sandbox import run as sandbox_run

HOSTILE_TIMEOUT_S = 1.5


def _world_readable_python() -> str | None:
    """An interpreter that a fresh, group-less uid can run (the fallback modes need one)."""
    for candidate in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        if not candidate or not os.path.exists(candidate):
            continue
        real = os.path.realpath(candidate)
        parents = Path(real).parents
        if all(p.stat().st_mode & stat.S_IXOTH for p in parents if p != Path("/")):
            return candidate
    return None


def _fallback_options(isolation: str) -> dict[str, object]:
    """Options for a forced isolation mode; as root these modes need a world-readable python."""
    if os.geteuid() != 0:
        return {"isolation": isolation}
    return {"isolation": isolation, "python": _world_readable_python() or sys.executable}


def _processes_with(marker: str) -> list[int]:
    """Pids of the live processes whose command line contains ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


def _code(source: str, **values: object) -> str:
    """Dedent ``source`` and fill its ``{name}`` fields with ``repr(value)``."""
    return textwrap.dedent(source).format(**{k: repr(v) for k, v in values.items()})


# ---------------------------------------------------------------------------------------------
# Ordinary programs


def test_ok_program_reports_stdout_and_protections():
    result = run_python("print('hello'); print(sum(range(10)))")
    assert result.status == "ok" and result.ok
    assert result.returncode == 0
    assert result.stdout == "hello\n45\n"
    assert result.stderr == ""
    assert "rlimits" in result.protections and "no-new-privs" in result.protections
    assert result.isolation in ("namespaces", "userns", "rlimits")
    assert result.wall_s > 0 and result.cpu_s is not None


def test_exception_is_an_error_with_solution_line_numbers():
    result = run_python("x = 1\ny = x / 0\n")
    assert result.status == "error"
    assert result.returncode == 1
    assert result.reason == "ZeroDivisionError: division by zero"
    assert 'File "solution.py", line 2, in <module>' in result.stderr
    assert "<string>" not in result.stderr  # the bootstrap's own frames are hidden


def test_syntax_error_and_exit_code():
    broken = run_python("def f(:\n    pass\n")
    assert broken.status == "error"
    assert broken.reason.startswith("SyntaxError")
    assert 'File "solution.py", line 1' in broken.stderr
    exited = run_python("import sys\nprint('bye')\nsys.exit(3)\n")
    assert (exited.status, exited.returncode, exited.stdout) == ("error", 3, "bye\n")


def test_stdin_is_fed_even_when_large():
    big = "x" * 300_000  # larger than a pipe buffer: must be fed while the program reads
    code = "import sys\nfirst = input()\nrest = sys.stdin.read()\nprint(first[::-1], len(rest))"
    result = run_python(code, stdin=f"abc\n{big}")
    assert result.status == "ok"
    assert result.stdout == f"cba {len(big)}\n"


def test_program_sees_only_a_minimal_environment_and_its_own_workdir():
    result = run_python(
        "import os\nprint(sorted(os.environ))\nprint(os.listdir('.'))\nprint(os.getcwd())"
    )
    names, listing, cwd = result.stdout.splitlines()
    expected = ["HOME", "LANG", "LC_ALL", "PATH", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED"]
    threads = ["MKL_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"]
    assert eval(names) == sorted([*expected, *threads, "PYTHONIOENCODING", "TMPDIR"])
    assert eval(listing) == ["solution.py"]
    assert not os.path.exists(cwd)  # the working directory is removed afterwards


def test_invalid_options_are_refused_with_names():
    with pytest.raises(TypeError, match="valid options"):
        run_python("pass", timeout=3)
    with pytest.raises(ValueError, match="timeout_s must be a finite number of seconds > 0"):
        run_python("pass", timeout_s=0)
    with pytest.raises(ValueError, match="isolation"):
        SandboxConfig(isolation="docker")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="2 codes but 1 stdins"):
        run_many(["pass", "pass"], stdins=["x"])


# ---------------------------------------------------------------------------------------------
# Hostile programs


def test_fork_bomb_is_contained_and_leaves_nothing_behind():
    marker = f"botgrpo-bomb-{uuid.uuid4().hex}"
    bomb = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    code = _code(
        """
        import os, sys
        os.execv(sys.executable, [sys.executable, "-c", {bomb}, {marker}])
        """,
        bomb=bomb,
        marker=marker,
    )
    result = run_python(code, timeout_s=HOSTILE_TIMEOUT_S)
    assert result.status == "timeout", result
    assert "wall-clock limit" in result.reason
    assert _processes_with(marker) == []


_FORK_COUNTER = """
import os, time
spawned = 0
try:
    for _ in range(100):
        if os.fork() == 0:
            time.sleep(2)
            os._exit(0)
        spawned += 1
except OSError as exc:
    print("refused:", exc.errno)
print("spawned", spawned)
"""


def _spawned(result: sandbox.SandboxResult) -> int:
    assert result.status == "ok", result
    assert "refused: 11" in result.stdout  # EAGAIN: RLIMIT_NPROC was hit
    return int(result.stdout.split("spawned")[1])


def test_process_limit_is_enforced_although_we_are_root():
    result = run_python(_FORK_COUNTER, max_processes=8, timeout_s=5)
    assert 1 <= _spawned(result) <= 7  # the program itself is the eighth


def test_busy_loop_times_out():
    result = run_python("while True:\n    pass\n", timeout_s=1.0)
    assert result.status == "timeout"
    assert result.returncode is None
    assert "1 s" in result.reason


def test_memory_bomb_hits_the_memory_limit():
    result = run_python(
        "blocks = []\nwhile True:\n    blocks.append(bytearray(8 << 20))\n", memory_mb=128
    )
    assert result.status == "limit", result
    assert "memory limit of 128 MiB" in result.reason
    huge = run_python("x = bytearray(4 << 30)", memory_mb=256)
    assert (huge.status, huge.returncode) == ("limit", 1)


def test_cpu_file_size_and_thread_limits_are_reported():
    cpu = run_python("while True:\n    pass\n", cpu_time_s=1, timeout_s=10)
    assert (cpu.status, cpu.returncode) == ("limit", -signal.SIGXCPU)
    assert "CPU-time limit of 1 s" in cpu.reason
    big = run_python("open('big', 'wb').write(b'x' * (2 << 20))", max_file_bytes=1 << 20)
    assert big.status == "limit" and "file-size limit" in big.reason
    threads = "import threading, time\nfor _ in range(40):\n"
    threads += "    threading.Thread(target=time.sleep, args=(0.2,)).start()\n"
    many = run_python(threads, max_processes=8)
    assert many.status == "limit" and "can't start new thread" in many.reason


def test_a_gigabyte_of_output_is_cut_and_stopped():
    code = "import sys\nchunk = 'x' * 65536\nfor _ in range(16384):\n    sys.stdout.write(chunk)\n"
    result = run_python(code, max_output_bytes=10_000, timeout_s=10)
    assert result.status == "limit"
    assert "stdout exceeded 10000 bytes" in result.reason
    assert result.stdout_truncated
    assert result.stdout == "x" * 10_000


def test_writes_outside_the_working_directory_do_not_land(tmp_path):
    name = f"botgrpo-escape-{uuid.uuid4().hex}"
    targets = [
        f"/tmp/{name}",
        f"/var/tmp/{name}",
        f"/dev/shm/{name}",
        str(tmp_path / name),
        str(Path(__file__).resolve().parent / name),
    ]
    code = _code(
        """
        for path in {targets}:
            try:
                with open(path, "w") as handle:
                    handle.write("escaped")
            except OSError as exc:
                print("refused", path, type(exc).__name__)
        with open("inside.txt", "w") as handle:
            handle.write("fine")
        print("inside ok")
        """,
        targets=targets,
    )
    try:
        result = run_python(code)
        assert result.status == "ok", result
        assert "inside ok" in result.stdout
        assert [t for t in targets if os.path.exists(t)] == []
    finally:
        for target in targets:
            Path(target).unlink(missing_ok=True)


def test_environment_secrets_do_not_reach_the_program(monkeypatch):
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    monkeypatch.setenv("BOTGRPO_TEST_SECRET", secret)
    code = _code(
        """
        import os
        print(dict(os.environ))
        for pid in ("self", "1", str(os.getppid()), str({caller})):
            try:
                with open(f"/proc/{{pid}}/environ", "rb") as handle:
                    print(pid, handle.read())
            except OSError as exc:
                print("refused", pid, type(exc).__name__)
        """,
        caller=os.getpid(),
    )
    result = run_python(code)
    assert result.status == "ok", result
    assert "PATH" in result.stdout  # the program did print its environment
    assert secret not in result.stdout + result.stderr


def _connect_code(port: int) -> str:
    return _code(
        """
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=1).close()
            print("connected")
        except OSError as exc:
            print("refused", exc)
        """,
        port=port,
    )


def _assert_no_connection(server: socket.socket) -> None:
    server.setblocking(False)
    with pytest.raises(BlockingIOError):
        server.accept()


def test_network_is_unreachable():
    with socket.create_server(("127.0.0.1", 0)) as server:
        result = run_python(_connect_code(server.getsockname()[1]))
        assert result.status == "ok", result
        assert "refused" in result.stdout and "connected" not in result.stdout
        assert "netns" in result.protections
        _assert_no_connection(server)


def test_killing_the_parent_or_the_caller_fails():
    code = _code(
        """
        import os, signal
        for target in (os.getppid(), {caller}, {caller_parent}):
            try:
                os.kill(target, signal.SIGKILL)
                print("signalled", target)
            except OSError as exc:
                print("refused", target, type(exc).__name__)
        try:
            os.kill(-1, signal.SIGKILL)  # everything this uid may signal, except ourselves
        except OSError as exc:
            print("nothing to kill", type(exc).__name__)
        print("survived")
        """,
        caller=os.getpid(),
        caller_parent=os.getppid(),
    )
    result = run_python(code)
    assert result.status == "ok", result
    assert "survived" in result.stdout and "signalled" not in result.stdout
    os.kill(os.getpid(), 0)
    os.kill(os.getppid(), 0)
    assert run_python("print('still working')").stdout == "still working\n"


def test_segfault_is_reported_as_a_crash():
    result = run_python("import ctypes\nctypes.string_at(0)\n")
    assert result.status == "crashed"
    assert result.returncode == -signal.SIGSEGV
    assert "SIGSEGV" in result.reason


def test_unbounded_recursion_is_an_error():
    result = run_python("def f(n):\n    return f(n + 1)\n\nf(0)\n")
    assert result.status == "error"
    assert result.reason.startswith("RecursionError")
    assert 'File "solution.py", line 2, in f' in result.stderr


_DETACHED_SLEEPER = """
import os, sys, time

def running():
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and {marker}.encode() in open(f"/proc/{{pid}}/cmdline", "rb").read():
                return True
        except OSError:
            pass
    return False

pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", {marker}])
    os._exit(0)
os.waitpid(pid, 0)
for _ in range(300):
    if running():
        print("sleeper running")
        break
    time.sleep(0.01)
"""


def test_no_process_outlives_the_call():
    marker = f"botgrpo-sleeper-{uuid.uuid4().hex}"
    result = run_python(_code(_DETACHED_SLEEPER, marker=marker), timeout_s=5)
    assert result.status == "ok", result
    assert "sleeper running" in result.stdout
    assert _processes_with(marker) == []


# ---------------------------------------------------------------------------------------------
# Fallback isolation modes (forced here; "auto" picks them where namespaces are refused)


@pytest.mark.parametrize("isolation", ["userns", "rlimits"])
def test_fallback_modes_contain_processes_and_network(isolation):
    options = _fallback_options(isolation)
    marker = f"botgrpo-sleeper-{uuid.uuid4().hex}"
    detached = run_python(_code(_DETACHED_SLEEPER, marker=marker), timeout_s=5, **options)
    assert detached.isolation == isolation
    assert "sleeper running" in detached.stdout, detached
    assert _processes_with(marker) == []
    limited = run_python(_FORK_COUNTER, max_processes=6, timeout_s=5, **options)
    assert 1 <= _spawned(limited) <= 5
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        result = run_python(_connect_code(port), **options)
        assert "refused" in result.stdout, result
        _assert_no_connection(server)
    expected = "netns" if isolation == "userns" else "socket-hook"
    assert expected in result.protections
    peek = (
        "import os\ntry:\n    open(f'/proc/{os.getppid()}/mem', 'rb').read(1)\n    print('read')\n"
    )
    peek += "except OSError as exc:\n    print(type(exc).__name__)\n"
    assert run_python(peek, **options).stdout == "PermissionError\n"  # no peeking at the parent


def test_auto_skips_modes_known_to_be_unavailable(monkeypatch):
    monkeypatch.setattr(sandbox_run, "_unavailable_modes", {"namespaces", "userns"})
    options = _fallback_options("rlimits")
    options.pop("isolation")
    result = run_python("print('fallback')", **options)
    assert (result.isolation, result.stdout) == ("rlimits", "fallback\n")
    assert "socket-hook" in result.protections and "netns" not in result.protections


def test_hide_paths_hides_a_directory():
    # a system directory the sandbox leaves visible (a checkout under /tmp or /root would
    # already be hidden by the private /tmp and the hidden home directories)
    shared = "/usr/share"
    code = f"import os\nprint(len(os.listdir({shared!r})))"
    assert int(run_python(code).stdout) == len(os.listdir(shared)) > 0
    assert run_python(code, hide_paths=(shared,)).stdout == "0\n"


def test_unreachable_interpreter_is_a_clear_setup_error(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    wrapper = locked / "python"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    if os.geteuid() == 0:  # the program would run as a fresh uid that cannot reach the wrapper
        with pytest.raises(SandboxError, match="not readable by an unprivileged user"):
            run_python("print(1)", isolation="rlimits", python=str(wrapper))
    else:
        assert run_python("print(1)", isolation="rlimits", python=str(wrapper)).stdout == "1\n"


# ---------------------------------------------------------------------------------------------
# Batches and concurrency


def test_run_many_returns_results_in_order():
    codes = [f"import time\ntime.sleep({0.02 * (8 - i)})\nprint({i})" for i in range(8)]
    results = run_many(codes, max_workers=4)
    assert [r.stdout for r in results] == [f"{i}\n" for i in range(8)]
    assert all(r.status == "ok" for r in results)


def test_max_concurrency_bounds_simultaneous_sandboxes():
    code = "import time\nstart = time.time()\ntime.sleep(0.1)\nprint(start, time.time())"
    previous = sandbox.max_concurrency()
    sandbox.set_max_concurrency(1)
    try:
        results = run_many([code] * 3, max_workers=3)
    finally:
        sandbox.set_max_concurrency(previous)
    spans = sorted(tuple(map(float, r.stdout.split())) for r in results)
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans))
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        sandbox.set_max_concurrency(0)


# ---------------------------------------------------------------------------------------------
# Test-case runner

HUMANEVAL_TESTS = """
METADATA = {"author": "test"}


def check(candidate):
    assert candidate(1, 2) == 3
    assert candidate(3, 2) == 5
    assert candidate(5, 2) == 7
    for i in range(3):
        assert candidate(i, i) == 2 * i
"""

BUGGY_ADD = """def add(a, b):
    if a == 3:
        raise ValueError("three")
    return a + b + (1 if a == 5 else 0)
"""


def test_humaneval_check_counts_each_assert():
    result = run_python_tests(BUGGY_ADD, HUMANEVAL_TESTS, "add")
    assert (result.passed, result.total) == (2, 4)
    assert result.fraction == 0.5 and not result.all_passed
    assert [c.passed for c in result.cases] == [True, False, False, True]
    assert [c.lineno for c in result.cases] == [6, 7, 8, 9]
    raising, wrong = result.cases[1], result.cases[2]
    assert raising.error == "ValueError: three"
    assert raising.solution_lines == (3,)
    assert 'File "solution.py", line 3, in add' in raising.traceback
    assert wrong.error == "AssertionError" and wrong.solution_lines == ()
    assert "assert candidate(5, 2) == 7" in wrong.traceback  # the test line is quoted
    assert result.failing_lines == (3,)
    assert result.error == "" and result.run.status == "ok"


def test_correct_solution_passes_everything():
    result = run_python_tests("def add(a, b):\n    return a + b\n", HUMANEVAL_TESTS, "add")
    assert result.all_passed and (result.passed, result.total) == (4, 4)


def test_solution_that_does_not_load_fails_every_case():
    broken = run_python_tests("def add(a, b):\n    return a +\n", HUMANEVAL_TESTS, "add")
    assert (broken.passed, broken.total) == (0, 4)
    assert "SyntaxError" in broken.error
    assert broken.error_lines == (2,) and broken.failing_lines == (2,)
    assert broken.cases[0].error.startswith("no result: SyntaxError")
    missing = run_python_tests("def plus(a, b):\n    return a + b\n", HUMANEVAL_TESTS, "add")
    assert missing.passed == 0
    assert "does not define a function named 'add'" in missing.error


def test_exit_and_forged_reports_do_not_pass_tests():
    exits = run_python_tests("import sys\nsys.exit(0)\n", HUMANEVAL_TESTS, "add")
    assert exits.passed == 0 and "SystemExit" in exits.error
    forger = """import json, os
line = json.dumps({"case": 0, "passed": True})
for fd in range(1, 64):
    for text in (line, "0" * 32 + " " + line):
        try:
            os.write(fd, (text + "\\n").encode())
        except OSError:
            pass

def add(a, b):
    return -1
"""
    forged = run_python_tests(forger, HUMANEVAL_TESTS, "add")
    assert forged.passed == 0, forged.cases


def test_snippets_and_mbpp_style_asserts():
    code = "def double(x):\n    return x * 2 if x < 3 else x\n"
    snippets = ["assert double(1) == 2", "assert candidate(2) == 4", "assert double(3) == 6"]
    listed = run_python_tests(code, snippets, "double")
    assert [c.passed for c in listed.cases] == [True, True, False]
    plain = run_python_tests(code, "assert double(1) == 2\nassert double(4) == 8\n")
    assert (plain.passed, plain.total) == (1, 2)


def test_a_hanging_case_times_out_the_rest():
    code = "def f(x):\n    while x == 2:\n        pass\n    return x\n"
    result = run_python_tests(
        code, ["assert f(1) == 1", "assert f(2) == 2", "assert f(3) == 3"], timeout_s=2.0
    )
    assert result.run.status == "timeout"
    assert [c.passed for c in result.cases] == [True, False, False]
    assert result.cases[1].error.startswith("no result: wall-clock limit")


def test_test_runner_refuses_bad_tests():
    with pytest.raises(ValueError, match="pass entry_point"):
        run_python_tests("def f(): pass", HUMANEVAL_TESTS)
    with pytest.raises(ValueError, match="does not parse"):
        run_python_tests("def f(): pass", "assert (", "f")
    with pytest.raises(ValueError, match="snippet 1 does not parse"):
        run_python_tests("def f(): pass", ["assert True", "assert ("], "f")
    with pytest.raises(ValueError, match="no test case"):
        run_python_tests("def f(): pass", [], "f")


SQUARE_WRONG, SQUARE_RIGHT = "def sq(x):\n    return 0\n", "def sq(x):\n    return x * x\n"


@pytest.mark.parametrize(
    "tests",
    [
        # unittest: each test method is a case; unittest.main() (which would exit) is dropped
        "import unittest\nclass T(unittest.TestCase):\n    def test_a(self):\n"
        "        self.assertEqual(sq(2), 4)\n    def test_b(self):\n"
        "        self.assertEqual(sq(3), 9)\nif __name__ == '__main__':\n    unittest.main()\n",
        # pytest: each top-level test function is a case, imports or not
        "import math\ndef test_a():\n    assert sq(2) == 4\ndef test_b():\n    assert sq(3) == 9\n",
        # a script's main block runs in place
        "if __name__ == '__main__':\n    assert sq(2) == 4\n    assert sq(3) == 9\n",
    ],
)
def test_unittest_pytest_and_script_tests_run_their_checks(tests):
    """Test programs in the layouts people write: what they check runs, so wrong code fails."""
    wrong, right = run_python_tests(SQUARE_WRONG, tests), run_python_tests(SQUARE_RIGHT, tests)
    assert (wrong.passed, wrong.total) == (0, 2)
    assert (right.passed, right.total) == (2, 2)


PYTEST_LAYOUTS = """import pytest
@pytest.mark.parametrize("x, y", [(2, 4), (3, 9), pytest.param(4, 16, id="four")])
def test_table(x, y):
    assert sq(x) == y
ROWS = [(5, 25), (6, 36)]
@pytest.mark.parametrize(("x", "y"), ROWS)
def test_rows_of_a_name(x, y):
    assert sq(x) == y
@pytest.mark.parametrize("x", [1, 2])
@pytest.mark.parametrize("k", [1, -1])
def test_stacked(x, k, scale=1):
    assert sq(k * x) == x * x * scale
class TestSquare:
    def setup_method(self, method):
        self.seven = 7
    def test_seven(self):
        assert sq(self.seven) == 49
    @pytest.mark.parametrize("x", [8])
    def test_eight(self, x):
        assert sq(x) == 64
async def test_async():
    assert sq(9) == 81
"""


def test_pytest_parametrize_classes_and_async_tests_each_count():
    """Every parameter set of a literal table is a case (stacked decorators multiply), a table
    named by a variable is one case, plain ``Test*`` classes and async tests run."""
    wrong = run_python_tests(SQUARE_WRONG, PYTEST_LAYOUTS)
    right = run_python_tests(SQUARE_RIGHT, PYTEST_LAYOUTS)
    assert (right.passed, right.total) == (11, 11)
    assert (wrong.passed, wrong.total) == (0, 11)
    assert wrong.cases[0].error == "AssertionError"


@pytest.mark.parametrize(
    "tests",
    [
        "def test_a(tmp_path):\n    assert sq(2) == 4\n",
        "class TestA:\n    def test_a(self, capsys):\n        assert sq(2) == 4\n",
        "import pytest\n@pytest.mark.parametrize('x', [2])\ndef test_a(x, data):\n"
        "    assert sq(x) == 4\n",
    ],
)
def test_a_test_that_needs_a_fixture_is_refused_not_dropped(tests):
    with pytest.raises(ValueError, match=r"needs (tmp_path|capsys|data), a pytest fixture"):
        run_python_tests(SQUARE_RIGHT, tests)


@pytest.mark.parametrize("tests", ["EXPECTED = {2: 4}\n", "import math\nX = 1\n"])
def test_a_test_program_that_checks_nothing_is_refused(tests):
    with pytest.raises(ValueError, match="no test case: no assert, no call"):
        run_python_tests(SQUARE_RIGHT, tests)


def test_run_python_tests_many_keeps_order():
    codes = ["def add(a, b):\n    return a + b\n", BUGGY_ADD, "def add(a, b):\n    return b + 1\n"]
    results = run_python_tests_many(codes, [HUMANEVAL_TESTS] * 3, ["add"] * 3, max_workers=2)
    assert [r.passed for r in results] == [4, 2, 1]
    with pytest.raises(ValueError, match="one of each per program"):
        run_python_tests_many(codes, [HUMANEVAL_TESTS], ["add"] * 3)
    with pytest.raises(ValueError, match="program 1: the tests define check"):
        run_python_tests_many(codes, [HUMANEVAL_TESTS] * 3, ["add", None, "add"])
    with pytest.raises(TypeError, match="run_many: item 1 is not a str"):
        run_many(["pass", b"pass"])  # type: ignore[list-item]


def test_doctests_pass():
    for module in (sandbox, sandbox_run, _sandbox_bootstrap, classify, config, process, results):
        assert doctest.testmod(module).failed == 0


MEAN_WRONG, MEAN_RIGHT = (
    "def mean(xs):\n    return 0.0\n",
    "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n",
)


@pytest.mark.parametrize(
    "tests",
    [
        # a helper that asserts, called from check: each call is a case
        "def assert_close(a, b):\n    assert abs(a - b) < 1e-6\n\ndef check(candidate):\n"
        "    assert candidate([]) == 0.0\n    assert_close(candidate([1, 3]), 2.0)\n"
        "    assert_close(candidate([2, 4, 6]), 4.0)\n",
        # try / else: raise, beside plain asserts
        "def check(candidate):\n    assert candidate([]) == 0.0\n    try:\n"
        "        r = candidate([1, 3])\n    except ZeroDivisionError:\n        pass\n    else:\n"
        "        if r != 2.0:\n            raise AssertionError(r)\n    assert candidate([2, 4, 6]) == 4.0\n",
        # with pytest.raises beside asserts (MBPP layout)
        "import pytest\nassert mean([]) == 0.0\nassert mean([1, 3]) == 2.0\n"
        "with pytest.raises(TypeError):\n    mean(5)\n",
    ],
)
def test_checks_without_an_assert_statement_are_cases_too(tests):
    """Wrong code used to pass in full: a failing check that holds no `assert` was not a case."""
    wrong = run_python_tests(MEAN_WRONG, tests, "mean")
    right = run_python_tests(MEAN_RIGHT, tests, "mean")
    assert right.all_passed and right.total == 3, right.cases
    assert not wrong.all_passed and wrong.passed == 1, wrong.cases


def test_a_failure_outside_every_case_counts_as_a_failed_case():
    tests = "assert mean([]) == 0.0\nvalue = mean([1, 3])\nEXPECTED = {2.0: 1}[value]\n"
    wrong = run_python_tests(MEAN_WRONG, tests, "mean")
    assert (wrong.passed, wrong.total) == (1, 2) and "KeyError" in wrong.cases[-1].error
    assert wrong.cases[-1].lineno == 0
    assert run_python_tests(MEAN_RIGHT, tests, "mean").all_passed


@pytest.mark.parametrize(
    "cheat",
    [
        # read the test source that tracebacks quote
        "import linecache, re\n\ndef sq(x):\n    src = ''.join(linecache.getlines('tests.py'))\n"
        "    m = re.search(r'sq\\(' + str(x) + r'\\) == (\\d+)', src)\n    return int(m.group(1))\n",
        # hide a builtin the tests call
        "def abs(x):\n    return 0\n\ndef sq(x):\n    return 0\n",
        # rewrite the reports after the harness has started
        "import json\n_dumps = json.dumps\njson.dumps = lambda r, **k: _dumps({**r, 'passed': True}"
        " if 'case' in r else r, **k)\n\ndef sq(x):\n    return 0\n",
    ],
)
def test_cheats_through_the_test_harness_do_not_pass(cheat):
    tests = "assert abs(sq(2) - 4) < 1e-9\nassert sq(3) == 9\n"
    result = run_python_tests(cheat, tests)
    assert result.passed == 0, result.cases


def test_annotations_stay_objects_in_the_solution():
    code = (
        "def f(x: int) -> int:\n    return x\n\n"
        "def kinds():\n    return [f.__annotations__['x'], f.__annotations__['return']]\n"
    )
    assert run_python_tests(code, "assert kinds() == [int, int]\n").all_passed


STACK = "class Stack:\n    def __init__(self):\n        self.items = []\n    def push(self, x):\n" \
    "        self.items.append(x)\n    def pop(self):\n        return self.items.pop()\n"  # fmt: skip


@pytest.mark.parametrize(
    "tests",
    [
        "import unittest\nclass T(unittest.TestCase):\n    @classmethod\n    def setUpClass(cls):\n"
        "        cls.values = [1, 2]\n    def test_a(self):\n        s = Stack()\n"
        "        [s.push(v) for v in self.values]\n        self.assertEqual(s.pop(), 2)\n",
        "class TestStack:\n    @classmethod\n    def setup_class(cls):\n        cls.values = [1, 2]\n"
        "    def test_a(self):\n        s = Stack()\n        [s.push(v) for v in self.values]\n"
        "        assert s.pop() == 2\n",
        "VALUES = []\ndef setup_module():\n    VALUES.extend([1, 2])\ndef test_a():\n"
        "    s = Stack()\n    [s.push(v) for v in VALUES]\n    assert s.pop() == 2\n",
    ],
)
def test_class_and_module_set_up_run_before_their_tests(tests):
    result = run_python_tests(STACK, tests)
    assert (result.passed, result.total) == (1, 1), result.cases


def test_skipped_and_expected_failures_are_not_cases():
    tests = (
        "import sys, unittest\nimport pytest\n\ndef test_basic():\n    assert sq(2) == 4\n\n"
        "@pytest.mark.skip(reason='needs network')\ndef test_remote():\n    assert fetch() == 1\n\n"
        "@pytest.mark.xfail(reason='known')\ndef test_known():\n    assert sq(2) == 5\n\n"
        "class T(unittest.TestCase):\n    @unittest.skipIf(sys.version_info < (3, 99), 'later')\n"
        "    def test_later(self):\n        self.assertEqual(sq(3), 10)\n"
    )
    right = run_python_tests(SQUARE_RIGHT, tests)
    assert (right.passed, right.total) == (1, 1), right.cases
    skipper = "import unittest\n\ndef sq(x):\n    raise unittest.SkipTest('no')\n"
    assert run_python_tests(skipper, tests).passed == 0  # the candidate's own skip fails
