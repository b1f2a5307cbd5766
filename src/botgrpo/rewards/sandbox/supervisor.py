"""Sandbox supervisor: isolates and runs one untrusted program, then reports what happened.

:mod:`botgrpo.rewards.sandbox` starts this file as its own process,
``python -I -S supervisor.py CONFIG``, in a new session whose stdin, stdout and
stderr are the program's. The supervisor

1. enters the isolation mode the config names: ``namespaces`` (new mount, network, PID, IPC and
   UTS namespaces created with root privileges), ``userns`` (the same namespaces inside a new,
   unprivileged user namespace) or ``rlimits`` (no namespaces);
2. prepares the filesystem view: the whole tree read-only, private empty ``/tmp``, ``/var/tmp``
   and ``/dev/shm``, home and runtime directories hidden, and the working directory a small tmpfs
   holding the program's files;
3. forks the PID namespace's init, which mounts a fresh ``/proc`` and forks the program; the
   program's process starts a new session, drops to an unprivileged uid, sets
   ``no_new_privs``, its resource limits and the system-call filter (``seccomp.py`` compiles
   it; :func:`install_seccomp` loads it), and execs the interpreter;
4. enforces the wall-clock limit: killing init kills every process of the namespace (without
   namespaces the supervisor is a child subreaper and kills every descendant itself); and
5. writes one report (a marshal dump of a dict) to the status file descriptor.

It uses the standard library only and imports everything up front: once it has dropped
privileges or hidden directories it may no longer be able to read its interpreter's files.
"""

from __future__ import annotations

import ctypes
import errno
import marshal
import os
import resource
import signal
import stat
import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
NAMESPACE_FLAGS = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
TIOCSTI = 0x5412

SYS_MOUNT_SETATTR = 442  # the same number on every architecture (added in Linux 5.12)
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1

INNER_ID = 1000
"""uid and gid of the program inside a user namespace (never 0: no capabilities after exec)."""
INIT_GRACE_S = 5
"""Init kills itself this long after the wall-clock limit, should the supervisor be gone."""

_libc = ctypes.CDLL(None, use_errno=True)
_STATE: dict[str, object] = {"kill": None, "timed_out": False, "stopped": False}


class SetupError(Exception):
    """Isolation could not be set up; the program has not run.

    ``refused`` marks a kernel refusal (EPERM, EACCES, EINVAL, ENOSYS from unshare, mount,
    prctl or the id maps): the mode will not work in this process, so the caller may stop
    trying it.
    """

    def __init__(self, message: str, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


class _MountAttr(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("set", "clear", "propagation", "userns")]


_REFUSALS = (errno.EPERM, errno.EACCES, errno.EINVAL, errno.ENOSYS)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        message = f"{what} failed: {os.strerror(code)} (errno {code})"
        raise SetupError(message, refused=code in _REFUSALS)


def _unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    def encode(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    result = _libc.mount(
        encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags), encode(data or None)
    )
    _check(result, f"mount {target}")


def _prctl(option: int, value: int) -> None:
    zero = ctypes.c_ulong(0)
    _check(_libc.prctl(ctypes.c_int(option), ctypes.c_ulong(value), zero, zero, zero), "prctl")


def _make_tree_read_only(path: str) -> None:
    attr = _MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    result = _libc.syscall(
        ctypes.c_long(SYS_MOUNT_SETATTR),
        ctypes.c_int(AT_FDCWD),
        os.fsencode(path),
        ctypes.c_uint(AT_RECURSIVE),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    _check(result, "mount_setattr")


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_seccomp(program: bytes) -> None:
    """Install a seccomp filter (classic-BPF bytes compiled by libseccomp, see
    ``botgrpo.rewards.sandbox.seccomp``) in this process; it is inherited across fork and exec
    and cannot be removed. Needs ``no_new_privs`` (or CAP_SYS_ADMIN)."""
    if not program or len(program) % 8:
        raise SetupError(f"the seccomp filter is {len(program)} bytes, not whole instructions")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    zero = ctypes.c_ulong(0)
    result = _libc.prctl(
        ctypes.c_int(PR_SET_SECCOMP),
        ctypes.c_ulong(SECCOMP_MODE_FILTER),
        ctypes.byref(fprog),
        zero,
        zero,
    )
    _check(result, "installing the seccomp filter")


def _probe_seccomp(program_hex: str) -> int:
    """Install the filter in this throwaway process and check that it refuses a new user
    namespace; exit status 0 when it does (the parent then filters every program)."""
    try:
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        install_seccomp(bytes.fromhex(program_hex))
    except SetupError as exc:
        sys.stderr.write(f"the kernel refuses seccomp filters: {exc}\n")
        return 3
    # TIOCSTI on /dev/null: ENOTTY from the kernel, EPERM only from the filter
    fd = os.open(os.devnull, os.O_RDONLY)
    answer = _libc.ioctl(ctypes.c_int(fd), ctypes.c_ulong(TIOCSTI), ctypes.c_void_p(0))
    if answer == 0 or ctypes.get_errno() != errno.EPERM:
        sys.stderr.write("the installed seccomp filter did not refuse ioctl(TIOCSTI)\n")
        return 4
    return 0


def _write_text(path: str, text: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
    except OSError as exc:
        raise SetupError(f"writing {path} failed: {exc}", refused=exc.errno in _REFUSALS) from exc


def _is_within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


# ---------------------------------------------------------------------------------------------
# Identity and namespaces


def _drop_identity(uid: int, gid: int) -> None:
    """Become ``uid``/``gid`` with no supplementary groups (needs root; irreversible)."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


def _enter_user_namespace() -> None:
    """Unshare a user namespace together with the others and map our ids to INNER_ID."""
    uid, gid = os.geteuid(), os.getegid()
    # A uid change leaves the process undumpable, which makes /proc/self/uid_map unwritable.
    _prctl(PR_SET_DUMPABLE, 1)
    _unshare(CLONE_NEWUSER | NAMESPACE_FLAGS)
    _write_text("/proc/self/setgroups", "deny")
    _write_text("/proc/self/uid_map", f"{INNER_ID} {uid} 1")
    _write_text("/proc/self/gid_map", f"{INNER_ID} {gid} 1")
    _prctl(PR_SET_DUMPABLE, 0)  # the program runs as our uid: keep it from inspecting init


# ---------------------------------------------------------------------------------------------
# Filesystem view


def _read_files(workdir: str) -> dict[str, bytes]:
    """The regular files the caller put in the working directory, by name."""
    files = {}
    for name in os.listdir(workdir):
        path = os.path.join(workdir, name)
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as handle:
                files[name] = handle.read()
    return files


def _write_files(workdir: str, files: dict[str, bytes], owner: tuple[int, int] | None) -> None:
    for name, data in files.items():
        path = os.path.join(workdir, name)
        with open(path, "wb") as handle:
            handle.write(data)
        if owner is not None:
            os.chown(path, *owner)


def _blocked_ancestor(path: str) -> str | None:
    """The topmost directory on ``path`` that other users cannot search, or None."""
    current = "/"
    for part in path.strip("/").split("/"):
        current = os.path.join(current, part)
        if os.path.isdir(current) and not os.stat(current).st_mode & stat.S_IXOTH:
            return current
    return None


def _open_sources(paths: list[str], world_access: bool) -> tuple[list[tuple[str, int]], list[str]]:
    """O_PATH descriptors of the interpreter's directories, to bind back once hidden.

    Also returns the directories to hide so that the unprivileged program can still reach them
    (each is covered by an empty tmpfs and the interpreter bound back at its own path).
    """
    sources, blocked = [], []
    for path in paths:
        if not os.path.isdir(path):
            continue
        sources.append((path, os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)))
        ancestor = _blocked_ancestor(path) if world_access else None
        if ancestor is not None:
            blocked.append(ancestor)
    return sources, blocked


def _cover(path: str, size_mb: int, mode: str, covered: list[str]) -> bool:
    """Mount an empty tmpfs over an existing directory ``path`` (once)."""
    real = os.path.realpath(path)
    if not os.path.isdir(real) or any(_is_within(real, done) for done in covered):
        return False
    _mount("tmpfs", real, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size_mb}m,mode={mode}")
    covered.append(real)
    return True


def _prepare_filesystem(cfg: dict, files: dict, sources: list, hidden: list) -> list[str]:
    """Build the program's view of the filesystem; returns the protections this achieved."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    protections = ["mntns"]
    try:
        _make_tree_read_only("/")
        protections.append("ro-root")
    except SetupError:
        pass
    covered: list[str] = []
    for path in cfg["tmp_dirs"]:
        _cover(path, cfg["tmpfs_mb"], "1777", covered)
    hide = [p for p in hidden if _cover(p, 1, "755", covered)]
    hide_real = [os.path.realpath(p) for p in hide]
    for path, fd in sources:
        if any(_is_within(path, c) for c in covered):
            os.makedirs(path, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        os.close(fd)
    _make_workdir(cfg, files)
    for path in hide_real:
        _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    return protections


def _make_workdir(cfg: dict, files: dict) -> None:
    """A size-limited tmpfs at the working directory's path, holding the program's files."""
    workdir, owner = cfg["workdir"], _program_owner(cfg)
    os.makedirs(workdir, exist_ok=True)
    options = f"size={cfg['tmpfs_mb']}m,mode=700"
    if owner is not None:
        options += f",uid={owner[0]},gid={owner[1]}"
    _mount("tmpfs", workdir, "tmpfs", MS_NOSUID | MS_NODEV, options)
    _write_files(workdir, files, owner)


def _program_owner(cfg: dict) -> tuple[int, int] | None:
    """Who must own the program's files: the fresh uid when the program drops to it."""
    if cfg["uid"] is None or cfg["isolation"] == "userns":
        return None
    return cfg["uid"], cfg["gid"]


# ---------------------------------------------------------------------------------------------
# The program's process


def _apply_rlimits(limits: dict[str, list[int]]) -> None:
    for name, (soft, hard) in limits.items():
        resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (soft, hard))


def _send(fd: int, key: str, value: object) -> None:
    """One internal message: a line ``key value`` (init and the program's child to us)."""
    os.write(fd, f"{key} {str(value).replace(chr(10), ' ')}\n".encode())


def _exec_program(cfg: dict, message_fd: int, drop: bool, rlimits: dict) -> None:
    """In the forked child: finish isolating, then exec the interpreter. Never returns."""
    try:
        os.setsid()
        for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTERM, signal.SIGALRM):
            signal.signal(sig, signal.SIG_DFL)
        if drop:
            _drop_identity(cfg["uid"], cfg["gid"])
        if cfg["isolation"] == "rlimits":
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        os.chdir(cfg["workdir"])
        _apply_rlimits(rlimits)
        for fd in cfg["keep_fds"]:
            os.set_inheritable(fd, True)
        if cfg.get("seccomp"):
            install_seccomp(cfg["seccomp"])  # last: from here on the program's own rules
        os.execve(cfg["argv"][0], cfg["argv"], cfg["env"])
    except BaseException as exc:
        _send(message_fd, "setup_error", f"could not start the program: {exc!r}")
    finally:
        os._exit(127)


def _spawn_program(cfg: dict, message_fd: int, drop: bool, rlimits: dict) -> int:
    pid = os.fork()
    if pid == 0:
        _exec_program(cfg, message_fd, drop, rlimits)
    return pid


def _program_rlimits(cfg: dict, nproc: int) -> dict[str, list[int]]:
    limits = dict(cfg["rlimits"])
    limits["NPROC"] = [nproc, nproc]
    return limits


def _run_init(cfg: dict, message_fd: int, drop: bool, rlimits: dict) -> None:
    """PID 1 of the new PID namespace: mount /proc, run the program, reap, report its status.

    When init exits, the kernel kills every other process in the namespace.
    """
    try:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGALRM, lambda *_: os._exit(3))
        signal.alarm(int(cfg["timeout_s"]) + INIT_GRACE_S)
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        program = _spawn_program(cfg, message_fd, drop, rlimits)
        while True:
            pid, status = os.wait()
            if pid == program and _ended(pid, status):
                break
        _send(message_fd, "wait_status", status)
    except BaseException as exc:
        _send(message_fd, "setup_error", f"namespace init failed: {exc!r}")
    finally:
        os._exit(0)


# ---------------------------------------------------------------------------------------------
# Supervision


def _on_signal(signum: int, frame: object) -> None:
    """SIGALRM: the wall-clock limit passed; SIGTERM: the caller asks us to stop the program."""
    if signum == signal.SIGTERM:
        _STATE["stopped"] = True
    kill = _STATE["kill"]
    if callable(kill) and kill() and signum == signal.SIGALRM:
        _STATE["timed_out"] = True  # only if the program was still there to be killed


def _killer(pid: int, group: bool) -> Callable[[], bool]:
    def kill() -> bool:
        try:
            (os.killpg if group else os.kill)(pid, signal.SIGKILL)
        except ProcessLookupError:
            return False
        return True

    return kill


def _ended(pid: int, status: int) -> bool:
    """Whether a wait status is the end of ``pid``; a stop (the program asked to be traced by
    us, ``ptrace(PTRACE_TRACEME)``, where the filter does not refuse it) kills it instead, as
    nobody here will resume it."""
    if os.WIFSTOPPED(status):
        _killer(pid, group=False)()
        return False
    return True


def _supervise(pid: int, timeout_s: float, kill: Callable[[], bool]) -> int:
    """Wait for ``pid``, killing it at the deadline or on SIGTERM; returns its wait status."""
    _STATE["kill"] = kill
    if _STATE["stopped"]:
        kill()
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    while True:
        _, status = os.waitpid(pid, 0)
        if _ended(pid, status):
            break
    signal.setitimer(signal.ITIMER_REAL, 0)
    _STATE["kill"] = None
    return status


def _read_messages(fd: int) -> dict[str, str]:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    messages = {}
    for line in b"".join(chunks).decode(errors="replace").splitlines():
        key, _, value = line.partition(" ")
        messages.setdefault(key, value)
    return messages


def _children_of(parent: int) -> list[int]:
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            children.append(int(entry))
    return children


def _reap_descendants(budget_s: float = 10.0) -> None:
    """Kill and reap every remaining descendant (they re-parent to us: we are a subreaper)."""
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            continue
        for child in _children_of(os.getpid()):
            _killer(child, group=False)()
        time.sleep(0.002)


def _count_tasks_of(uid: int) -> int:
    """Processes and threads that ``uid`` runs now (RLIMIT_NPROC counts them all)."""
    total = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    total += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                continue
    return total


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# ---------------------------------------------------------------------------------------------
# The two ways to run


def _require_world_readable(paths: list[str]) -> None:
    """Fail unless a program with a fresh uid (no groups) can reach the interpreter."""
    for path in paths:
        blocked = _blocked_ancestor(path)
        if blocked is not None:
            raise SetupError(
                f"the interpreter under {path} is not readable by an unprivileged user "
                f"({blocked} is not searchable by others); use a world-readable interpreter "
                "(SandboxConfig.python, e.g. /usr/bin/python3) or isolation='namespaces'"
            )


def _run_in_namespaces(cfg: dict) -> dict:
    drop = cfg["uid"] is not None
    files = _read_files(cfg["workdir"])
    protections = []
    if cfg["isolation"] == "userns":
        if drop:
            _require_world_readable(cfg["python_paths"])
            _drop_identity(cfg["uid"], cfg["gid"])
            protections.append("uid-drop")
        _enter_user_namespace()
        protections.append("userns")
        helpers, drop_in_program = 2, False  # we and init count in the namespace's process limit
    else:
        _unshare(NAMESPACE_FLAGS)
        helpers, drop_in_program = 0, drop
        if drop:
            protections.append("uid-drop")
    protections += ["netns", "pidns", "ipcns"]
    # Bind sources must live in the new mount namespace, and be opened before anything is hidden.
    sources, blocked = _open_sources(cfg["python_paths"], world_access=drop_in_program)
    protections += _prepare_filesystem(cfg, files, sources, cfg["hide_dirs"] + blocked)
    rlimits = _program_rlimits(cfg, cfg["max_processes"] + helpers)
    read_fd, write_fd = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(read_fd)
        _run_init(cfg, write_fd, drop_in_program, rlimits)
    os.close(write_fd)
    _supervise(init, cfg["timeout_s"], _killer(init, group=False))
    messages = _read_messages(read_fd)
    if "setup_error" in messages:
        raise SetupError(messages["setup_error"])
    status = messages.get("wait_status")
    return {"protections": protections, "wait_status": None if status is None else int(status)}


def _run_with_rlimits(cfg: dict) -> dict:
    drop = cfg["uid"] is not None
    protections = []
    if drop:
        _require_world_readable(cfg["python_paths"])
        for name in [".", *os.listdir(cfg["workdir"])]:
            os.chown(os.path.join(cfg["workdir"], name), cfg["uid"], cfg["gid"])
        protections.append("uid-drop")
        nproc = cfg["max_processes"]
    else:
        nproc = _count_tasks_of(os.getuid()) + cfg["max_processes"]
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    read_fd, write_fd = os.pipe()
    program = _spawn_program(cfg, write_fd, drop, _program_rlimits(cfg, nproc))
    os.close(write_fd)
    status = _supervise(program, cfg["timeout_s"], _killer(program, group=True))
    _reap_descendants()
    messages = _read_messages(read_fd)
    if "setup_error" in messages:
        raise SetupError(messages["setup_error"])
    protections += ["socket-hook", "subreaper"]
    return {"protections": protections, "wait_status": status}


def main(argv: list[str]) -> None:
    """Run the program that the config in ``argv[1]`` (hex of a marshal dump) describes and
    write the report (a marshal dump) to the config's status fd."""
    if argv[1:2] == ["--seccomp-probe"]:
        code = _probe_seccomp(argv[2])
        sys.stderr.flush()
        os._exit(code)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGALRM, _on_signal)
    cfg = marshal.loads(bytes.fromhex(argv[1]))
    os.set_inheritable(cfg["status_fd"], False)  # the program must not be able to forge the report
    try:
        if cfg["isolation"] == "rlimits":
            report = _run_with_rlimits(cfg)
        else:
            report = _run_in_namespaces(cfg)
        report["protections"] += ["no-new-privs", "rlimits"]
        if cfg.get("seccomp"):  # installed before exec, or the program did not start
            report["protections"].append("seccomp")
        report.update(
            cpu_s=_cpu_seconds(), timed_out=_STATE["timed_out"], stopped=_STATE["stopped"]
        )
    except SetupError as exc:
        report = {"setup_error": str(exc), "refused": exc.refused}
    except Exception as exc:
        report = {"setup_error": f"unexpected supervisor failure: {exc!r}"}
    report["isolation"] = cfg["isolation"]
    data = marshal.dumps(report)
    while data:
        data = data[os.write(cfg["status_fd"], data) :]
    os._exit(0)  # nothing left to clean up; skip interpreter teardown


if __name__ == "__main__":
    main(sys.argv)
