"""The sandbox worker: a small pre-warmed process that forks one isolated run per request.

Started by :class:`rlvr.sandbox.Sandbox` as ``python -I worker.py SLOT UID_BASE namespaces|plain``
with a scrubbed environment; it never runs untrusted code itself. Per request
(read from stdin) it forks a *runner* that:

1. creates a fresh temporary working directory owned by the program's user;
2. enters a new PID namespace (when allowed), so that killing its first process
   kills every process the program started, fork bombs and ``setsid`` escapees included;
3. forks the *supervisor* (PID 1 there), which forks the program process and
   becomes the test runner (see ``harness``);
4. collects verdicts until the wall-clock deadline, kills the namespace, removes
   the directory and writes one result message to stdout.

The worker itself entered a network namespace with no interface up when it
started (when allowed); every run inherits it, so no packet leaves. Where the
kernel refuses namespaces, sockets are blocked in the program process by an
audit hook and processes are killed by process group and by user id.

Tests travel from the parent straight into the test runner through a pipe the
worker only splices, so they are never in the memory the program process is
forked from.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import wire  # noqa: E402

sys.path.pop(0)

# Imported once here so each forked program finds them ready.
PRELOAD = ("math", "re", "collections", "itertools", "functools", "heapq", "bisect", "string", "random",
           "typing", "operator", "copy", "fractions", "decimal", "datetime", "statistics", "hashlib", "json")
for _name in PRELOAD:
    __import__(_name)

#: sys.path as directory descriptors opened now, while privileged: the program's user may not be able to
#: traverse to the interpreter's directories (e.g. under /root), but it can import through these.
def open_path_fds() -> list[int]:
    return [os.open(entry, os.O_RDONLY | os.O_DIRECTORY) for entry in sys.path if os.path.isdir(entry)]


PATH_FDS = open_path_fds()

CLONE_NEWNET = 0x40000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 4096, 16384, 1 << 18
#: World-writable places the program would otherwise share with the host: fresh, private tmpfs each run.
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
_libc = ctypes.CDLL(None, use_errno=True)


def unshare(flags: int) -> bool:
    return _libc.unshare(flags) == 0


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> bool:
    def as_bytes(text: str | None) -> bytes | None:
        return text.encode() if text is not None else None

    return _libc.mount(as_bytes(source), as_bytes(target), as_bytes(fstype), flags, as_bytes(data)) == 0


def prctl(option: int, value: int) -> None:
    _libc.prctl(option, value, 0, 0, 0)


class Isolation:
    """What this kernel and user allow; reported to the parent once."""

    def __init__(self, slot: int, uid_base: int, namespaces: bool = True):
        self.root = os.geteuid() == 0
        self.program_uid = uid_base + 2 * slot if self.root else os.getuid()
        self.tester_uid = uid_base + 2 * slot + 1 if self.root else os.getuid()
        self.netns = namespaces and unshare(CLONE_NEWNET)
        self.pidns = namespaces and self._probe(lambda: unshare(CLONE_NEWPID))
        self.mountns = namespaces and self._probe(lambda: unshare(CLONE_NEWNS) and _private_filesystem([], 1))

    @staticmethod
    def _probe(attempt) -> bool:
        pid = os.fork()
        if pid == 0:
            os._exit(0 if attempt() else 1)
        _, status = os.waitpid(pid, 0)
        return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0

    def describe(self) -> dict:
        return {
            "network": "network namespace (no interfaces)" if self.netns else "sockets blocked by audit hook",
            "processes": "PID namespace" if self.pidns else "process group and user kill",
            "users": "separate unprivileged users" if self.root else "caller's user (not root)",
            "files": "mount namespace (private /tmp, hidden paths)" if self.mountns else "shared filesystem",
        }


def _private_filesystem(hide: list, size_mb: int) -> bool:
    """In a new mount namespace: fresh tmpfs on the shared scratch dirs, empty ones over ``hide``."""
    if not mount(None, "/", None, MS_REC | MS_PRIVATE):
        return False
    for path in SCRATCH:
        if os.path.isdir(path) and not os.path.islink(path):
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={max(1, size_mb)}m,mode=1777")
    for path in hide:
        if os.path.isdir(path):
            mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=555")
        elif os.path.exists(path):
            mount("/dev/null", path, None, MS_BIND)
    return True


def main() -> None:
    slot, uid_base, namespaces = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "namespaces"
    isolation = Isolation(slot, uid_base, namespaces)
    wire.send(1, {"hello": isolation.describe()})
    while True:
        request = wire.receive(0)
        if request is None:
            return
        tests_read, tests_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(tests_write)
                try:
                    result = run_one(request, tests_read, isolation)
                except Exception as error:  # report, never hang the parent
                    result = {"status": "killed", "detail": f"sandbox error: {error}"[:300], "events": []}
                wire.send(1, result)
            finally:
                os._exit(0)
        os.close(tests_read)
        _splice_tests(int(request["tests_size"]), tests_write)
        os.close(tests_write)
        os.waitpid(pid, 0)


def _splice_tests(size: int, out_fd: int) -> None:
    """Move the tests from stdin to the test runner's pipe without reading them into this process."""
    left = size
    while left:
        try:
            moved = os.splice(0, out_fd, left)
        except BrokenPipeError:  # the run ended before reading its tests: drain and move on
            moved = len(os.read(0, min(left, 1 << 20)))
        if moved == 0:
            return
        left -= moved


def run_one(request: dict, tests_fd: int, isolation: Isolation) -> dict:
    limits = request["limits"]
    start = time.monotonic()
    in_namespace = isolation.pidns and unshare(CLONE_NEWPID)
    if not in_namespace:  # orphaned processes of the program come here, to be reaped
        prctl(PR_SET_CHILD_SUBREAPER, 1)
    if isolation.mountns and unshare(CLONE_NEWNS):  # this runner's own view of the filesystem
        _private_filesystem(request.get("hide", []), int(limits["fsize_mb"]) * 4)
        global PATH_FDS
        for fd in PATH_FDS:  # opened in the old view: they would see past the hidden paths
            os.close(fd)
        PATH_FDS = open_path_fds()
    workdir = tempfile.mkdtemp(prefix="rlvr-sandbox-", dir="/tmp")
    try:
        os.chown(workdir, isolation.program_uid, isolation.program_uid)
        os.chmod(workdir, 0o700)
        verdict_read, verdict_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # never returns: an error here must not fall back into the runner's code
            try:
                os.close(verdict_read)
                _supervise(request, tests_fd, verdict_write, workdir, isolation, in_namespace)
            finally:
                os._exit(0)
        os.close(verdict_write)
        os.close(tests_fd)
        events, timed_out = _collect(verdict_read, start + float(limits["timeout"]))
        _kill_all(pid, isolation, in_namespace)
        os.close(verdict_read)
        return {"events": events, "timed_out": timed_out, "seconds": time.monotonic() - start}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _collect(fd: int, deadline: float) -> tuple[list, bool]:
    events, buffer = [], b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return events, True
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return events, True
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return events, False
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            try:
                events.append(json.loads(line))
            except ValueError:
                pass
            if events and events[-1].get("e") == "done":
                return events, False


def _kill_all(pid: int, isolation: Isolation, in_namespace: bool) -> None:
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


# --------------------------------------------------------------------------- inside the sandbox


def _supervise(request: dict, tests_fd: int, verdict_fd: int, workdir: str, isolation: Isolation,
               in_namespace: bool) -> None:
    if not in_namespace:
        os.setsid()
    elif isolation.mountns:  # a /proc that shows only this run's processes
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    calls_read, calls_write = os.pipe()
    replies_read, replies_write = os.pipe()
    program_pid = os.fork()
    if program_pid == 0:  # never returns into the supervisor's code
        try:
            _become_program(request, workdir, isolation, keep=(calls_read, replies_write))
            harness.serve_program(request["program"], request.get("setup", ""), calls_read, replies_write)
        finally:
            os._exit(0)
    os.close(calls_read)
    os.close(replies_write)
    _become_tester(request["limits"], isolation)

    def emit(event: dict) -> None:
        os.write(verdict_fd, (json.dumps(event) + "\n").encode())

    suite = json.loads(harness.read_all(tests_fd))
    os.close(tests_fd)
    try:
        defined = wire.receive(replies_read)
    except wire.WireError:
        defined = None
    if not isinstance(defined, dict) or defined.get("status") != "ok":
        status, detail = _program_end(program_pid, defined)
        emit({"e": "defined", "status": status, "detail": detail})
        emit({"e": "done", "status": status})
        return
    emit({"e": "defined", "status": "ok", "detail": ""})
    link = harness.Link(calls_write, replies_read)
    harness.run_tests(suite, link, lambda i, ok, detail: emit({"e": "test", "i": i, "ok": ok, "detail": detail}))
    status = "ok"
    if not link.alive:
        status, _ = _program_end(program_pid, None)
    emit({"e": "done", "status": status})


def _program_end(pid: int, message) -> tuple[str, str]:
    """Status of a program that did not finish: from its own message, else from how it died."""
    if isinstance(message, dict) and isinstance(message.get("status"), str):
        return message["status"], str(message.get("detail", ""))[:300]
    _, wait_status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(wait_status):
        number = os.WTERMSIG(wait_status)
        if number == signal.SIGXCPU:
            return "timeout", "CPU time limit"
        return "killed", f"killed by signal {signal.Signals(number).name}"
    return "runtime_error", f"exited with code {os.WEXITSTATUS(wait_status)}"


def _become_program(request: dict, workdir: str, isolation: Isolation, keep: tuple[int, int]) -> None:
    """Everything between fork and the program's first line: fds, directory, env, limits, user."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    _close_all_but(set(keep) | set(PATH_FDS))
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
    sys.path[:] = [f"/proc/self/fd/{fd}" for fd in PATH_FDS]
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
    }
    for kind, value in settings.items():
        resource.setrlimit(kind, value)


def _block_sockets(event: str, args) -> None:
    if event.startswith("socket.") or event in ("ctypes.dlopen", "ctypes.dlsym"):
        raise PermissionError(f"network access is disabled in the sandbox ({event})")


def _become_tester(limits: dict, isolation: Isolation) -> None:
    """The test runner: its own unprivileged user, not dumpable (the program cannot trace or read it)."""
    prctl(PR_SET_DUMPABLE, 0)
    os.chdir("/")
    mib = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (max(2048, int(limits["memory_mb"])) * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if isolation.root:
        os.setgroups([])
        os.setresgid(isolation.tester_uid, isolation.tester_uid, isolation.tester_uid)
        os.setresuid(isolation.tester_uid, isolation.tester_uid, isolation.tester_uid)
        prctl(PR_SET_DUMPABLE, 0)  # changing uid resets it


if __name__ == "__main__":
    main()
