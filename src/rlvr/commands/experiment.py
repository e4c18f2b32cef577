"""``rlvr experiment``: train a recipe, then evaluate base and trained at several shot counts; one report."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

EXAMPLES = """examples:
  rlvr experiment cpu-default --output outputs/cpu-experiment      # the embedded default, on CPU
  rlvr experiment gsm8k-qwen2.5-0.5b-qlora                          # the published recipe, on a GPU
  rlvr experiment gsm8k-qwen2.5-0.5b-published-as-run --decoding published
  rlvr experiment my-recipe.yaml --shots 0,4,8 --items 500 --set grpo.max_steps=100

Rerunning the same command skips every stage that finished with the same settings.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "experiment",
        help="train a recipe, evaluate base vs trained at several shot counts on the same test items, one report",
        description="Train the recipe, then evaluate the base model and the trained one on the first N test items at "
        "each shot count of run.sweep_shots (greedy; strict and published scoring) and on each held-out variant of "
        "run.sweep_variants, and write DIR/train, samples.jsonl, summary.json, figures/ and one self-contained "
        "report.html. Finished stages are not rerun.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("recipe", nargs="?", help="recipe file or built-in name (default: cpu-default)")
    parser.add_argument("--output", metavar="DIR", help="experiment directory (default: outputs/<recipe name>-experiment)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override a recipe field, e.g. --set grpo.max_steps=10 (repeatable)")
    parser.add_argument("--shots", help="comma-separated shot counts 0-8 (default: the recipe's run.sweep_shots)")
    parser.add_argument("--items", type=int, help="evaluate the first N test items (default: the recipe's run.sweep_items)")
    parser.add_argument("--decoding", default="strict", choices=["strict", "published"],
                        help="strict: stop at the answer line, grpo.max_completion_length tokens at most (default); "
                        "published: no stop, up to 1,024 new tokens, as the published notebook")
    parser.add_argument("--backend", default="auto", choices=["auto", "hf", "vllm"], help="evaluation backend")
    parser.add_argument("--training-eval", action="store_true",
                        help="keep the recipe's in-training held-out evaluation (run.eval_items); off by default")
    parser.add_argument("--no-progress", action="store_true", help="hide the evaluation progress bars")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the plan (stages and whether each is done, training recipe, sweep) as JSON and exit")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rlvr.commands.eval import parse_shots
    from rlvr.config import load_recipe
    from rlvr.experiment.run import ExperimentConfig, run_experiment

    recipe = load_recipe(args.recipe, args.overrides)
    for note in recipe.notes:  # e.g. no grpo section: the CPU default's taken
        print(f"rlvr: {note}", file=sys.stderr, flush=True)
    output = Path(args.output or f"outputs/{recipe.name}-experiment")
    config = ExperimentConfig(
        recipe=recipe,
        output_dir=output,
        shots=parse_shots(args.shots),
        items=args.items,
        decoding=args.decoding,
        backend=args.backend,
        progress=not args.no_progress,
        command=" ".join(["rlvr", *map(shlex.quote, sys.argv[1:])]) if sys.argv[1:2] == ["experiment"] else "",
        training_eval=args.training_eval,
    )
    if args.dry_run:
        from rlvr.experiment.run import experiment_plan

        print(json.dumps(experiment_plan(config), indent=2, default=str))
        return 0
    print(f"rlvr: experiment '{recipe.name}' ({recipe.source}) -> {output}", flush=True)
    result = run_experiment(config)
    print_summary(result.summary)
    print(f"Report: {result.report}")
    return 0


def print_summary(summary: dict) -> None:
    print()
    print(f"{'shots':>5}  {'base':>22}  {'trained':>22}  {'diff':>9}  {'McNemar p':>9}  {'published base':>15}  "
          f"{'published trained':>17}")
    for row in summary["sweep"]:
        base, trained, paired = row.get("base", {}), row.get("trained", {}), row.get("paired", {})

        def accuracy(result: dict, key: str = "accuracy", interval: str = "ci95") -> str:
            if key not in result:
                return "-"
            return f"{result[key]:.1%} [{result[interval][0]:.0%}-{result[interval][1]:.0%}]"

        difference = f"{paired['accuracy_difference'] * 100:+.1f}" if paired else "-"
        p_value = f"{paired['p_value']:.3g}" if paired else "-"
        print(f"{row['shots']:>5}  {accuracy(base):>22}  {accuracy(trained):>22}  {difference:>9}  {p_value:>9}  "
              f"{base.get('published_accuracy', float('nan')):>15.1%}  {trained.get('published_accuracy', float('nan')):>17.1%}")
    for variant in summary.get("variants") or []:
        base, trained, paired = variant.get("base", {}), variant.get("trained", {}), variant.get("paired", {})
        if base and trained and paired:
            print(f"Held-out variant '{variant['name']}' ({variant['shots']}-shot, {paired['n']} items): base "
                  f"{base['accuracy']:.1%} -> trained {trained['accuracy']:.1%} "
                  f"({paired['accuracy_difference'] * 100:+.1f} pts, McNemar p {paired['p_value']:.3g}).")
    common = summary.get("most_common_answer") or {}
    if common:
        print(f"Always answering '{common['answer']}' (the most common gold answer): {common['accuracy']:.1%}.")
    overlap = summary.get("train_overlap") or {}
    if overlap.get("in_training_split"):
        print(f"WARNING: {overlap['in_training_split']} of {overlap['items']} test items also occur in the training split.")
    print(f"Wall time: {summary['wall_seconds'] / 60:.1f} min")
