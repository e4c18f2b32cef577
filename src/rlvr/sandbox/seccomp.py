"""A seccomp filter for the program process: kernel surfaces a test program never needs.

Built here as classic BPF through ctypes (no libseccomp needed), installed with ``prctl`` after
the program's user is set and ``no_new_privs`` is on. Denied calls fail with ``EPERM`` (``clone3``
with ``ENOSYS``, so the C library falls back to ``clone``, whose flags the filter can read); a
system call of another ABI (32-bit ``int 0x80``, x32) kills the process.

Denied: user and other namespaces (``unshare``, ``setns``, ``clone`` with a ``CLONE_NEW*`` flag),
kernel keys (``add_key``, ``keyctl``, ``request_key``), anonymous memory files (``memfd_create``,
``memfd_secret``: memory outside the address-space limit), SysV IPC and POSIX message queues,
tracing (``ptrace``, ``process_vm_*``, ``perf_event_open``, ``kcmp``, ``pidfd_getfd``), ``bpf``,
``userfaultfd``, ``io_uring``, every mount call, ``chroot``, kernel modules and ``kexec``, and the
administrative calls (``swapon``, ``reboot``, ``acct``, ``quotactl``, ``syslog``, handle-based opens,
``fanotify``, ``iopl``/``ioperm``).

Stdlib only: loaded by the sandbox worker, outside the rlvr package.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

#: System call numbers by machine: x86_64 first, aarch64 (the generic table) second.
_NUMBERS = {
    "unshare": (272, 97), "setns": (308, 268), "clone": (56, 220), "clone3": (435, 435),
    "add_key": (248, 217), "keyctl": (250, 219), "request_key": (249, 218),
    "memfd_create": (319, 279), "memfd_secret": (447, 447),
    "shmget": (29, 194), "shmat": (30, 196), "shmctl": (31, 195), "shmdt": (67, 197),
    "semget": (64, 190), "semop": (65, 193), "semctl": (66, 191), "semtimedop": (220, 192),
    "msgget": (68, 186), "msgsnd": (69, 189), "msgrcv": (70, 188), "msgctl": (71, 187),
    "mq_open": (240, 180), "mq_unlink": (241, 181), "mq_timedsend": (242, 182), "mq_timedreceive": (243, 183),
    "mq_notify": (244, 184), "mq_getsetattr": (245, 185),
    "ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "perf_event_open": (298, 241), "kcmp": (312, 272), "pidfd_getfd": (438, 438),
    "bpf": (321, 280), "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
    "mount": (165, 40), "umount2": (166, 39), "pivot_root": (155, 41), "chroot": (161, 51),
    "open_tree": (428, 428), "move_mount": (429, 429), "fsopen": (430, 430), "fsconfig": (431, 431),
    "fsmount": (432, 432), "fspick": (433, 433), "mount_setattr": (442, 442),
    "init_module": (175, 105), "finit_module": (313, 273), "delete_module": (176, 106),
    "kexec_load": (246, 104), "kexec_file_load": (320, 294),
    "swapon": (167, 224), "swapoff": (168, 225), "reboot": (169, 142), "acct": (163, 89),
    "quotactl": (179, 60), "syslog": (103, 116), "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264), "fanotify_init": (300, 262), "lookup_dcookie": (212, 18),
    "iopl": (172, None), "ioperm": (173, None),
}
DENIED = tuple(name for name in _NUMBERS if name not in ("clone", "clone3"))
_ARCHES = {"x86_64": (0, 0xC000003E), "aarch64": (1, 0xC00000B7)}
#: CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET.
_NEW_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
_X32_BIT = 0x40000000

_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_KILL_PROCESS, _ALLOW, _ERRNO = 0x80000000, 0x7FFF0000, 0x00050000
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_libc = ctypes.CDLL(None, use_errno=True)


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def build(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one) as BPF bytes; None on an unlisted architecture."""
    machine = machine or platform.machine()
    if machine not in _ARCHES:
        return None
    column, audit_arch = _ARCHES[machine]
    deny = _RET, _ERRNO | errno.EPERM
    code = [_op(_LD_W_ABS, 4), _op(_JEQ, audit_arch, 1, 0), _op(_RET, _KILL_PROCESS), _op(_LD_W_ABS, 0)]
    if machine == "x86_64":
        code += [_op(_JGE, _X32_BIT, 0, 1), _op(_RET, _KILL_PROCESS)]
    for name in DENIED:
        number = _NUMBERS[name][column]
        if number is not None:
            code += [_op(_JEQ, number, 0, 1), _op(*deny)]
    code += [_op(_JEQ, _NUMBERS["clone3"][column], 0, 1), _op(_RET, _ERRNO | errno.ENOSYS)]
    # clone: flags are the first argument (offset 16, low word); a new namespace is refused.
    code += [_op(_JEQ, _NUMBERS["clone"][column], 0, 3), _op(_LD_W_ABS, 16),
             _op(_JSET, _NEW_NAMESPACE_FLAGS, 0, 1), _op(*deny)]
    code.append(_op(_RET, _ALLOW))
    return b"".join(code)


class Filter:
    """A built filter, ready to install in a process that already has ``no_new_privs``."""

    def __init__(self, machine: str | None = None):
        program = build(machine)
        self.reason = "" if program else f"no seccomp filter for the {platform.machine()} architecture"
        self._buffer = ctypes.create_string_buffer(program or b"")
        self._program = _Program(len(program or b"") // 8, ctypes.addressof(self._buffer))

    @property
    def available(self) -> bool:
        return not self.reason

    def install(self) -> bool:
        if not self.available:
            return False
        return _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(self._program), 0, 0) == 0

    def probe(self) -> bool:
        """Whether the kernel accepts the filter and it denies memfd_create (in a throwaway child)."""
        if not self.available:
            return False
        pid = os.fork()
        if pid == 0:
            try:
                _libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
                if not self.install():
                    os._exit(2)
                try:
                    os.close(os.memfd_create("probe"))
                except PermissionError:
                    os._exit(0)
                os._exit(3)
            finally:
                os._exit(4)
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            return True
        self.reason = "the kernel refused the seccomp filter"
        return False
