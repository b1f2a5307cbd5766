"""The sandbox's system-call filter: what a sandboxed program may not ask the kernel.

The filter is compiled by libseccomp (through its ctypes bindings, ``pyseccomp``) into a
classic-BPF program once per process (``process.seccomp_program`` checks once that the
kernel takes it and hands it to every run); the supervisor installs those bytes in the program's
process after the namespaces, the uid drop and ``no_new_privs``, right before exec, so the
program and every process it starts run under it (``supervisor.install_seccomp``). The default
is to allow; the calls below fail with ``EPERM``, as under Docker's default profile for an
unprivileged container (docs/rewards/sandbox.md lists them with the reasons):

- new namespaces: ``unshare`` and ``clone`` with any ``CLONE_NEW*`` flag, ``setns``;
  ``clone3`` fails with ``ENOSYS`` (its flags sit in memory, out of a filter's reach), so the C
  library falls back to ``clone``, which is checked;
- mounts (``mount``, ``umount2``, ``pivot_root``, the new mount API), keyrings, ``bpf``,
  ``perf_event_open``, ``userfaultfd``, ``io_uring_*``, module loading and ``kexec``,
  ``open_by_handle_at``, ``ptrace``, ``process_vm_*``, ``reboot``, swap, ``acct``,
  quotas, ``lookup_dcookie``, ``iopl``/``ioperm``, clock setting, ``chroot``, ``syslog``,
  ``kcmp``, ``pidfd_getfd`` and a few obsolete calls;
- ``personality`` with any flag but ``PER_LINUX32`` and ``UNAME26`` (so no
  ``ADDR_NO_RANDOMIZE``, ``READ_IMPLIES_EXEC`` or ``MMAP_PAGE_ZERO``);
- the ``TIOCSTI`` and ``TIOCLINUX`` ioctls (typing into the caller's terminal);
- a system call of another architecture (a 32-bit ``int 0x80`` or an x32 call on x86-64) kills
  the process.
"""

from __future__ import annotations

import errno
import functools
import platform
import tempfile

#: Calls refused outright with EPERM (names not on this architecture are skipped).
DENIED = (
    # namespaces and mounts
    "setns",
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    # kernel interfaces behind most container escapes
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    # the kernel itself, other processes, the machine
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "open_by_handle_at",
    "name_to_handle_at",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "quotactl_fd",
    "lookup_dcookie",
    "iopl",
    "ioperm",
    "syslog",
    "clock_settime",
    "clock_adjtime",
    "settimeofday",
    "stime",
    "fanotify_init",
    "vhangup",
    "sethostname",
    "setdomainname",
    # NUMA memory policy (Docker: CAP_SYS_NICE only)
    "get_mempolicy",
    "set_mempolicy",
    "set_mempolicy_home_node",
    "mbind",
    "move_pages",
    "migrate_pages",
    "process_madvise",
    # obsolete
    "sysfs",
    "ustat",
    "uselib",
    "nfsservctl",
    "_sysctl",
    "get_kernel_syms",
    "query_module",
    "vm86",
    "vm86old",
)

#: Calls newer than some libseccomp releases know by name, with their number, which is the same
#: on every architecture for calls added since Linux 5.1 (the unified table, from 424 on).
NEWER_CALLS = {"open_tree_attr": 467, "listmount": 458, "statmount": 457}
#: Of those, the ones refused (listmount and statmount only read mount information).
NEWER_DENIED = ("open_tree_attr",)

#: Address families a program may not open a socket of: AF_VSOCK (40), the channel from a
#: virtual machine to its host, which no network namespace contains.
DENIED_SOCKET_FAMILIES = {"AF_VSOCK": 40}

#: The namespace flags of clone and unshare (CLONE_NEWTIME only for unshare: in clone's first
#: argument that bit belongs to the exit signal).
NAMESPACE_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
CLONE_NEWTIME = 0x00000080

#: personality() values that stay allowed: PER_LINUX (0), PER_LINUX32 (0x8), UNAME26
#: (0x20000) and their combination; any other bit is refused.
PERSONALITY_ALLOWED_BITS = 0x0008 | 0x20000

#: ioctls that push input into a terminal (TIOCSTI) or drive the console (TIOCLINUX).
DENIED_IOCTLS = {"TIOCSTI": 0x5412, "TIOCLINUX": 0x541C}


class SeccompUnavailable(RuntimeError):
    """No filter can be built or installed here (libseccomp or pyseccomp missing, or the
    kernel refuses seccomp filters)."""


@functools.cache
def filter_program(denied_errno: int = errno.EPERM) -> bytes:
    """The filter as classic-BPF bytes (``struct sock_filter`` entries), compiled by
    libseccomp for this machine's architecture; refused calls fail with ``denied_errno``
    (tests use a distinctive one, to tell the filter's answer from the kernel's).
    :class:`SeccompUnavailable` when libseccomp cannot be loaded or compile it."""
    try:
        import pyseccomp as sc
    except (ImportError, OSError, AttributeError) as err:  # the bindings or libseccomp.so.2
        raise SeccompUnavailable(f"libseccomp cannot be loaded ({err})") from err
    try:
        return _compile(sc, denied_errno)
    except OSError as err:  # e.g. a libseccomp or kernel too old for an attribute
        raise SeccompUnavailable(f"libseccomp cannot compile the filter ({err})") from err


def _compile(sc, denied_errno: int) -> bytes:
    deny = sc.ERRNO(denied_errno)
    flt = sc.SyscallFilter(sc.ALLOW)
    flt.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    arch = sc.system_arch()
    for name in (*DENIED, *NEWER_DENIED):
        number = _number(sc, arch, name)
        if number is not None:
            flt.add_rule(deny, number)
    clone_flags = 1 if platform.machine() in ("s390", "s390x") else 0  # s390 swaps them
    for flag in NAMESPACE_FLAGS.values():
        flt.add_rule(deny, "clone", sc.Arg(clone_flags, sc.MASKED_EQ, flag, flag))
    for flag in (*NAMESPACE_FLAGS.values(), CLONE_NEWTIME):
        flt.add_rule(deny, "unshare", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    if _number(sc, arch, "clone3") is not None:
        flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for bit in range(32):
        if not (1 << bit) & PERSONALITY_ALLOWED_BITS:
            flt.add_rule(deny, "personality", sc.Arg(0, sc.MASKED_EQ, 1 << bit, 1 << bit))
    flt.add_rule(deny, "personality", sc.Arg(0, sc.GT, 0xFFFFFFFF))
    for request in DENIED_IOCTLS.values():  # the kernel reads the request as 32 bits
        flt.add_rule(deny, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))
    for family in DENIED_SOCKET_FAMILIES.values():  # an int: 32 bits too
        flt.add_rule(deny, "socket", sc.Arg(0, sc.MASKED_EQ, 0xFFFFFFFF, family))
    with tempfile.TemporaryFile() as handle:
        flt.export_bpf(handle)
        handle.seek(0)
        return handle.read()


def _number(sc, arch: int, name: str) -> int | None:
    """The call's number here; None where this architecture lacks it. A call this libseccomp
    does not know by name is found in :data:`NEWER_CALLS`; any other unknown name is an
    error, so no rule is dropped unnoticed."""
    try:
        number = sc.resolve_syscall(arch, name)
    except (OSError, ValueError):
        number = -1
    if number >= 0:
        return number
    if number == -1:  # __NR_SCMP_ERROR: not a name this libseccomp knows
        if name in NEWER_CALLS:
            return NEWER_CALLS[name]
        raise SeccompUnavailable(f"libseccomp does not know the system call {name!r}")
    return None  # a pseudo-number: a call of other architectures only


__all__ = ["DENIED", "SeccompUnavailable", "filter_program"]
