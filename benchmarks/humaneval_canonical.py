"""Check: the code reward scores every canonical HumanEval solution (prompt + canonical_solution) at 1.0.

Run: PYTHONPATH=src python benchmarks/humaneval_canonical.py [--workers 2]
Prints the problems that do not score 1.0 (none expected) and the time taken.
"""

from __future__ import annotations

import argparse
import time

from rlvr.rewards.code import CodeScorer
from rlvr.tasks.code_datasets import load_humaneval


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    problems = load_humaneval()
    rows = [{"code_prefix": p["prompt"], "test": p["test"], "entry_point": p["entry_point"]} for p in problems]
    completions = [p["canonical_solution"] for p in problems]
    scorer = CodeScorer(workers=args.workers)
    start = time.perf_counter()
    scores = scorer.score(completions, rows)
    seconds = time.perf_counter() - start
    scorer.close()
    wrong = [(p["task_id"], s) for p, s in zip(problems, scores, strict=True) if s.reward != 1.0]
    for task_id, score in wrong:
        failures = score.result.failures if score.result else {}
        print(f"{task_id}: {score.to_json()} {score.result.detail if score.result else ''} {failures}")
    tests = sum(s.result.tests_total for s in scores if s.result)
    print(f"{len(problems) - len(wrong)}/{len(problems)} canonical solutions score 1.0 "
          f"({tests} counted tests) in {seconds:.1f} s on {args.workers} workers")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
