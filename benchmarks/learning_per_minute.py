"""Learning per CPU-minute: plain TRL with the published settings vs the rlvr default, same training budget.

Both arms train from the same recipe (default: the embedded cpu-default) for the
same wall-clock training time, and are evaluated on the same held-out TEST
items (the recipe's ``run.test_items`` first test items, the training prompt,
greedy) at the start and at evenly spaced points of their training time;
evaluation time is not counted in the budget. The arms:

* ``plain-trl``: TRL's own ``GRPOTrainer`` (``grpo_cost.plain_trl_trainer``: the
  recipe's model, data, rewards, weights and LoRA, nothing of rlvr's) as the
  published script ran it: no stop at the answer line (until EOS or
  ``--plain-max-completion`` tokens), one prompt per step
  (``per_device_train_batch_size = num_generations``);
* ``rlvr``: the recipe as ``rlvr train`` runs it.

Writes ``learning_per_minute.json`` (every evaluation: training seconds, steps,
completions, accuracy, Wilson interval; McNemar tests) and
``learning_per_minute.png`` (held-out accuracy against training minutes).

    OMP_NUM_THREADS=2 python benchmarks/learning_per_minute.py --budget-min 10 --points 3
    python benchmarks/learning_per_minute.py --budget-min 0.5 --points 1 --set run.test_items=20   # smoke
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback


class Budget(TrainerCallback):
    """Stops training after ``budget_s`` seconds of training (evaluations excluded), evaluating at ``points``."""

    def __init__(self, evaluator: Any, budget_s: float, points: int, completions_per_step: int):
        self.evaluator = evaluator
        self.budget_s = budget_s
        self.marks = [budget_s * (i + 1) / points for i in range(points)]
        self.per_step = completions_per_step
        self.trained_s = 0.0
        self.resumed = 0.0
        self.curve: list[dict[str, Any]] = []

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._evaluate(state)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.resumed = time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.trained_s += time.perf_counter() - self.resumed
        if self.marks and self.trained_s >= self.marks[0]:
            while self.marks and self.trained_s >= self.marks[0]:
                self.marks.pop(0)
            self._evaluate(state)
        if self.trained_s >= self.budget_s:
            control.should_training_stop = True

    def _evaluate(self, state: Any) -> None:
        evaluation = self.evaluator.evaluate(state.global_step)
        self.curve.append({
            "train_seconds": round(self.trained_s, 1), "step": state.global_step,
            "completions": state.global_step * self.per_step, "n": evaluation["n"],
            "accuracy": evaluation["accuracy"], "ci95": evaluation["ci95"], "format_rate": evaluation["format_rate"],
            "mean_completion_tokens": evaluation["mean_completion_tokens"], "verdicts": evaluation["verdicts"],
        })


def arm_recipe(name: str, args: argparse.Namespace) -> Any:
    from rlvr.config import load_recipe

    overrides = [*args.overrides, "grpo.max_steps=100000", "grpo.save_strategy=no", "grpo.report_to=[]",
                 "run.eval_items=0", "run.test_items=0", "run.keep_best=false", f"run.output_dir={args.output_dir}/{name}"]
    recipe = load_recipe(args.recipe, overrides)
    if name == "plain-trl":
        recipe.grpo["per_device_train_batch_size"] = recipe.grpo["num_generations"]
        recipe.grpo["gradient_accumulation_steps"] = 1
        recipe.grpo["max_completion_length"] = args.plain_max_completion
    return recipe


def run_arm(name: str, args: argparse.Namespace, test_items: int) -> dict[str, Any]:
    from grpo_cost import plain_trl_trainer  # TRL's own GRPOTrainer on the recipe's parts (same directory)

    from rlvr.tasks import get_task
    from rlvr.training.evaluation import EvalCallback
    from rlvr.training.run import build_trainer

    recipe = arm_recipe(name, args)
    trainer = plain_trl_trainer(recipe) if name == "plain-trl" else build_trainer(recipe, quiet=True)
    task = get_task(recipe.task_name, recipe.task_options)
    items = task.load("test").select(range(test_items))
    run = recipe.run
    evaluator = EvalCallback(trainer, task, items, 0, run.eval_max_new_tokens, run.eval_batch_size, "test", role="verdict")
    per_step = recipe.grpo["per_device_train_batch_size"] * recipe.grpo.get("gradient_accumulation_steps", 1)
    budget = Budget(evaluator, args.budget_min * 60, args.points, per_step)
    trainer.add_callback(budget)
    start = time.time()
    trainer.train()
    return {"arm": name, "grpo": {k: recipe.grpo[k] for k in ("per_device_train_batch_size", "num_generations",
            "max_completion_length", "learning_rate")}, "stop_at_answer": name != "plain-trl",
            "wall_seconds": round(time.time() - start, 1), "curve": budget.curve}


def paired(first: dict[str, bool], second: dict[str, bool]) -> dict[str, Any]:
    from rlvr.evaluation.stats import mcnemar_exact

    only_first = sum(first[i] and not second[i] for i in first)
    only_second = sum(second[i] and not first[i] for i in first)
    return {"only_first": only_first, "only_second": only_second, "mcnemar_p": mcnemar_exact(only_first, only_second)}


def plot(arms: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for arm, colour in zip(arms, ("tab:grey", "tab:blue"), strict=False):
        xs = [p["train_seconds"] / 60 for p in arm["curve"]]
        ys = [p["accuracy"] * 100 for p in arm["curve"]]
        low = [y - p["ci95"][0] * 100 for y, p in zip(ys, arm["curve"], strict=True)]
        high = [p["ci95"][1] * 100 - y for y, p in zip(ys, arm["curve"], strict=True)]
        ax.errorbar(xs, ys, yerr=[low, high], marker="o", capsize=3, color=colour, label=arm["arm"])
    ax.set_xlabel("training wall time, minutes (evaluations excluded)")
    ax.set_ylabel("held-out test accuracy, % (greedy, 95% Wilson)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default=None, help="recipe (default: the embedded cpu-default)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="recipe override, repeatable")
    parser.add_argument("--budget-min", type=float, default=10.0, help="training wall time per arm, minutes")
    parser.add_argument("--points", type=int, default=3, help="evaluations after the start, evenly spaced")
    parser.add_argument("--plain-max-completion", type=int, default=128, help="plain TRL's completion limit")
    parser.add_argument("--output-dir", default="outputs/bench-learning-per-minute")
    args = parser.parse_args()
    from rlvr.config import load_recipe

    test_items = load_recipe(args.recipe, args.overrides).run.test_items or 200
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    arms = [run_arm(name, args, test_items) for name in ("plain-trl", "rlvr")]
    finals = [arm["curve"][-1]["verdicts"] for arm in arms]
    result = {"budget_minutes": args.budget_min, "test_items": test_items, "arms": arms,
              "final_plain_vs_rlvr": paired(*finals),
              "gain_vs_base": {arm["arm"]: paired(arm["curve"][0]["verdicts"], arm["curve"][-1]["verdicts"]) for arm in arms}}
    (out / "learning_per_minute.json").write_text(json.dumps(result, indent=2) + "\n")
    plot(arms, out / "learning_per_minute.png", f"{test_items} held-out test items, same training budget")
    for arm in arms:
        points = ", ".join(f"{p['train_seconds'] / 60:.1f} min {p['accuracy']:.1%}" for p in arm["curve"])
        print(f"{arm['arm']}: {points}")
    print(json.dumps({k: result[k] for k in ("final_plain_vs_rlvr", "gain_vs_base")}, indent=2))


if __name__ == "__main__":
    main()
