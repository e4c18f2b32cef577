"""A memory cgroup per run: one limit for all of a program's processes, whatever allocates.

``RLIMIT_AS`` is per process and counts only mappings: a program that forks, or holds memory in
tmpfs files, pipes or kernel objects, goes past it. The parent (:mod:`rlvr.sandbox.executor`)
makes one cgroup directory per worker under its own memory cgroup (v1 ``memory`` controller, or
v2 where ``memory`` is delegated to its children); the worker opens it before its new root hides
``/sys``, and each run makes a child ``run-PID`` there, sets ``limit`` (swap too), moves the
program process in (``cgroup.procs`` <- 0) and removes it after the run. The kernel then reclaims
or kills inside the run only; an OOM kill shows in the run's counter and is reported as ``memory``.

Stdlib only: loaded by the sandbox worker, outside the rlvr package.
"""

from __future__ import annotations

import os
import time

_FILES = {
    "v1": {"limit": "memory.limit_in_bytes", "swap": "memory.memsw.limit_in_bytes", "events": "memory.oom_control"},
    "v2": {"limit": "memory.max", "swap": "memory.swap.max", "events": "memory.events"},
}


class SlotCgroup:
    """The worker's cgroup directory, held open by descriptor."""

    def __init__(self, fd: int | None, version: str, reason: str = ""):
        self.fd, self.version, self.reason = fd, version, reason

    @classmethod
    def open(cls, path: str, why_not: str = "") -> SlotCgroup:
        if not path:
            return cls(None, "", why_not or "no cgroup directory given")
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as error:
            return cls(None, "", f"cannot open {path}: {error.strerror}")
        for version, files in _FILES.items():
            try:
                os.stat(files["limit"], dir_fd=fd)
                return cls(fd, version)
            except OSError:
                continue
        os.close(fd)
        return cls(None, "", f"{path} has no memory controller")

    @property
    def available(self) -> bool:
        return self.fd is not None

    def for_run(self, memory_mb: int) -> RunCgroup | None:
        """A fresh child cgroup limited to ``memory_mb``; None (and the run goes on without) on failure."""
        if self.fd is None:
            return None
        try:
            return RunCgroup(self.fd, self.version, memory_mb)
        except OSError:
            return None


class RunCgroup:
    def __init__(self, slot_fd: int, version: str, memory_mb: int):
        self.slot_fd, self.files = slot_fd, _FILES[version]
        self.name = f"run-{os.getpid()}"
        try:
            os.mkdir(self.name, dir_fd=slot_fd)
        except FileExistsError:
            pass
        self.fd = os.open(self.name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=slot_fd)
        limit = str(int(memory_mb) * 1024 * 1024)
        self._write(self.files["limit"], limit)
        try:  # no swap: the limit holds for memory and swap together
            self._write(self.files["swap"], limit if version == "v1" else "0")
        except OSError:
            pass
        self.procs = os.open("cgroup.procs", os.O_WRONLY, dir_fd=self.fd)

    def _write(self, name: str, value: str) -> None:
        fd = os.open(name, os.O_WRONLY, dir_fd=self.fd)
        try:
            os.write(fd, value.encode())
        finally:
            os.close(fd)

    def join(self) -> None:
        """Move the calling process (the program, before it runs) into the cgroup."""
        os.write(self.procs, b"0")

    def oom_kills(self) -> int:
        try:
            fd = os.open(self.files["events"], os.O_RDONLY, dir_fd=self.fd)
            try:
                text = os.read(fd, 4096).decode()
            finally:
                os.close(fd)
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def remove(self) -> None:
        """Remove the run's cgroup once its processes are gone; never raises."""
        for fd in (self.procs, self.fd):
            try:
                os.close(fd)
            except OSError:
                pass
        for _ in range(100):  # the last exiting task may leave it busy for a moment
            try:
                os.rmdir(self.name, dir_fd=self.slot_fd)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.002)


# --------------------------------------------------------------------------- parent side (host view)

PREFIX = "rlvr-sandbox-"


def parent_dir() -> tuple[str, str]:
    """(this process's memory cgroup directory, '') where children can be made; ('', why not) otherwise."""
    if os.geteuid() != 0:
        return "", "not root"
    try:
        with open("/proc/self/cgroup") as handle:
            lines = [line.strip().split(":", 2) for line in handle if line.count(":") >= 2]
    except OSError as error:
        return "", f"cannot read /proc/self/cgroup: {error.strerror}"
    for _, controllers, path in lines:
        if "memory" in controllers.split(","):
            base = f"/sys/fs/cgroup/memory{path}".rstrip("/")
            if os.path.isfile(f"{base}/memory.limit_in_bytes") and os.access(base, os.W_OK):
                return base, ""
            return "", f"memory cgroup v1 at {base} is not writable"
    for hierarchy, _, path in lines:
        if hierarchy == "0":
            base = f"/sys/fs/cgroup{path}".rstrip("/")
            try:
                with open(f"{base}/cgroup.subtree_control") as handle:
                    delegated = "memory" in handle.read().split()
            except OSError:
                delegated = False
            if delegated and os.access(base, os.W_OK):
                return base, ""
            return "", f"cgroup v2 at {base} does not delegate the memory controller to children"
    return "", "no memory cgroup"


def make_worker_dir(base: str, slot: int) -> str:
    """A cgroup directory for one worker ('' when it cannot be made); remove it with :func:`remove_dir`."""
    if not base:
        return ""
    path = f"{base}/{PREFIX}{os.getpid()}-{slot}-{time.monotonic_ns()}"
    try:
        os.mkdir(path)
    except OSError:
        return ""
    return path


def remove_dir(path: str, wait: float = 1.0) -> bool:
    """Remove a worker's cgroup directory and its runs' once their processes are gone; never raises."""
    deadline = time.monotonic() + wait
    while True:
        try:
            for entry in os.scandir(path):
                if entry.is_dir(follow_symlinks=False):
                    try:
                        os.rmdir(entry.path)
                    except OSError:
                        pass
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)


def sweep(base: str) -> None:
    """Remove worker directories left by sandboxes whose process no longer exists (a killed trainer)."""
    if not base:
        return
    try:
        entries = [e for e in os.scandir(base) if e.name.startswith(PREFIX) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for entry in entries:
        owner = entry.name[len(PREFIX):].split("-")[0]
        if owner.isdigit() and not _alive(int(owner)):
            remove_dir(entry.path, wait=0.0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
