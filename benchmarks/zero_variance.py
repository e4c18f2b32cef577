"""Zero-variance group handling off vs on: the embedded CPU default trained twice, same seed and budget.

Both runs share every setting but ``run.zero_variance_groups`` (keep vs resample,
or drop with --on drop). Reported per run: mean reward over the last quarter of
steps, greedy accuracy on held-out validation prompts, mean share of
zero-variance groups, and seconds per step, then on/off ratios.

    PYTHONPATH=src OMP_NUM_THREADS=2 python benchmarks/zero_variance.py --set grpo.max_steps=6 --eval-limit 30
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def held_out_accuracy(recipe, adapter_dir: Path, limit: int) -> float:  # noqa: ANN001
    from peft import PeftModel

    from rlvr.difficulty import pass_rates, sample_completions
    from rlvr.models import resolve_model
    from rlvr.tasks import get_task
    from rlvr.train import load_model, load_tokenizer

    task = get_task(recipe.task_name, recipe.task_options)
    rows = [dict(r) for r in task.load("validation").select(range(limit))]
    path = resolve_model(recipe.model.name_or_path)
    tokenizer, model = load_tokenizer(path), load_model(path, recipe)
    if recipe.model.lora:
        model = PeftModel.from_pretrained(model, str(adapter_dir))
    model.eval()
    max_tokens = recipe.grpo.get("max_completion_length", 256)
    completions = sample_completions(model, tokenizer, [r["prompt"] for r in rows], 1, max_tokens, 1.0,
                                     task.stop_patterns, greedy=True)
    rates = pass_rates(rows, completions, task.reward_functions(recipe.rewards))
    return sum(rates) / len(rates)


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def run_one(mode: str, args: argparse.Namespace) -> dict:
    from rlvr.config import load_recipe
    from rlvr.train import train

    overrides = [*args.overrides, f"run.zero_variance_groups={mode}", f"run.output_dir={args.output_dir}/{mode}",
                 "grpo.report_to=[none]", "grpo.save_strategy='no'"]
    recipe = load_recipe(args.recipe, overrides)
    start = time.time()
    result = train(recipe, quiet=True)
    history = [h for h in result.log_history if "reward" in h]
    rewards = [h["reward"] for h in history]
    tail = rewards[-max(1, len(rewards) // 4):]
    return {
        "mode": mode,
        "steps": result.steps,
        "reward_last_quarter": mean(tail),
        "reward_all_steps": mean(rewards),
        "zero_variance_share": mean([h["zero_variance/share"] for h in history if "zero_variance/share" in h]),
        "seconds_per_step": mean([h["time/step"] for h in history if "time/step" in h]),
        "train_seconds": round(time.time() - start, 1),
        "held_out_accuracy": held_out_accuracy(recipe, result.adapter_dir, args.eval_limit),
        "eval_items": args.eval_limit,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default=None, help="recipe (default: the embedded cpu-default)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="recipe override, repeatable")
    parser.add_argument("--on", default="resample", choices=["drop", "resample"], help="the 'on' mode")
    parser.add_argument("--eval-limit", type=int, default=50, help="held-out validation prompts for accuracy")
    parser.add_argument("--output-dir", default="outputs/bench-zero-variance")
    args = parser.parse_args()
    results = [run_one("keep", args), run_one(args.on, args)]
    off, on = results
    print(json.dumps(results, indent=2))
    print(f"\n{'':24}{'keep (off)':>14}{args.on + ' (on)':>16}{'on/off':>10}")
    for key in ("reward_last_quarter", "held_out_accuracy", "zero_variance_share", "seconds_per_step"):
        a, b = off[key], on[key]
        ratio = f"{b / a:.2f}" if a else "n/a"
        print(f"{key:24}{a:>14.3f}{b:>16.3f}{ratio:>10}")
    Path(args.output_dir).mkdir(parents=True, exist_ok=True)
    (Path(args.output_dir) / "results.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
