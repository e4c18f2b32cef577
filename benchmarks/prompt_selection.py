"""What online prompt selection (run.prompt_selection) costs, and whether it draws what it should.

    python benchmarks/prompt_selection.py cost           # ms per step of drawing, updating and measuring
    flock /tmp/rlvr-cpu.lock python benchmarks/prompt_selection.py tiny --steps 10   # uniform vs online, tiny runs

``cost``: the selection's own work per step (one generation batch drawn, its groups counted into the estimates,
the expected signal shares computed) for train splits of 2,000 (the CPU default), 7,473 (GSM8K) and 100,000 prompts,
without a model. ``tiny``: the tiny random Llama (``rlvr.testing``) on arithmetic prompts under a reward made for
the mechanism, not for learning: every even-numbered prompt earns 1 whatever the completion (its groups never carry
signal), odd-numbered ones earn the completion's length modulo 2 (mixed groups, mostly). A uniform run draws both
kinds alike; an online one should come to draw the odd ones more. Prints each run's summary block
(``prompt_selection``) and its per-step share of groups with signal. It measures the drawing, not learning.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def cost(sizes: list[int], prompts: int, group: int, steps: int) -> None:
    import torch

    from rlvr.training.prompt_estimates import PassEstimates
    from rlvr.training.prompt_selection import PromptSelection

    for size in sizes:
        keys = [f"p-{i}" for i in range(size)]
        selection = PromptSelection("online", 0.05, PassEstimates(keys, group), seed=0)
        generator = torch.Generator()
        generator.manual_seed(0)
        rows_of = lambda right: [{"rewards": {"correctness": float(k < right)}, "reward": float(k < right)}  # noqa: E731
                                 for k in range(group)]
        start = time.perf_counter()
        for step in range(steps):
            picks = selection.draw(prompts, generator)
            inputs = [{"id": keys[i]} for i in picks for _ in range(group)]
            rows = [row for n, _ in enumerate(picks) for row in rows_of((step + n) % (group + 1))]
            selection.observe(inputs, rows, None)
            selection.expected_signal()
        per_step = (time.perf_counter() - start) / steps
        print(json.dumps({"prompts_in_split": size, "prompts_per_step": prompts, "group": group,
                          "ms_per_step": round(1000 * per_step, 3)}), flush=True)


def tiny(steps: int, train_size: int, seed: int) -> None:
    from rlvr.config import recipe_from_dict
    from rlvr.rewards.base import REWARDS, named
    from rlvr.testing import build_tiny_model
    from rlvr.training.run import train

    if "alternating" not in REWARDS:
        @REWARDS.register("alternating")
        def _alternating(weight: float = 1.0):
            def alternating(completions, id, **_):  # noqa: A002 - the dataset column is called id
                numbers = [int(str(i).rsplit("-", 1)[1]) for i in id]
                return [1.0 if n % 2 == 0 else float(len(str(c)) % 2) for c, n in zip(completions, numbers, strict=True)]

            return named("alternating", alternating)

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        model = build_tiny_model(root / "model")
        for mode in ("uniform", "online"):
            recipe = recipe_from_dict({
                "name": f"tiny-{mode}",
                "model": {"name_or_path": str(model), "lora": False},
                "task": {"name": "arithmetic", "train_size": train_size, "validation_size": 2, "test_size": 2,
                         "shots": 0},
                "rewards": [{"name": "alternating"}],
                "grpo": {"max_steps": steps, "per_device_train_batch_size": 16, "num_generations": 4,
                         "max_completion_length": 8, "temperature": 1.0, "logging_steps": 1, "save_strategy": "no",
                         "seed": seed, "report_to": ["none"]},
                "run": {"output_dir": str(root / mode), "tracking_uri": str(root / "mlruns"), "sample_steps": 0,
                        "health_histogram_steps": 0, "health_patience": 0, "prompt_selection": mode},
            })
            result = train(recipe, quiet=True)
            summary = json.loads((root / mode / "summary.json").read_text())["prompt_selection"]
            signal = [round(1 - e["zero_variance/share"], 3) for e in result.log_history if "zero_variance/share" in e]
            step_time = [e["time/step"] for e in result.log_history if "time/step" in e]
            print(json.dumps({"mode": mode, "signal_share_per_step": signal,
                              "signal_share_mean": round(sum(signal) / len(signal), 3),
                              "mean_step_seconds": round(sum(step_time) / len(step_time), 3), **summary}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    measure = commands.add_parser("cost")
    measure.add_argument("--sizes", type=int, nargs="+", default=[2000, 7473, 100_000])
    measure.add_argument("--prompts", type=int, default=4, help="prompts per generation batch")
    measure.add_argument("--group", type=int, default=8)
    measure.add_argument("--steps", type=int, default=200)
    runs = commands.add_parser("tiny")
    runs.add_argument("--steps", type=int, default=10)
    runs.add_argument("--train-size", type=int, default=40)
    runs.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    if args.command == "cost":
        cost(args.sizes, args.prompts, args.group, args.steps)
    else:
        tiny(args.steps, args.train_size, args.seed)


if __name__ == "__main__":
    main()
