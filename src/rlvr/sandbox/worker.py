"""The sandbox worker: a small pre-warmed process that forks one isolated run per request.

Started by :class:`rlvr.sandbox.Sandbox` as ``python -I worker.py SLOT UID_BASE namespaces|plain``
(confinement primitives live in ``confine``)
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

import json
import os
import select
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import confine  # noqa: E402
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

def main() -> None:
    slot, uid_base, namespaces = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "namespaces"
    isolation = confine.Isolation(slot, uid_base, namespaces)
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


def run_one(request: dict, tests_fd: int, isolation: confine.Isolation) -> dict:
    limits = request["limits"]
    start = time.monotonic()
    in_namespace = isolation.pidns and confine.unshare(confine.CLONE_NEWPID)
    if not in_namespace:  # orphaned processes of the program come here, to be reaped
        confine.prctl(confine.PR_SET_CHILD_SUBREAPER, 1)
    if isolation.mountns and confine.unshare(confine.CLONE_NEWNS):  # this runner's own view of the filesystem
        confine.private_filesystem(request.get("hide", []), int(limits["fsize_mb"]) * 4)
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
        confine.kill_all(pid, isolation, in_namespace)
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


if __name__ == "__main__":
    main()
