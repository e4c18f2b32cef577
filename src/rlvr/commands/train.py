"""``rlvr train``: GRPO training from a recipe."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train with GRPO from a recipe (default: the embedded CPU recipe)",
        description="Train with TRL's GRPOTrainer from a recipe YAML file or a built-in recipe name. "
        "With no recipe, runs the embedded CPU default (offline, SmolLM2-135M on generated arithmetic).",
    )
    parser.add_argument("recipe", nargs="?", help="recipe file or built-in name (default: cpu-default)")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
        help="override a recipe field, e.g. --set grpo.max_steps=10 (repeatable)",
    )
    parser.add_argument("--resume", nargs="?", const="latest", default=None, metavar="CHECKPOINT",
                        help="resume from the latest checkpoint in the output directory, or from CHECKPOINT")
    parser.add_argument("--output-dir", help="shortcut for --set run.output_dir=DIR")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rlvr.config import load_recipe
    from rlvr.runlock import main_rank
    from rlvr.training.process_group import leave_process_group
    from rlvr.training.run import train

    overrides = list(args.overrides)
    if args.output_dir:
        overrides.append(f"run.output_dir={args.output_dir}")
    recipe = load_recipe(args.recipe, overrides)
    speaks = main_rank()  # under rlvr launch every process runs this; rank 0 alone tells the user
    for note in recipe.notes if speaks else []:  # e.g. no grpo section: the CPU default's taken
        print(f"rlvr: {note}", file=sys.stderr, flush=True)
    if speaks:
        print(f"rlvr: training '{recipe.name}' ({recipe.source}) -> {recipe.output_dir}", flush=True)
    result = train(recipe, resume=args.resume or False)
    if speaks:
        print_summary(result)
    leave_process_group()  # under rlvr launch: every rank ends the run together, not at interpreter exit
    return 0


def print_summary(result) -> None:  # noqa: ANN001
    from rlvr.training.evaluation import before_after_table
    from rlvr.training.verdict import headline

    start, end = result.reward_start, result.reward_end
    print()
    if result.test:
        print(headline(result.test))
        if result.kept_best:
            print("  " + result.kept_best.line())
        print("Diagnostics (training batches and validation; not evidence of learning):")
    print(f"Trained {result.steps} steps in {result.seconds / 60:.1f} min ({result.seconds / max(1, result.steps):.1f} s/step).")
    if start is not None and end is not None:
        trend = "rose" if end > start else "did not rise"
        print(f"Mean reward {trend}: {start:.3f} (first quarter of logged steps) -> {end:.3f} (last quarter).")
    table = before_after_table(result.evaluations)
    if table:
        print(table)
    if result.adapter_dir:
        print(f"Adapter: {result.adapter_dir}")
    if result.merged_dir:
        print(f"Merged model: {result.merged_dir}")
    print(f"Summary: {result.output_dir / 'summary.json'}   Metrics: MLflow (mlflow ui) and {result.output_dir}")
