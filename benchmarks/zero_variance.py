"""Zero-variance group handling off vs on: the embedded CPU default trained twice, same seed and budget.

Both runs share every setting but ``run.zero_variance_groups`` (keep vs resample,
or drop with --on drop). Reported per run: mean reward over the first and last
quarter of steps, greedy accuracy on the recipe's held-out validation items
before and after training (the same evaluation as the default run's
before/after table, ``run.eval_items``), mean share of zero-variance groups,
seconds per step and rollouts generated; then on/off ratios and an exact
McNemar test between the two trained models on the same held-out items.

    OMP_NUM_THREADS=2 python benchmarks/zero_variance.py
    OMP_NUM_THREADS=2 python benchmarks/zero_variance.py --set grpo.max_steps=6 --set run.eval_items=20   # smoke
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def quarter(values: list[float], last: bool) -> float | None:
    size = max(1, len(values) // 4)
    return mean(values[-size:] if last else values[:size])


def run_one(mode: str, args: argparse.Namespace) -> dict[str, Any]:
    from rlvr.config import load_recipe
    from rlvr.training.run import train

    overrides = [*args.overrides, f"run.zero_variance_groups={mode}", f"run.output_dir={args.output_dir}/{mode}",
                 "grpo.report_to=[none]", "grpo.save_strategy=no"]
    recipe = load_recipe(args.recipe, overrides)
    if not recipe.run.eval_items:
        raise SystemExit("set run.eval_items > 0: the benchmark compares held-out accuracy")
    start = time.time()
    result = train(recipe, quiet=True)
    history = [h for h in result.log_history if "reward" in h]
    rewards = [h["reward"] for h in history]
    before, after = result.evaluations[0], result.evaluations[-1]
    return {
        "mode": mode,
        "steps": result.steps,
        "reward_first_quarter": quarter(rewards, last=False),
        "reward_last_quarter": quarter(rewards, last=True),
        "zero_variance_share": mean([h["zero_variance/share"] for h in history if "zero_variance/share" in h]),
        "resampled_share": mean([h.get("zero_variance/resampled_share", 0.0) for h in history]),
        "dropped_share": mean([h.get("zero_variance/dropped_share", 0.0) for h in history]),
        "seconds_per_step": mean([h["time/step"] for h in history if "time/step" in h]),
        "generation_seconds_per_step": mean([h["time/generation"] for h in history if "time/generation" in h]),
        "train_seconds": round(time.time() - start, 1),
        "held_out_items": before["n"],
        "held_out_accuracy_before": before["accuracy"],
        "held_out_accuracy_after": after["accuracy"],
        "verdicts_after": after["verdicts"],
    }


def compare(off: dict[str, Any], on: dict[str, Any]) -> dict[str, Any]:
    from rlvr.evaluation.stats import mcnemar_exact

    ids = sorted(off["verdicts_after"])
    only_off = sum(off["verdicts_after"][i] and not on["verdicts_after"][i] for i in ids)
    only_on = sum(on["verdicts_after"][i] and not off["verdicts_after"][i] for i in ids)
    return {"only_off_correct": only_off, "only_on_correct": only_on, "mcnemar_p": mcnemar_exact(only_off, only_on)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default=None, help="recipe (default: the embedded cpu-default)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="recipe override, repeatable")
    parser.add_argument("--on", default="resample", choices=["drop", "resample"], help="the 'on' mode")
    parser.add_argument("--output-dir", default="outputs/bench-zero-variance")
    args = parser.parse_args()
    off = run_one("keep", args)
    on = run_one(args.on, args)
    paired = compare(off, on)
    print(f"\n{'':30}{'keep (off)':>12}{args.on + ' (on)':>16}{'on/off':>9}")
    for key in ("reward_first_quarter", "reward_last_quarter", "held_out_accuracy_before", "held_out_accuracy_after",
                "zero_variance_share", "resampled_share", "dropped_share", "seconds_per_step",
                "generation_seconds_per_step"):
        a, b = off[key], on[key]
        ratio = f"{b / a:.2f}" if a else "n/a"
        print(f"{key:30}{a:>12.3f}{b:>16.3f}{ratio:>9}")
    print(f"held-out items right only with keep: {paired['only_off_correct']}, only with {args.on}: "
          f"{paired['only_on_correct']}, McNemar exact p = {paired['mcnemar_p']:.3f}")
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    runs = [{k: v for k, v in r.items() if k != "verdicts_after"} for r in (off, on)]
    (out / "results.json").write_text(json.dumps({"runs": runs, "paired": paired}, indent=2) + "\n")


if __name__ == "__main__":
    main()
