"""A memory cgroup per worker, limited afresh for each run: one limit for all of a program's processes.

``RLIMIT_AS`` is per process and counts only mappings: a program that forks, or holds memory in
tmpfs files, pipes or kernel objects, goes past it. The parent (:mod:`rlvr.sandbox.executor`)
makes one cgroup directory per worker under its own memory cgroup (v1 ``memory`` controller, or
v2 where ``memory`` is delegated to its children). The worker moves itself in once, at start:
moving a process between cgroups waits for an RCU grace period (milliseconds, more than a whole
run costs otherwise), so nothing moves per run. Each run then sets the limit to what the cgroup
holds when it starts + ``memory_mb`` + ``TRUSTED_MB`` for the test runner (swap included), and
reads the OOM-kill counter after. The worker, its runners and the test runner are never chosen by
the OOM killer (``oom_score_adj`` -1000, set as root); the program is always chosen first (1000).

Stdlib only: loaded by the sandbox worker, outside the rlvr package.
"""

from __future__ import annotations

import os
import time

#: Room for the trusted side of a run (runner and test runner) under the same limit as the program.
TRUSTED_MB = 32
_FILES = {
    "v1": {"limit": "memory.limit_in_bytes", "swap": "memory.memsw.limit_in_bytes", "events": "memory.oom_control",
           "usage": "memory.usage_in_bytes"},
    "v2": {"limit": "memory.max", "swap": "memory.swap.max", "events": "memory.events", "usage": "memory.current"},
}


class SlotCgroup:
    """The worker's cgroup, held open by descriptor; the worker is inside it once :meth:`open` succeeds."""

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
            except OSError:
                continue
            slot = cls(fd, version)
            try:
                slot._write("cgroup.procs", "0")
                _oom_score_adj(-1000)
            except OSError as error:
                os.close(fd)
                return cls(None, "", f"cannot join {path}: {error.strerror}")
            return slot
        os.close(fd)
        return cls(None, "", f"{path} has no memory controller")

    @property
    def available(self) -> bool:
        return self.fd is not None

    def _write(self, name: str, value: str) -> None:
        fd = os.open(name, os.O_WRONLY, dir_fd=self.fd)
        try:
            os.write(fd, value.encode())
        finally:
            os.close(fd)

    def _read(self, name: str) -> str:
        fd = os.open(name, os.O_RDONLY, dir_fd=self.fd)
        try:
            return os.read(fd, 8192).decode()
        finally:
            os.close(fd)

    def limit_run(self, memory_mb: int) -> RunLimit | None:
        """Limit the coming run to ``memory_mb`` over what the cgroup holds now; None (no cap) on failure."""
        if self.fd is None:
            return None
        files = _FILES[self.version]
        try:
            held = int(self._read(files["usage"]).split()[0])
            limit = str(held + (int(memory_mb) + TRUSTED_MB) * 1024 * 1024)
            swap = limit if self.version == "v1" else "0"
            try:  # v1 keeps memory+swap >= memory: the order that keeps it true depends on the direction
                self._write(files["limit"], limit)
                self._swap(files["swap"], swap)
            except OSError:
                self._swap(files["swap"], swap)
                self._write(files["limit"], limit)
            return RunLimit(self, self.oom_kills())
        except (OSError, ValueError, IndexError):
            return None

    def _swap(self, name: str, value: str) -> None:
        try:
            self._write(name, value)
        except FileNotFoundError:  # no swap accounting: nothing to cap
            pass

    def oom_kills(self) -> int:
        try:
            text = self._read(_FILES[self.version]["events"])
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0


class RunLimit:
    """One run's view of the worker's cgroup: how many OOM kills happened since the run began."""

    def __init__(self, slot: SlotCgroup, kills_before: int):
        self.slot, self.kills_before = slot, kills_before

    def exceeded(self) -> bool:
        return self.slot.oom_kills() > self.kills_before


def program_first() -> None:
    """Make the calling process (the program, still root) the OOM killer's first choice."""
    _oom_score_adj(1000)


def _oom_score_adj(value: int) -> None:
    try:
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write(str(value))
    except OSError:
        pass


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
    # Kept here, not shared with training.resume: worker.py imports this module on its own, by path,
    # before the sandbox root hides the package, so memcg may import nothing from rlvr.
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
