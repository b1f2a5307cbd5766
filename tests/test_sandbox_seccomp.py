"""The sandbox's system-call filter, tried the way a hostile program would: ctypes syscalls
from inside real sandboxed runs, each expected to come back EPERM (or to kill the process);
ordinary programs (threads, subprocesses, sqlite, numpy) unaffected; a kernel that refuses
filters reported, not silently ignored."""

from __future__ import annotations

import errno
import json
import os
import platform
import subprocess
import sys
import textwrap

import pyseccomp
import pytest

from botgrpo.rewards.sandbox import SpawnConfig, run_python, spawn_sandboxed
from botgrpo.rewards.sandbox import process as sandbox_process
from botgrpo.rewards.sandbox import seccomp as sandbox_seccomp
from tests.test_sandbox import _fallback_options

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIGCHLD = 17

#: name -> (system call, its arguments): each must fail with EPERM inside the sandbox.
DENIED_CALLS = {
    "unshare(CLONE_NEWUSER)": ("unshare", [CLONE_NEWUSER]),
    "unshare(CLONE_NEWNET)": ("unshare", [CLONE_NEWNET]),
    "unshare(CLONE_NEWTIME)": ("unshare", [0x80]),
    "clone(CLONE_NEWUSER)": ("clone", [CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0]),
    "clone(CLONE_NEWNS)": ("clone", [0x00020000 | SIGCHLD, 0, 0, 0, 0]),
    "setns": ("setns", [0, 0]),
    "mount": ("mount", [0, 0, 0, 0, 0]),
    "umount2": ("umount2", [0, 0]),
    "pivot_root": ("pivot_root", [0, 0]),
    "fsopen": ("fsopen", [0, 0]),
    "fsmount": ("fsmount", [0, 0, 0]),
    "move_mount": ("move_mount", [0, 0, 0, 0, 0]),
    "open_tree": ("open_tree", [0, 0, 0]),
    "mount_setattr": ("mount_setattr", [0, 0, 0, 0, 0]),
    "keyctl": ("keyctl", [0, 0, 0, 0, 0]),
    "add_key": ("add_key", [0, 0, 0, 0, 0]),
    "request_key": ("request_key", [0, 0, 0, 0]),
    "bpf": ("bpf", [0, 0, 0]),
    "perf_event_open": ("perf_event_open", [0, 0, -1, -1, 0]),
    "userfaultfd": ("userfaultfd", [0]),
    "io_uring_setup": ("io_uring_setup", [1, 0]),
    "io_uring_enter": ("io_uring_enter", [0, 0, 0, 0, 0, 0]),
    "io_uring_register": ("io_uring_register", [0, 0, 0, 0]),
    "kexec_load": ("kexec_load", [0, 0, 0, 0]),
    "kexec_file_load": ("kexec_file_load", [0, 0, 0, 0, 0]),
    "init_module": ("init_module", [0, 0, 0]),
    "finit_module": ("finit_module", [0, 0, 0]),
    "delete_module": ("delete_module", [0, 0]),
    "open_by_handle_at": ("open_by_handle_at", [0, 0, 0]),
    "name_to_handle_at": ("name_to_handle_at", [0, 0, 0, 0, 0]),
    "ptrace(PTRACE_TRACEME)": ("ptrace", [0, 0, 0, 0]),
    "ptrace(PTRACE_ATTACH, init)": ("ptrace", [16, 1, 0, 0]),
    "process_vm_readv": ("process_vm_readv", [1, 0, 0, 0, 0, 0]),
    "process_vm_writev": ("process_vm_writev", [1, 0, 0, 0, 0, 0]),
    "reboot": ("reboot", [0, 0, 0, 0]),
    "swapon": ("swapon", [0, 0]),
    "swapoff": ("swapoff", [0]),
    "acct": ("acct", [0]),
    "quotactl": ("quotactl", [0, 0, 0, 0]),
    "lookup_dcookie": ("lookup_dcookie", [0, 0, 0]),
    "iopl": ("iopl", [3]),
    "ioperm": ("ioperm", [0, 1, 1]),
    "personality(ADDR_NO_RANDOMIZE)": ("personality", [0x0040000]),
    "personality(READ_IMPLIES_EXEC)": ("personality", [0x0400000]),
    "personality(high bits)": ("personality", [0x1_0004_0000]),
    "ioctl(TIOCSTI)": ("ioctl", [0, 0x5412, 0]),
    "ioctl(TIOCSTI, high bits)": ("ioctl", [0, 0x1_0000_5412, 0]),
    "ioctl(TIOCLINUX)": ("ioctl", [0, 0x541C, 0]),
    "chroot": ("chroot", [0]),
    "syslog": ("syslog", [3, 0, 0]),
    "socket(AF_VSOCK)": ("socket", [40, 1, 0]),
    "get_mempolicy": ("get_mempolicy", [0, 0, 0, 0, 0]),
    "set_mempolicy": ("set_mempolicy", [0, 0, 0]),
    "mbind": ("mbind", [0, 0, 0, 0, 0, 0]),
    "move_pages": ("move_pages", [0, 0, 0, 0, 0, 0]),
    "migrate_pages": ("migrate_pages", [0, 0, 0, 0]),
    "process_madvise": ("process_madvise", [0, 0, 0, 0, 0]),
    "sysfs": ("sysfs", [3]),
    "sethostname": ("sethostname", [0, 0]),
}

#: Calls that reach the kernel without the filter: the control that the tests can fail.
REACH_THE_KERNEL = (
    "unshare(CLONE_NEWUSER)",
    "io_uring_setup",
    "keyctl",
    "setns",
    "add_key",
    "socket(AF_VSOCK)",
    "get_mempolicy",
    "personality(ADDR_NO_RANDOMIZE)",
)

#: An errno no kernel path of these calls returns: the filter's answer, told from the kernel's.
DISTINCT = errno.ENOTRECOVERABLE

HOSTILE = textwrap.dedent(
    """
    import ctypes, errno, json, os
    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.syscall(*[ctypes.c_long(a) for a in {args!r}])
    if result == 0 and {number} in {forking!r}:
        os._exit(0)  # a clone that went through: the child leaves at once
    code = ctypes.get_errno() if result == -1 else 0
    print(json.dumps({{"result": result, "errno": errno.errorcode.get(code, code)}}))
    """
)


def _number(name: str) -> int:
    number = pyseccomp.resolve_syscall(pyseccomp.system_arch(), name)
    if number < 0:
        raise LookupError(name)
    return number


def _call(label: str, **options) -> dict:
    name, args = DENIED_CALLS[label]
    number = _number(name)
    code = HOSTILE.format(args=[number, *args], number=number, forking=[_number("clone")])
    result = run_python(code, timeout_s=5, **options)
    assert result.status == "ok", result
    return json.loads(result.stdout)


def _exists_here(label: str) -> bool:
    try:
        _number(DENIED_CALLS[label][0])
    except LookupError:
        return False
    return True


@pytest.fixture()
def distinct_filter(monkeypatch):
    """Programs run under the same rules answering DISTINCT instead of EPERM."""
    program = sandbox_seccomp.filter_program(DISTINCT)
    monkeypatch.setattr(sandbox_process, "seccomp_program", lambda requested: program)


HERE = [label for label in DENIED_CALLS if _exists_here(label)]


@pytest.mark.parametrize("label", HERE)
def test_each_denied_call_is_refused_by_the_filter_itself(label, distinct_filter):
    answer = _call(label)
    assert answer == {"result": -1, "errno": errno.errorcode[DISTINCT]}, answer


@pytest.mark.parametrize("label", HERE)
def test_each_denied_call_is_refused_with_eperm(label):
    answer = _call(label)
    assert answer == {"result": -1, "errno": "EPERM"}, answer


@pytest.mark.parametrize("label", REACH_THE_KERNEL)
def test_without_the_filter_the_same_calls_reach_the_kernel(label):
    assert _call(label)["errno"] == "EPERM"
    assert _call(label, seccomp=False)["errno"] != "EPERM"


def test_clone3_answers_enosys_so_the_c_library_falls_back_to_clone():
    code = HOSTILE.format(args=[_number("clone3"), 0, 0], number=-1, forking=[])
    assert json.loads(run_python(code).stdout)["errno"] == "ENOSYS"


@pytest.mark.skipif(platform.machine() != "x86_64", reason="32-bit and x32 calls are x86-64's")
@pytest.mark.parametrize("kind", ["x32", "int 0x80"])
def test_a_system_call_of_another_architecture_kills_the_process(kind):
    x32 = "r = libc.syscall(ctypes.c_long(0x40000000 + 39))  # getpid, x32 ABI"
    i386 = textwrap.dedent(
        """
        import mmap
        buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        buf.write(bytes([0xB8, 0x14, 0, 0, 0, 0xCD, 0x80, 0xC3]))  # getpid via int 0x80; ret
        r = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))()
        """
    )
    code = "import ctypes\nlibc = ctypes.CDLL(None)\nprint('before', flush=True)\n"
    code += (x32 if kind == "x32" else i386) + "\nprint('after', r)\n"
    result = run_python(code)
    assert result.stdout == "before\n"
    assert result.status == "crashed" and "SIGSYS" in result.reason, result
    unfiltered = run_python(code, seccomp=False)
    assert unfiltered.ok and "after" in unfiltered.stdout  # the same program runs without it


ORDINARY = textwrap.dedent(
    """
    import concurrent.futures, json, os, sqlite3, subprocess, sys, asyncio
    import numpy as np
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        squares = list(pool.map(lambda x: x * x, range(8)))
    child = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True)
    db = sqlite3.connect(":memory:")
    db.execute("create table t (x)")
    db.executemany("insert into t values (?)", [(i,) for i in range(10)])
    total = db.execute("select sum(x) from t").fetchone()[0]
    pid = os.fork()
    if pid == 0:
        os._exit(3)
    _, status = os.waitpid(pid, 0)
    async def main():
        return await asyncio.sleep(0, result="async")
    print(json.dumps({
        "threads": squares[-1], "child": child.stdout.strip(), "sqlite": total,
        "fork": os.waitstatus_to_exitcode(status), "numpy": float(np.ones((64, 64)).dot(np.ones(64)).sum()),
        "asyncio": asyncio.run(main()), "personality": __import__("ctypes").CDLL(None).personality(0),
    }))
    """
)


def test_ordinary_programs_are_unaffected():
    result = run_python(ORDINARY, timeout_s=30)
    assert result.ok, result.stderr
    assert "seccomp" in result.protections and result.unavailable == ()
    assert json.loads(result.stdout) == {
        "threads": 49,
        "child": "42",
        "sqlite": 45,
        "fork": 3,
        "numpy": 4096.0,
        "asyncio": "async",
        "personality": 0,
    }


@pytest.mark.parametrize("isolation", ["userns", "rlimits"])
def test_the_fallback_modes_filter_too(isolation):
    options = _fallback_options(isolation)
    result = run_python(ORDINARY.replace("import numpy as np", "np = None") + "", **options)
    assert "seccomp" in result.protections
    name, args = DENIED_CALLS["unshare(CLONE_NEWUSER)"]
    code = HOSTILE.format(args=[_number(name), *args], number=-1, forking=[])
    assert json.loads(run_python(code, **options).stdout)["errno"] == "EPERM"


def test_a_program_that_asks_to_be_traced_is_stopped_cleanly_without_the_filter():
    code = (
        "import ctypes, os, signal\n"
        "print(ctypes.CDLL(None).ptrace(0, 0, 0, 0), flush=True)\n"  # PTRACE_TRACEME
        "os.kill(os.getpid(), signal.SIGUSR1)\n"  # a traced process stops here
        "print('resumed')\n"
    )
    for options in ({}, _fallback_options("rlimits")):
        result = run_python(code, seccomp=False, timeout_s=5, **options)
        assert result.status == "crashed" and result.stdout == "0\n", result  # killed, reported
    assert run_python(code, timeout_s=5).stdout.startswith("-1\n")  # the filter refuses it


def test_turned_off_it_is_not_listed():
    result = run_python("print(1)", seccomp=False)
    assert result.ok and "seccomp" not in result.protections and result.unavailable == ()


def test_a_long_lived_program_and_its_children_run_under_the_filter():
    script = "grep Seccomp: /proc/self/status; /bin/sh -c 'grep Seccomp: /proc/self/status'"
    for requested, mode in ((True, "2"), (False, "0")):
        config = SpawnConfig(lifetime_s=30, seccomp=requested)
        with spawn_sandboxed(["/bin/sh", "-c", script], config) as proc:
            lines = [proc.stdout.readline().decode().split() for _ in range(2)]
        assert lines == [["Seccomp:", mode], ["Seccomp:", mode]]
        assert ("seccomp" in proc.last_report["protections"]) == requested


REFUSING_KERNEL = textwrap.dedent(
    """
    import errno, json, warnings
    import pyseccomp as sc
    # this process's kernel refuses new seccomp filters, as a kernel without them would
    flt = sc.SyscallFilter(sc.ALLOW)
    flt.add_rule(sc.ERRNO(errno.EINVAL), "prctl", sc.Arg(0, sc.EQ, 22))
    flt.add_rule(sc.ERRNO(errno.EINVAL), "seccomp")
    flt.load()
    from botgrpo.rewards.sandbox import run_python, spawn_sandboxed
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs = [run_python("print(7)") for _ in range(2)]
        with spawn_sandboxed(["/bin/cat"]) as service:
            spawned = list(service.unavailable)
    print(json.dumps({
        "spawned": spawned,
        "stdout": [r.stdout for r in runs],
        "protections": [list(r.protections) for r in runs],
        "unavailable": [list(r.unavailable) for r in runs],
        "warnings": [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)],
    }))
    """
)


def test_a_kernel_that_refuses_filters_is_reported_once_and_in_every_result():
    proc = subprocess.run(
        [sys.executable, "-c", REFUSING_KERNEL],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "default"},
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["stdout"] == ["7\n", "7\n"]  # the programs still run ...
    assert all("seccomp" not in p for p in out["protections"])
    assert all(u and u[0].startswith("seccomp: the kernel refuses") for u in out["unavailable"])
    assert out["spawned"][0].startswith("seccomp: the kernel refuses")
    [warning] = out["warnings"]  # ... and a warning says so, once
    assert "without its system-call filter" in warning


def test_the_filter_is_compiled_by_libseccomp_for_this_architecture():
    program = sandbox_seccomp.filter_program()
    assert len(program) % 8 == 0 and 50 < len(program) // 8 < 4096  # sock_filter entries
    assert sandbox_process.seccomp_probe() == ""
