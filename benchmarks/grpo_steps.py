"""GRPO step cost: plain TRL generation vs rlvr's stop-at-the-answer, same recipe, same run.

    python benchmarks/grpo_steps.py --steps 4

Both trainers are built from the same recipe (default: the embedded CPU default) with the same seed,
model, data, rewards and GRPOConfig; the only difference is that the baseline generates as the
published script did (no stop strings: until EOS or max_completion_length), while rlvr stops each row
at its answer line and ends it with EOS. Prints seconds per step, completion tokens per step, and ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from transformers import TrainerCallback

from rlvr.config import load_recipe
from rlvr.training.run import build_trainer


class StepTimer(TrainerCallback):
    def __init__(self) -> None:
        self.started = 0.0
        self.seconds: list[float] = []

    def on_step_begin(self, args, state, control, **kwargs):  # noqa: ANN001
        self.started = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
        self.seconds.append(time.perf_counter() - self.started)


def measure(recipe, stop_at_answer: bool) -> dict:
    trainer = build_trainer(recipe, quiet=True, stop_at_answer=stop_at_answer)
    timer = StepTimer()
    trainer.add_callback(timer)
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "completions/mean_length" in entry]
    completions_per_step = trainer.args.per_device_train_batch_size * trainer.args.gradient_accumulation_steps
    tokens = [entry["completions/mean_length"] * completions_per_step for entry in logs]
    rewards = [entry["reward"] for entry in logs]
    clipped = [entry.get("completions/clipped_ratio", 0.0) for entry in logs]
    # The first step includes one-off warm-up (allocations, kernel selection): report it apart.
    steady = timer.seconds[1:] or timer.seconds
    return {
        "seconds_per_step": statistics.mean(steady),
        "first_step_seconds": timer.seconds[0],
        "completion_tokens_per_step": statistics.mean(tokens),
        "clipped_ratio": statistics.mean(clipped),
        "mean_reward": statistics.mean(rewards),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default=None, help="recipe (default: cpu-default)")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--max-completion-length", type=int, default=128)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    overrides = [
        f"grpo.max_steps={args.steps}",
        f"grpo.max_completion_length={args.max_completion_length}",
        "grpo.report_to=[]",
        "grpo.save_strategy=no",
        "grpo.logging_steps=1",
        "run.eval_items=0",  # held-out evaluation would land inside the last timed step
        *args.overrides,
    ]
    results = {}
    for label, stop in (("plain TRL (no stop)", False), ("rlvr (stop at answer)", True)):
        recipe = load_recipe(args.recipe, [*overrides, f"run.output_dir=/tmp/rlvr-bench-{int(stop)}"])
        results[label] = measure(recipe, stop)
        print(label, json.dumps(results[label]), flush=True)
    base, ours = results["plain TRL (no stop)"], results["rlvr (stop at answer)"]
    print()
    print(f"{'':24}{'s/step':>10}{'compl. tokens/step':>22}{'clipped':>10}{'reward':>9}")
    for label, r in results.items():
        print(
            f"{label:24}{r['seconds_per_step']:10.1f}{r['completion_tokens_per_step']:22.0f}"
            f"{r['clipped_ratio']:10.0%}{r['mean_reward']:9.3f}"
        )
    print(
        f"ratio (plain / rlvr): time per step {base['seconds_per_step'] / ours['seconds_per_step']:.2f}x, "
        f"completion tokens {base['completion_tokens_per_step'] / ours['completion_tokens_per_step']:.2f}x"
    )


if __name__ == "__main__":
    main()
