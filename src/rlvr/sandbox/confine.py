"""Confinement primitives for the sandbox worker: namespaces, mounts, limits, users, killing, cleanup.

Stdlib only (ctypes for unshare/mount/prctl/pivot_root, which Python 3.11's os lacks); loaded by the
sandbox worker, outside the rlvr package.
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import signal
import stat
import sys
import tempfile
import time

CLONE_NEWNET = 0x40000000
CLONE_NEWPID = 0x20000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
#: World-writable places the program would otherwise share with the host: fresh, private tmpfs each run.
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(platform.machine())
_libc = ctypes.CDLL(None, use_errno=True)


def unshare(flags: int) -> bool:
    return _libc.unshare(flags) == 0


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> bool:
    def as_bytes(text: str | None) -> bytes | None:
        return text.encode() if text is not None else None

    return _libc.mount(as_bytes(source), as_bytes(target), as_bytes(fstype), flags, as_bytes(data)) == 0


def umount(target: str, flags: int) -> bool:
    return _libc.umount2(target.encode(), flags) == 0


def pivot_root(new_root: str, put_old: str) -> bool:
    if _PIVOT_ROOT is None:
        return False
    return _libc.syscall(_PIVOT_ROOT, new_root.encode(), put_old.encode()) == 0


def prctl(option: int, value: int) -> None:
    _libc.prctl(option, value, 0, 0, 0)


class Isolation:
    """What this kernel and user allow; reported to the parent once, with the reason for each fallback."""

    def __init__(self, slot: int, uid_base: int, namespaces: bool = True, cgroup_dir: str = "", no_cgroup: str = "",
                 refuse_root: str = ""):
        import memcg
        import rootfs
        import seccomp

        self.root = os.geteuid() == 0
        self.program_uid = uid_base + 2 * slot if self.root else os.getuid()
        self.tester_uid = uid_base + 2 * slot + 1 if self.root else os.getuid()
        self.memory = memcg.SlotCgroup.open(cgroup_dir, no_cgroup)  # before the new root hides /sys
        self.netns = namespaces and unshare(CLONE_NEWNET)
        if not namespaces:
            self.rootfs_reason = "namespaces switched off"
        else:
            self.rootfs_reason = rootfs.enter(refuse_root) if self.root else "not root"
        #: (staged copy, path) that each run binds back into its fresh scratch directories (rootfs.PINNED).
        self.pinned = list(rootfs.PINNED) if namespaces and not self.rootfs_reason else []
        self.pidns = namespaces and self._probe(lambda: unshare(CLONE_NEWPID))
        self.mountns = namespaces and self._probe(lambda: unshare(CLONE_NEWNS) and private_filesystem([], 1, self.pinned))
        self.ipcns = namespaces and self._probe(lambda: unshare(CLONE_NEWIPC))
        self.seccomp = seccomp.Filter()
        self.seccomp.probe()

    @staticmethod
    def _probe(attempt) -> bool:
        pid = os.fork()
        if pid == 0:
            os._exit(0 if attempt() else 1)
        _, status = os.waitpid(pid, 0)
        return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0

    def describe(self) -> dict:
        if not self.rootfs_reason:
            files = "minimal root (standard library and system libraries, read-only), private /tmp"
        elif self.mountns:
            files = f"mount namespace (private /tmp, hidden paths); no minimal root: {self.rootfs_reason}"
        else:
            files = "shared filesystem"
        kernel = ("seccomp filter (no namespaces, keys, memfd, SysV IPC, message queues, ptrace, bpf, mounts, "
                  "modules)") if self.seccomp.available else f"no seccomp filter: {self.seccomp.reason}"
        memory = (f"memory cgroup {self.memory.version}: all of a program's processes together"
                  if self.memory.available else f"rlimit per process; no memory cgroup: {self.memory.reason}")
        return {
            "network": "network namespace (no interfaces)" if self.netns else "sockets blocked by audit hook",
            "processes": "PID namespace" if self.pidns else "process group and user kill",
            "users": "separate unprivileged users" if self.root else "caller's user (not root)",
            "files": files,
            "ipc": "IPC namespace" if self.ipcns else "shared IPC namespace",
            "kernel": kernel,
            "memory": memory,
        }

    def missing(self) -> list[str]:
        """Each layer of full isolation this worker lacks: what, why, and how to allow it (empty: full isolation)."""
        allow_ns = ("allow namespaces and mounts: root in a container started with --cap-add SYS_ADMIN "
                    "--security-opt seccomp=unconfined --security-opt apparmor=unconfined, or --privileged")
        missing = []
        if self.rootfs_reason == "namespaces switched off":
            missing.append("namespaces switched off (Sandbox(namespaces=False)): no minimal root, no PID, mount, "
                           "IPC or network namespace")
        if not self.root:
            missing.append("not root: no namespaces, minimal root, memory cgroup or separate users "
                           "(run rlvr as root, e.g. in a container)")
        elif self.rootfs_reason != "namespaces switched off":
            for present, layer in ((self.netns, "network namespace"), (self.pidns, "PID namespace"),
                                   (self.mountns, "mount namespace"), (self.ipcns, "IPC namespace")):
                if not present:
                    missing.append(f"{layer}: refused by the kernel ({allow_ns})")
            if self.rootfs_reason:
                hint = allow_ns if self.rootfs_reason in ("no mount namespace", "cannot make the mounts private",
                                                          "cannot mount a tmpfs for the new root",
                                                          "pivot_root refused") else \
                    "see docs/code-rewards.md, 'Interpreter layouts'"
                missing.append(f"minimal root: {self.rootfs_reason} ({hint})")
        if self.root and not self.memory.available:
            missing.append(f"memory cgroup: {self.memory.reason} (a writable cgroup v1 memory hierarchy, or "
                           "cgroup v2 with the memory controller delegated, e.g. docker --privileged or "
                           "--cgroupns=private)")
        if not self.seccomp.available:
            missing.append(f"seccomp: {self.seccomp.reason} (x86_64 or aarch64, a kernel with seccomp filters)")
        return missing


def private_filesystem(hide: list, size_mb: int, pinned: list = ()) -> bool:
    """In a new mount namespace: fresh tmpfs on the shared scratch dirs, empty ones over ``hide``.

    ``pinned``: (staged copy, path) pairs of the minimal root (``rootfs.PINNED``): parts of the interpreter's
    installation that lie in a scratch directory, bound back into the fresh tmpfs (read-only, root's).
    """
    if not mount(None, "/", None, MS_REC | MS_PRIVATE):
        return False
    for path in SCRATCH:
        if os.path.isdir(path) and not os.path.islink(path):
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={max(1, size_mb)}m,mode=1777")
    pinned_ok = True
    for stage, path in pinned:
        try:
            if os.path.isdir(stage):
                os.makedirs(path, mode=0o755, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
                open(path, "a").close()
            pinned_ok = mount(stage, path, None, MS_BIND | MS_REC) and pinned_ok
        except OSError:
            pinned_ok = False
    for path in hide:
        if os.path.isdir(path):
            mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=555")
        elif os.path.exists(path):
            mount("/dev/null", path, None, MS_BIND)
    return pinned_ok  # False: the worker's probe reports no usable mount namespace


def kill_all(pid: int, isolation: Isolation, in_namespace: bool) -> None:
    """Kill the supervisor; in a PID namespace the kernel then kills everything inside and waits."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if in_namespace:
        os.waitpid(pid, 0)
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    uids = {isolation.program_uid, isolation.tester_uid} if isolation.root else set()
    for _ in range(200):  # orphans come to this subreaper; kill by user until none is left
        _reap_children()
        if not _living_processes(uids):
            if uids:  # everything left is a zombie of ours: reap it all before answering
                _reap_children(block=True)
            return
        for uid in uids:
            _kill_user(uid)
        time.sleep(0.002)


def _kill_user(uid: int) -> None:
    """SIGKILL every process of ``uid``: a child takes that uid and kills -1 (all it may signal)."""
    killer = os.fork()
    if killer == 0:
        os.setresuid(uid, uid, uid)
        try:
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(killer, 0)


def _living_processes(uids: set) -> bool:
    """Whether a process (not a zombie) of one of ``uids`` is still running, from /proc."""
    for entry in os.listdir("/proc") if uids else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
        except OSError:
            continue
        if int(fields.get("Uid", "-1 0").split()[0]) in uids and not fields.get("State", "").strip().startswith("Z"):
            return True
    return False


def _reap_children(block: bool = False) -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:  # children remain, none has exited yet
            return


def become_program(request: dict, workdir: str, isolation: Isolation, keep: tuple[int, int], path_fds: list[int]) -> None:
    """Everything between fork and the program's first line: fds, directory, env, limits, user, filter."""
    import memcg

    if isolation.memory.available:
        memcg.program_first()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    _close_all_but(set(keep) | set(path_fds))
    os.chdir(workdir)
    os.environ.clear()
    os.environ.update({"PATH": "/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8"})
    tempfile.tempdir = workdir
    limits = request["limits"]
    cpu = max(1, int(float(limits["timeout"]) + 0.999))
    _set_limits(cpu, limits)
    if isolation.root:
        os.setgroups([])
        os.setresgid(isolation.program_uid, isolation.program_uid, isolation.program_uid)
        os.setresuid(isolation.program_uid, isolation.program_uid, isolation.program_uid)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if isolation.seccomp.available and not isolation.seccomp.install():
        os._exit(125)  # never run a program with less confinement than the worker reported
    sys.path[:] = [f"/proc/self/fd/{fd}" for fd in path_fds]
    sys.path_importer_cache.clear()
    if not isolation.netns:
        sys.addaudithook(_block_sockets)


def _close_all_but(keep: set[int]) -> None:
    start = 3
    for fd in sorted(keep) + [1 << 16]:
        if fd >= start:
            os.closerange(start, fd)
            start = fd + 1


def _set_limits(cpu: int, limits: dict) -> None:
    mib = 1024 * 1024
    settings = {
        resource.RLIMIT_CPU: (cpu, cpu + 1),
        resource.RLIMIT_AS: (int(limits["memory_mb"]) * mib,) * 2,
        resource.RLIMIT_NPROC: (int(limits["nproc"]),) * 2,
        resource.RLIMIT_FSIZE: (int(limits["fsize_mb"]) * mib,) * 2,
        resource.RLIMIT_NOFILE: (int(limits["nofile"]),) * 2,
        resource.RLIMIT_CORE: (0, 0),
        resource.RLIMIT_MSGQUEUE: (0, 0),
    }
    for kind, value in settings.items():
        resource.setrlimit(kind, value)


def _block_sockets(event: str, args) -> None:
    if event.startswith("socket.") or event in ("ctypes.dlopen", "ctypes.dlsym"):
        raise PermissionError(f"network access is disabled in the sandbox ({event})")


def become_tester(limits: dict, isolation: Isolation) -> None:
    """The test runner: its own unprivileged user, not dumpable (the program cannot trace or read it).

    Its stdio goes to /dev/null: what the tests print must not reach the worker's answer pipe.
    """
    prctl(PR_SET_DUMPABLE, 0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    os.chdir("/")
    mib = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (max(2048, int(limits["memory_mb"])) * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if isolation.root:
        os.setgroups([])
        os.setresgid(isolation.tester_uid, isolation.tester_uid, isolation.tester_uid)
        os.setresuid(isolation.tester_uid, isolation.tester_uid, isolation.tester_uid)
        prctl(PR_SET_DUMPABLE, 0)  # changing uid resets it


def remove_tree(path: str) -> str:
    """Remove ``path`` whatever a program left there; never raises. '' when gone, else what was left.

    Flattens instead of recursing: every entry of a subdirectory is renamed up into the top directory
    before the subdirectory is removed, so depth costs neither recursion nor open descriptors nor path
    length. Directories are made accessible before they are opened (a program may leave mode 000 or
    read-only directories that a non-root caller could not list or unlink in).
    """
    try:
        os.chmod(path, 0o700, follow_symlinks=False)
        top = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return ""
    except OSError as error:
        return f"cannot open {path}: {error}"
    try:
        _empty(top)
    except BaseException as error:  # noqa: BLE001 - cleanup reports, it never takes a verdict down with it
        return f"cleanup of {path} failed: {type(error).__name__}: {error}"[:300]
    finally:
        os.close(top)
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as error:
        return f"{path} could not be removed: {error}"
    return ""


def _empty(top: int) -> None:
    moved = 0
    seen: list[str] | None = None
    while True:
        names = _list(top)
        if not names or names == seen:  # empty, or no progress since the last look
            return
        seen = names
        for name in names:
            try:
                info = os.stat(name, dir_fd=top, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if not stat.S_ISDIR(info.st_mode):
                _quietly(os.unlink, name, dir_fd=top)
                continue
            _quietly(os.chmod, name, 0o700, dir_fd=top, follow_symlinks=False)
            try:
                inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=top)
            except OSError:
                continue
            try:
                for child in _list(inner, limit=1 << 20):
                    moved += 1
                    _quietly(os.rename, child, f".rlvr-flat-{moved}", src_dir_fd=inner, dst_dir_fd=top)
            finally:
                os.close(inner)
            _quietly(os.rmdir, name, dir_fd=top)


def _list(fd: int, limit: int = 4096) -> list[str]:
    try:
        with os.scandir(fd) as entries:
            names = []
            for entry in entries:
                names.append(entry.name)
                if len(names) >= limit:
                    break
            return names
    except OSError:
        return []


def _quietly(func, *args, **kwargs) -> None:
    try:
        func(*args, **kwargs)
    except OSError:
        pass
