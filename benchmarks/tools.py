"""Tools (issue 54): train recipes with a tool on several seeds and tabulate the three-way verdict.

For each recipe and seed: ``rlvr train RECIPE --set grpo.seed=S`` under ``/usr/bin/time -v`` (wall clock and peak
memory), one job at a time unless ``--jobs 2`` (then each gets one OpenMP thread), and a table from each run's
``summary.json``: the base model without the tool, the base with it, the trained model with it, the trained model
against both (points, now right / now wrong, McNemar p), the base without the tool judged by its last number alone
(its strict 0% can be format, not arithmetic) and the trained model against that, the share of answers that called
the tool, the constant answer, minutes and peak GB.

    python benchmarks/tools.py --output-dir outputs/tools --seeds 42,1,2 calculator-cpu-smollm2
    python benchmarks/tools.py --output-dir outputs/tools --seeds 42 benchmarks/recipes/tools-python-lcm.yaml
    python benchmarks/tools.py --output-dir outputs/tools --table calculator-cpu-smollm2 ...   # runs already made
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def run_dir(output_dir: Path, recipe: str, seed: int) -> Path:
    return output_dir / f"{Path(recipe).stem}-seed-{seed}"


def train(recipe: str, seed: int, output_dir: Path, threads: int | None) -> Path:
    where = run_dir(output_dir, recipe, seed)
    where.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "rlvr", "train", recipe, "--set", f"grpo.seed={seed}",
               "--set", f"run.output_dir={where}", "--set", "grpo.report_to=[]"]
    with (where / "time.log").open("w") as log:
        subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    return where


def timing(where: Path) -> tuple[float | None, float | None]:
    """(minutes, peak GB) from the run's ``time.log`` (``/usr/bin/time -v``), None where absent."""
    try:
        text = (where / "time.log").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None, None
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", text)
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    minutes = None
    if wall:
        parts = [float(p) for p in wall.group(1).split(":")]
        minutes = (parts[0] * 60 + parts[1] + parts[2] / 60) if len(parts) == 3 else parts[0] + parts[1] / 60
    return minutes, (int(peak.group(1)) * 1024 / 1e9 if peak else None)


def last_number_right(record: dict) -> bool:
    """The completion's last number equals the gold answer: the base without the tool judged on its answer alone,
    whatever its format (a strict 0% can be a format failure: 'The answer is 2835.' has no answer line)."""
    text = str(record.get("completion", "")).replace(",", "")
    numbers = re.findall(r"-?0x[0-9a-fA-F]+|-?\d+(?:\.\d+)?", text)  # hexadecimal too (bitwise_arithmetic)
    return bool(numbers) and numbers[-1].lower() == str(record.get("ground_truth", "")).replace(",", "").lower()


def _records(path: Path, step: int | None = None) -> dict[str, dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    step = max(r["step"] for r in rows) if step is None else step
    return {r["id"]: r for r in rows if r["step"] == step}


def lenient_comparison(where: Path) -> str:
    """The base without the tool by its last number, and the trained model with it (strict) against that."""
    from rlvr.evaluation.stats import mcnemar_exact, paired_counts

    try:
        base = _records(where / "test_without_tool_samples.jsonl", 0)
        trained = _records(where / "test_samples.jsonl")
    except (OSError, ValueError):
        return "- | -"
    ids = [i for i in base if i in trained]
    first = [last_number_right(base[i]) for i in ids]
    _, now_wrong, now_right, _ = paired_counts(first, [bool(trained[i]["correct"]) for i in ids])
    gain = (now_right - now_wrong) / max(1, len(ids))
    return (f"{sum(first) / max(1, len(ids)):.1%} | {gain * 100:+.1f} ({now_right}/{now_wrong}, "
            f"p {mcnemar_exact(now_wrong, now_right):.2g})")


def row(recipe: str, seed: int, where: Path) -> str:
    try:
        test = json.loads((where / "summary.json").read_text(encoding="utf-8"))["test"]
    except (OSError, KeyError, ValueError):
        return f"| {Path(recipe).stem} | {seed} | (no verdict in {where}) |"
    without, before, after = test["without_tool"], test["before"], test["after"]
    minutes, peak = timing(where)
    constant = test.get("constant_answer") or {}
    used = (after.get("tools") or {}).get("used_share")
    return (f"| {Path(recipe).stem} | {seed} | {without['base']['accuracy']:.1%} | {lenient_comparison(where)} | "
            f"{before['accuracy']:.1%} | "
            f"{after['accuracy']:.1%} | **{without['gain'] * 100:+.1f}** ({without['now_right']}/{without['now_wrong']}, "
            f"p {without['mcnemar_p']:.2g}) | {test['gain'] * 100:+.1f} ({test['now_right']}/{test['now_wrong']}, "
            f"p {test['mcnemar_p']:.2g}) | {_pct(used)} | {_pct(constant.get('accuracy'))} | "
            f"{_num(minutes, '.1f')} | {_num(peak, '.2f')} |")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _num(value: float | None, form: str) -> str:
    return "-" if value is None else format(value, form)


HEADER = ("| recipe | seed | base, no tool | base, no tool, last number | trained+tool vs that | base, tool | "
          "trained, tool | trained+tool vs base no tool | trained vs base, both with the tool | "
          "trained answers that called the tool | constant answer | minutes | peak GB |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recipes", nargs="+")
    parser.add_argument("--output-dir", type=Path, required=True)
    parser.add_argument("--seeds", default="42,1,2")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (2: one thread each)")
    parser.add_argument("--table", action="store_true", help="only print the table of runs already made")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    runs = [(recipe, seed) for recipe in args.recipes for seed in seeds]
    if not args.table:
        threads = 1 if args.jobs > 1 else None
        with ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(lambda r: train(r[0], r[1], args.output_dir, threads), runs))
    print(HEADER)
    for recipe, seed in runs:
        print(row(recipe, seed, run_dir(args.output_dir, recipe, seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
