"""Run a benchmark script under ``accelerate launch`` the way ``rlvr launch`` runs ``rlvr train``.

``memory.py`` and ``grpo_cost.py`` take ``--launch CONFIG --num-processes N``: each arm (plain TRL,
rlvr) then runs as N processes started by the same ``accelerate launch`` command, config and
environment that ``rlvr launch --config CONFIG --num-processes N`` would use (gloo and no mixed
precision on a CPU), so both arms meet the same engine. Every process hands its result to :func:`report`
(a JSON file per rank: the ranks' printed lines can interleave); :func:`run_launched` collects them.

While the arm runs, a thread here also samples every rank's resident set from outside (``/proc``,
every 0.1 s). When the machine runs short of memory (less than ``reserve_gb`` available) it stops the
arm before the kernel's out-of-memory killer picks a victim, and the arm is reported as stopped with
the per-rank peaks seen until then: a lower bound on what it would have needed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

GB = 1e9
RESULTS_VARIABLE = "RLVR_BENCH_RESULTS_DIR"


def launch_command(config: str, num_processes: int, script: Path, arguments: list[str]) -> tuple[list[str], dict]:
    """``accelerate launch ... script arguments`` and the environment ``rlvr launch`` would add for ``config``."""
    from rlvr.launch.accelerate import LaunchOptions, plan_launch
    from rlvr.launch.cluster import ClusterEnv

    plan = plan_launch(LaunchOptions(recipe="-", config=config, num_processes=num_processes), ClusterEnv())
    launcher = plan.argv[: plan.argv.index("-m")]  # everything before "-m rlvr train RECIPE"
    return [*launcher, str(script), *arguments], plan.env


class RankWatcher:
    """Peak resident set of each launched rank, seen from outside; stops the launch when memory runs out."""

    def __init__(self, process: subprocess.Popen, reserve_gb: float) -> None:
        self.process, self.reserve = process, reserve_gb * GB
        self.peaks: dict[int, int] = {}
        self.out_of_memory = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        page, ranks, tick = os.sysconf("SC_PAGE_SIZE"), {}, 0
        while not self._stop.wait(0.1):
            if tick % 20 == 0 or not ranks:  # the ranks' pids, looked up every 2 s (a /proc walk)
                ranks = _ranks_under(self.process.pid)
            tick += 1
            for pid, rank in ranks.items():
                try:
                    resident = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * page
                except (OSError, IndexError, ValueError):
                    continue
                self.peaks[rank] = max(self.peaks.get(rank, 0), resident)
            if _available_memory() < self.reserve and not self.out_of_memory:
                self.out_of_memory = True
                os.killpg(self.process.pid, signal.SIGKILL)

    def stop(self) -> dict[int, float]:
        self._stop.set()
        self._thread.join()
        return {rank: round(peak / GB, 3) for rank, peak in sorted(self.peaks.items())}


def run_launched(config: str, num_processes: int, script: Path, arguments: list[str],
                 reserve_gb: float = 1.5) -> list[dict]:
    """Run ``script`` on ``num_processes`` processes; return each rank's JSON line, rank 0 first.

    A rank's line gains ``outside_peak_gb`` (its peak seen from outside). If the arm was stopped for want
    of memory, each rank gets ``{"rank", "stopped": "out of memory", "outside_peak_gb"}`` instead.
    """
    argv, extra_env = launch_command(config, num_processes, script, arguments)
    results_dir = Path(tempfile.mkdtemp(prefix="rlvr-bench-ranks-"))
    env = {**os.environ, **extra_env, RESULTS_VARIABLE: str(results_dir)}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               start_new_session=True)  # its own process group, so a stop reaches every rank
    watcher = RankWatcher(process, reserve_gb)
    stdout, stderr = process.communicate()
    outside = watcher.stop()
    if watcher.out_of_memory:
        return [{"rank": rank, "stopped": "out of memory", "outside_peak_gb": outside.get(rank)}
                for rank in range(num_processes)]
    results = [json.loads(path.read_text()) for path in sorted(results_dir.glob("rank-*.json"))]
    if process.returncode != 0 or len(results) != num_processes:
        sys.exit(f"{' '.join(argv)} failed (exit {process.returncode}, {len(results)} of {num_processes} ranks "
                 f"reported):\n{stderr[-3000:]}")
    for result in results:
        result["outside_peak_gb"] = outside.get(result["rank"])
    return sorted(results, key=lambda result: result["rank"])


def report(result: dict) -> None:
    """Print this process's result as one JSON line and, under :func:`run_launched`, hand it to the parent."""
    result = {"rank": rank(), **result}
    line = json.dumps(result)
    print(line, flush=True)
    if os.environ.get(RESULTS_VARIABLE):
        Path(os.environ[RESULTS_VARIABLE], f"rank-{result['rank']}.json").write_text(line)


def rank() -> int:
    """This process's rank under ``accelerate launch`` (0 when not launched)."""
    return int(os.environ.get("RANK", "0"))


def _ranks_under(root: int) -> dict[int, int]:
    """pid -> rank of the processes below ``root`` that were started with a ``RANK`` (torchrun's workers)."""
    children: dict[int, list[int]] = {}
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(status.parent.name))
    ranks, stack = {}, list(children.get(root, []))
    while stack:
        pid = stack.pop()
        stack += children.get(pid, [])
        try:
            environment = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for entry in environment:
            if entry.startswith(b"RANK="):
                ranks[pid] = int(entry[5:])
    return ranks


def _available_memory() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return float("inf")
