"""The embedded default (`rlvr train`) repeated with several training and sampling seeds.

Each seed runs the whole command as a user would (`python -m rlvr train --set grpo.seed=S`, a fresh process,
the default's task and data seed unchanged, so every run is judged on the same test items) and its held-out
verdict is read back from the run's summary.json. Every seed is reported, good or bad. Each command's wall time
and peak resident memory come from `/usr/bin/time -v` around it (GNU time; the `time` package on Debian),
as a user would measure them.

    OMP_NUM_THREADS=2 python benchmarks/default_seeds.py --seeds 42,1,2 --output-dir outputs/bench-seeds
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path


def run_seed(seed: int, args: argparse.Namespace) -> dict:
    out = Path(args.output_dir) / f"seed-{seed}"
    command = [sys.executable, "-m", "rlvr", "train", *([args.recipe] if args.recipe else []),
               "--set", f"grpo.seed={seed}", "--output-dir", str(out), *sum((["--set", o] for o in args.overrides), [])]
    gnu_time = shutil.which("time") or ("/usr/bin/time" if Path("/usr/bin/time").exists() else None)
    measures = out.parent / f"seed-{seed}.time"
    out.parent.mkdir(parents=True, exist_ok=True)
    if gnu_time:
        command = [gnu_time, "-v", "-o", str(measures), *command]
    start = time.time()
    subprocess.run(command, check=True)
    wall = time.time() - start
    summary = json.loads((out / "summary.json").read_text())
    peak = _peak_gb(measures.read_text()) if gnu_time else None
    return {"seed": seed, "wall_minutes": round(wall / 60, 2), "peak_resident_gb": peak,
            "train_seconds": summary["seconds"], "test": summary["test"], "kept_best": summary.get("kept_best")}


def _peak_gb(report: str) -> float | None:
    """'Maximum resident set size (kbytes)' of GNU time's -v report, in GB (10^9 bytes)."""
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", report)
    return round(int(found.group(1)) * 1024 / 1e9, 2) if found else None


def row(result: dict) -> str:
    t = result["test"]
    low, high = t["gain_ci95"]
    peak = result.get("peak_resident_gb")
    return (f"| {result['seed']} | {result['wall_minutes']:.1f} | {peak if peak is not None else '-'} "
            f"| {t['before']['accuracy']:.1%} | {t['after']['accuracy']:.1%} "
            f"| {t['gain'] * 100:+.1f} [{low * 100:+.1f}, {high * 100:+.1f}] | {t['now_right']} / {t['now_wrong']} "
            f"| {t['mcnemar_p']:.2g} | {t['before']['format_rate']:.0%} -> {t['after']['format_rate']:.0%} "
            f"| {t['constant_answer']['accuracy']:.1%} | {kept(result)} |")


def kept(result: dict) -> str:
    """The step whose weights were judged (run.keep_best), or the last."""
    best = result.get("kept_best")
    if not best:
        return "last"
    return f"step {best['step']} of {best['last_step']} (validation {best['validation_accuracy']:.1%})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default=None, help="recipe (default: the embedded cpu-default)")
    parser.add_argument("--seeds", default="42,1,2", help="comma-separated grpo.seed values")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="recipe override, repeatable")
    parser.add_argument("--output-dir", default="outputs/bench-seeds")
    args = parser.parse_args()
    results = [run_seed(int(s), args) for s in args.seeds.split(",")]
    Path(args.output_dir).mkdir(parents=True, exist_ok=True)
    (Path(args.output_dir) / "seeds.json").write_text(json.dumps(results, indent=2) + "\n")
    print("| seed | minutes | peak GB | base | trained | gain, points [95% CI] | now right / wrong | McNemar p | format "
          "| constant answer | weights judged |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for result in results:
        print(row(result))


if __name__ == "__main__":
    main()
