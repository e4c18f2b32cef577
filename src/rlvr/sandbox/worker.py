"""The sandbox worker: a small pre-warmed process that forks one isolated run per request.

Started by :class:`rlvr.sandbox.Sandbox` as
``python -I -S worker.py SLOT UID_BASE namespaces|plain CGROUP WHY_NOT [REFUSE_ROOT]`` (confinement primitives
live in ``confine``, ``rootfs``, ``seccomp`` and ``memcg``) with a scrubbed environment. ``-I -S``: no
``site``, so no site-packages, ``.pth`` file, editable-install finder or venv directory is ever on its
search path, which is the base installation's standard library only, whatever the trainer's interpreter
(system, venv, conda, uv); it never runs untrusted code itself, and it never reads a request: it forks a
*runner* first, and the runner reads the next request from stdin. So no process holds another
program's text: the worker's memory, which every run is forked from, has seen none. The runner:

1. reads the request (program, limits) and enters new PID, mount and IPC namespaces (when allowed);
2. mounts a fresh private tmpfs on /tmp and /dev/shm and makes the working directory there;
3. forks the *supervisor* (PID 1 there), which forks the program process (under the seccomp filter,
   first in line for the OOM killer of the worker's memory cgroup) and becomes the test runner
   (see ``harness``);
4. moves the tests from stdin to the test runner with ``splice`` (never into its own memory);
5. collects verdicts until the wall-clock deadline, kills the namespace and writes one result to stdout.

When the worker started it entered a network namespace with no interface up and a minimal root
filesystem (standard library and system libraries only); every run inherits both. Where the kernel
refuses namespaces, sockets are blocked in the program process by an audit hook, processes are
killed by process group and by user id, and the working directory is removed by ``confine.remove_tree``.
"""

from __future__ import annotations

import json
import os
import select
import signal
import site
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import confine  # noqa: E402
import harness  # noqa: E402
import memcg  # noqa: E402, F401  (imported before the new root hides this directory)
import rootfs  # noqa: E402, F401
import seccomp  # noqa: E402, F401
import wire  # noqa: E402

sys.path.pop(0)
site.setquit()  # exit() and quit(), as under the trainer's interpreter (-S leaves them out)

# Imported once here so each forked program finds them ready.
PRELOAD = ("math", "re", "collections", "itertools", "functools", "heapq", "bisect", "string", "random",
           "typing", "operator", "copy", "fractions", "decimal", "datetime", "statistics", "hashlib", "json")
for _name in PRELOAD:
    __import__(_name)
#: Exit codes of a runner: answered, end of input, unreadable request.
ANSWERED, END_OF_INPUT, BAD_REQUEST = 0, 3, 4


def open_path_fds() -> list[int]:
    """sys.path as directory descriptors (standard library only), opened while privileged: the program's
    user may not be able to traverse to the interpreter's directories (e.g. under /root), but it can
    import through these."""
    return [os.open(entry, os.O_RDONLY | os.O_DIRECTORY) for entry in sys.path
            if os.path.isdir(entry) and os.path.basename(entry) not in ("site-packages", "dist-packages")]


PATH_FDS: list[int] = []


def main() -> None:
    global PATH_FDS
    slot, uid_base, namespaces = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "namespaces"
    cgroup, why_not, refuse_root = (sys.argv[4:7] + ["", "", ""])[:3]
    isolation = confine.Isolation(slot, uid_base, namespaces, cgroup, why_not, refuse_root)
    PATH_FDS = open_path_fds()
    wire.send(1, {"hello": isolation.describe(), "missing": isolation.missing()})
    while True:
        pid = os.fork()
        if pid == 0:
            code = BAD_REQUEST
            try:
                code = serve_one(isolation)
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == ANSWERED):
            return  # end of input, or a runner that broke mid-stream: the parent starts a fresh worker


class TestsFeed:
    """The tests that follow a request on stdin: spliced to the test runner, or dropped, never read here."""

    def __init__(self, size: int):
        self.left = size

    def splice_into(self, out_fd: int) -> None:
        while self.left:
            try:
                moved = os.splice(0, out_fd, self.left)
            except BrokenPipeError:  # the test runner is gone; discard() keeps the stream in step
                return
            if moved == 0:
                raise EOFError("input ended inside the tests")
            self.left -= moved

    def discard(self) -> None:
        while self.left:
            chunk = os.read(0, min(self.left, 1 << 20))
            if not chunk:
                return
            self.left -= len(chunk)


def serve_one(isolation: confine.Isolation) -> int:
    """In a fresh runner: read one request, run it, answer. Returns the runner's exit code."""
    try:
        request = wire.receive(0)
    except wire.WireError:
        return BAD_REQUEST
    if request is None:
        return END_OF_INPUT
    tests = TestsFeed(int(request.get("tests_size", 0)))
    try:
        result = run_one(request, tests, isolation)
    except BaseException as error:  # report, never hang the parent
        result = {"status": "killed", "detail": f"sandbox error: {type(error).__name__}: {error}"[:300], "events": []}
    tests.discard()
    wire.send(1, result)
    return ANSWERED


def run_one(request: dict, tests: TestsFeed, isolation: confine.Isolation) -> dict:
    global PATH_FDS
    limits = request["limits"]
    start = time.monotonic()
    in_namespace = isolation.pidns and confine.unshare(confine.CLONE_NEWPID)
    if not in_namespace:  # orphaned processes of the program come here, to be reaped
        confine.prctl(confine.PR_SET_CHILD_SUBREAPER, 1)
    private = isolation.mountns and confine.unshare(confine.CLONE_NEWNS)
    if private:  # this runner's own view of the filesystem
        confine.private_filesystem(request.get("hide", []), int(limits["fsize_mb"]) * 4, isolation.pinned)
        for fd in PATH_FDS:  # opened in the old view: they would see past the hidden paths
            os.close(fd)
        PATH_FDS = open_path_fds()
    if isolation.ipcns:
        confine.unshare(confine.CLONE_NEWIPC)
    workdir = tempfile.mkdtemp(prefix="rlvr-sandbox-", dir="/tmp")
    cgroup = isolation.memory.limit_run(int(limits["memory_mb"]))
    try:
        os.chown(workdir, isolation.program_uid, isolation.program_uid)
        os.chmod(workdir, 0o700)
        tests_read, tests_write = os.pipe()
        verdict_read, verdict_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # never returns: an error here must not fall back into the runner's code
            try:
                os.close(verdict_read)
                os.close(tests_write)
                _supervise(request, tests_read, verdict_write, workdir, isolation, in_namespace)
            finally:
                os._exit(0)
        os.close(verdict_write)
        os.close(tests_read)
        try:
            tests.splice_into(tests_write)
        finally:
            os.close(tests_write)
        events, timed_out = _collect(verdict_read, start + float(limits["timeout"]))
        confine.kill_all(pid, isolation, in_namespace)
        os.close(verdict_read)
        answer = {"events": events, "timed_out": timed_out, "seconds": time.monotonic() - start}
        if cgroup is not None and cgroup.exceeded():
            answer["memory_exceeded"] = True
        return answer
    finally:
        if not private:  # a private /tmp goes with the mount namespace; the host's needs removing
            confine.remove_tree(workdir)


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


# --------------------------------------------------------------------------- inside the sandbox


def _supervise(request: dict, tests_fd: int, verdict_fd: int, workdir: str, isolation: confine.Isolation,
               in_namespace: bool) -> None:
    if not in_namespace:
        os.setsid()
    elif isolation.mountns:  # a /proc that shows only this run's processes
        confine.mount("proc", "/proc", "proc", confine.MS_NOSUID | confine.MS_NODEV | confine.MS_NOEXEC)
    calls_read, calls_write = os.pipe()
    replies_read, replies_write = os.pipe()
    program_pid = os.fork()
    if program_pid == 0:  # never returns into the supervisor's code
        try:
            confine.become_program(request, workdir, isolation, (calls_read, replies_write), PATH_FDS)
            harness.serve_program(request["program"], request.get("setup", ""), calls_read, replies_write)
        finally:
            os._exit(0)
    os.close(calls_read)
    os.close(replies_write)
    confine.become_tester(request["limits"], isolation)

    def emit(event: dict) -> None:
        os.write(verdict_fd, (json.dumps(event) + "\n").encode())

    suite = json.loads(harness.read_all(tests_fd))
    os.close(tests_fd)
    link = harness.Link(calls_write, replies_read, harness.watch(program_pid))
    defined = link.receive()
    if not isinstance(defined, dict) or defined.get("status") != "ok":
        status, detail = _program_end(program_pid, defined)
        emit({"e": "defined", "status": status, "detail": detail})
        emit({"e": "done", "status": status})
        return
    emit({"e": "defined", "status": "ok", "detail": ""})
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


if __name__ == "__main__":
    main()
