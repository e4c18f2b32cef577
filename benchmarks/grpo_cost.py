"""Cost per completion of a GRPO step: plain TRL ``GRPOTrainer`` vs rlvr, same recipe, same run.

    flock /tmp/rlvr-cpu.lock python benchmarks/grpo_cost.py
    python benchmarks/grpo_cost.py --launch ddp --num-processes 2   # each trainer on 2 processes under DDP

Both trainers get the same model, data, reward functions, LoRA config and ``GRPOConfig`` from one
recipe (default: the embedded CPU default), with the same seed. The baseline is TRL's own
``GRPOTrainer`` as a user would write it: ``model.generate`` until EOS or ``max_completion_length``,
and a loss forward of prompt + completion per row. rlvr's trainer stops each row at the answer line,
runs each group's prompt once in generation and in the loss, and drops finished rows from the
generation batch. Prints seconds and completion tokens per completion for both, and their ratios.
Steady-state steps only (the first, warm-up step is left out); means and medians, since one step
slowed by another process moves a mean of ten.

``--launch CONFIG --num-processes N`` runs each trainer as N processes under ``accelerate launch``
with one of rlvr's engine configs, as ``rlvr launch`` would (``benchmarks/launched.py``), one trainer
after the other. A step's completions then count every process's (``per_device_train_batch_size`` x
accumulation x N), and the step time is rank 0's (the ranks wait for each other every step).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

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


def plain_trl_trainer(recipe):  # noqa: ANN001, ANN201
    """TRL's GRPOTrainer on the recipe's model, task data, rewards and settings: nothing of rlvr's inside it."""
    from trl import GRPOTrainer

    from rlvr.model_sources import resolve_model
    from rlvr.models import load_model, load_tokenizer, lora_config
    from rlvr.tasks import get_task
    from rlvr.training.grpo_args import grpo_config

    task = get_task(recipe.task_name, recipe.task_options)
    model_path = resolve_model(recipe.model.name_or_path)
    args = grpo_config(recipe, task.reward_weights(recipe.rewards, recipe.grpo.get("reward_weights")))
    return GRPOTrainer(
        model=load_model(model_path, recipe),
        reward_funcs=task.reward_functions(recipe.rewards),
        args=args,
        train_dataset=task.load("train"),
        processing_class=load_tokenizer(model_path),
        peft_config=lora_config(recipe) if recipe.model.lora else None,
    )


def measure(trainer) -> dict:  # noqa: ANN001
    timer = StepTimer()
    trainer.add_callback(timer)
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "completions/mean_length" in entry]
    args = trainer.args
    completions = args.per_device_train_batch_size * args.gradient_accumulation_steps * trainer.accelerator.num_processes
    steady = timer.seconds[1:] or timer.seconds
    return {
        "seconds_per_step": statistics.mean(steady),
        "median_seconds_per_step": statistics.median(steady),
        "step_seconds": [round(s, 2) for s in timer.seconds],
        "completions_per_step": completions,
        "seconds_per_completion": statistics.mean(steady) / completions,
        "median_seconds_per_completion": statistics.median(steady) / completions,
        "completion_tokens_per_completion": statistics.mean(entry["completions/mean_length"] for entry in logs),
        "clipped_ratio": statistics.mean(entry.get("completions/clipped_ratio", 0.0) for entry in logs),
        "mean_reward": statistics.mean(entry["reward"] for entry in logs),
        # rlvr's step-time split (plain TRL logs none): generation, reward scoring, the rest (loss, backward, optimizer)
        "split_seconds": {key: statistics.mean(entry[key] for entry in logs[1:] or logs)
                          for key in ("time/generation", "time/rewards", "time/update") if key in logs[0]},
        "path": getattr(getattr(trainer, "shared_prompt", None), "summary", dict)(),
        # both arms load the recipe's model.dtype (auto: bf16 on a CPU with bf16 units): the same precision
        "weights_dtype": str(trainer.model.get_input_embeddings().weight.dtype).removeprefix("torch."),
    }


def run_one(recipe_name: str | None, label: str, overrides: list[str]) -> dict:
    recipe = load_recipe(recipe_name, [*overrides, f"run.output_dir=/tmp/rlvr-bench-cost-{label.split()[0]}"])
    trainer = plain_trl_trainer(recipe) if label.startswith("plain") else build_trainer(recipe, quiet=True)
    return measure(trainer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default=None, help="recipe (default: cpu-default)")
    parser.add_argument("--steps", type=int, default=11, help="optimizer steps per trainer (the first is warm-up)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="recipe override, repeatable")
    parser.add_argument("--launch", metavar="CONFIG", help="run each trainer under accelerate launch with this config")
    parser.add_argument("--num-processes", type=int, default=2, help="processes per trainer with --launch")
    parser.add_argument("--only", choices=("plain", "rlvr"), help="run one trainer in this process (used by --launch)")
    args = parser.parse_args()
    overrides = [
        f"grpo.max_steps={args.steps}",
        "grpo.report_to=[]",
        "grpo.save_strategy=no",
        "grpo.logging_steps=1",
        "run.eval_items=0",  # a held-out evaluation would land inside the last timed step
        "run.test_items=0",
        "run.keep_best=false",  # it needs the validation evaluations turned off above
        *args.overrides,
    ]
    labels = {"plain": "plain TRL GRPOTrainer", "rlvr": "rlvr"}
    sys.path.insert(0, str(Path(__file__).parent))
    from launched import report, run_launched

    if args.only:
        report(run_one(args.recipe, labels[args.only], overrides))
        return
    results = {}
    for only, label in labels.items():
        if args.launch:
            arguments = ["--only", only, "--steps", str(args.steps), *[f"--set={o}" for o in args.overrides]]
            arguments += ["--recipe", args.recipe] if args.recipe else []
            results[label] = run_launched(args.launch, args.num_processes, Path(__file__), arguments)[0]
        else:
            results[label] = run_one(args.recipe, label, overrides)
        print(label, json.dumps(results[label]), flush=True)
    base, ours = results.values()
    print()
    if args.launch:
        print(f"{args.launch}, {args.num_processes} processes; a step's completions count all processes")
    print(f"{'':24}{'s/completion':>14}{'(median)':>10}{'tokens/completion':>19}{'s/step':>9}{'clipped':>9}{'reward':>8}  weights")
    for label, r in results.items():
        print(f"{label:24}{r['seconds_per_completion']:14.2f}{r['median_seconds_per_completion']:10.2f}"
              f"{r['completion_tokens_per_completion']:19.1f}{r['seconds_per_step']:9.1f}{r['clipped_ratio']:9.0%}"
              f"{r['mean_reward']:8.3f}  {r.get('weights_dtype', '?')}")
    print(f"ratio (plain TRL / rlvr): seconds per completion "
          f"{base['seconds_per_completion'] / ours['seconds_per_completion']:.2f}x (medians "
          f"{base['median_seconds_per_completion'] / ours['median_seconds_per_completion']:.2f}x), completion tokens "
          f"per completion {base['completion_tokens_per_completion'] / ours['completion_tokens_per_completion']:.2f}x")


if __name__ == "__main__":
    main()
