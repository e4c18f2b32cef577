"""QLoRA on CPU: NF4 4-bit base weights (bitsandbytes' CPU backend) vs full precision, one script, both arms.

Each arm is one ``rlvr train`` of a recipe (default: the CPU default) in its own process, with the same
seed, steps and data; only ``model.load_in_4bit`` differs. Per arm it reports the process's peak resident
memory, the model's weight footprint (``get_memory_footprint`` of the loaded base model), the median step
time and its generation / update parts (steps after the first; from the run's health metrics), and the
held-out test verdict of the short run (base -> trained on ``--test-items`` test items, greedy, paired
McNemar test). Ratios are 4-bit / full precision. On a shared machine wall times move with the load; the
arms run one after the other, so state the load beside the ratio.

    python benchmarks/qlora_cpu.py --steps 4 --test-items 200 --output /tmp/qlora-bench
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ARMS = {"fp32": [], "nf4": ["model.load_in_4bit=true", "model.quantization_fallback=error"]}


def footprint(recipe_name: str, four_bit: bool) -> int:
    from rlvr.config import load_recipe
    from rlvr.model_sources import resolve_model
    from rlvr.models import load_model

    overrides = ARMS["nf4"] if four_bit else []
    recipe = load_recipe(recipe_name, overrides)
    return int(load_model(resolve_model(recipe.model.name_or_path), recipe).get_memory_footprint())


def train_arm(name: str, args: argparse.Namespace) -> dict:
    out = Path(args.output) / name
    overrides = ARMS[name] + [f"grpo.max_steps={args.steps}", f"run.test_items={args.test_items}", "run.eval_items=0",
                              "run.keep_best=false", "grpo.save_strategy=no", "grpo.report_to=[]",
                              f"run.output_dir={out}"]
    command = [sys.executable, "-m", "rlvr", "train", args.recipe] + [a for o in overrides for a in ("--set", o)]
    start = time.time()
    with open(Path(args.output) / f"{name}.log", "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise SystemExit(f"{name} arm failed (status {status}); see {args.output}/{name}.log")
    steps = [json.loads(line) for line in (out / "health" / "metrics.jsonl").read_text().splitlines() if line.strip()]
    later = [s for s in steps if s.get("step", 0) > 1] or steps
    summary = json.loads((out / "summary.json").read_text())
    test = summary.get("test") or {}
    return {
        "wall_s": round(time.time() - start, 1),
        "peak_rss_mib": round(usage.ru_maxrss / 1024),
        "step_s": round(statistics.median(s["time/step"] for s in later), 2),
        "generation_s": round(statistics.median(s["time/generation"] for s in later), 2),
        "update_s": round(statistics.median(s["time/update"] for s in later), 2),
        "test_before": test.get("before", {}).get("accuracy"),
        "test_after": test.get("after", {}).get("accuracy"),
        "now_right": test.get("now_right"), "now_wrong": test.get("now_wrong"), "mcnemar_p": test.get("mcnemar_p"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="cpu-default")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--test-items", type=int, default=200)
    parser.add_argument("--output", default="outputs/qlora-bench")
    args = parser.parse_args()
    Path(args.output).mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    results = {name: {"weights_mib": round(footprint(args.recipe, name == "nf4") / 2**20)} for name in ARMS}
    for name in ARMS:
        results[name].update(train_arm(name, args))
    fp32, nf4 = results["fp32"], results["nf4"]
    ratios = {key: round(nf4[key] / fp32[key], 2) for key in ("weights_mib", "peak_rss_mib", "step_s", "generation_s",
                                                             "update_s") if fp32[key]}
    report = {"recipe": args.recipe, "steps": args.steps, "test_items": args.test_items,
              "load_average_at_start": round(load, 1), "load_average_at_end": round(os.getloadavg()[0], 1),
              "arms": results, "ratio_nf4_over_fp32": ratios}
    (Path(args.output) / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
