"""``rlvr probe``: before training, whether GRPO can move the recipe's base model on its task."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "probe",
        help="before training: can GRPO move the base model on this task? (figures and a verdict)",
        description="Decode the first N training prompts (as training sees them) with the recipe's base model, "
        "greedy and in groups of grpo.num_generations as training samples them, and report accuracy, format rate, "
        "pass@1 and pass@G, truncation, the share of groups with zero reward variance under the recipe's rewards, "
        "chance for multiple-choice tasks, and a verdict with the recipe change it suggests. Writes probe.json.",
    )
    parser.add_argument("recipe", nargs="?", help="recipe file or built-in name (default: cpu-default)")
    parser.add_argument("--items", type=int, default=64, help="the first N training prompts (default 64)")
    parser.add_argument("--batch-size", type=int,
                        help="completions generated together (default: the recipe's run.eval_batch_size)")
    parser.add_argument("--output", help="output JSON (default: <output_dir>/probe.json)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override a recipe field (repeatable)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rlvr import atomic
    from rlvr.config import load_recipe
    from rlvr.errors import RlvrError
    from rlvr.run_parts import build_parts
    from rlvr.training.probe import check_items, prepare, probe
    from rlvr.training.probe_render import table

    if args.items < 1:
        check_items(args.items, 0, False)
    if args.batch_size is not None and args.batch_size < 1:
        raise RlvrError("--batch-size must be at least 1.")
    recipe = load_recipe(args.recipe, args.overrides)
    parts = build_parts(recipe)
    parts.apply_policies()  # the limits on the user's code and the sandbox policy, as training applies them
    print(parts.line(), flush=True)
    task = parts.task()
    try:
        rows, gold_read = prepare(task, recipe, args.items)  # bad items or unreadable gold: before loading the model
        model, tokenizer = parts.model_and_tokenizer()  # the base (no LoRA), in training's precision and template
        model.eval()
        precision = parts.precision
        print(f"rlvr: probing {recipe.model.name_or_path} on the first {len(rows)} training prompts of "
              f"{recipe.task_name}", flush=True)
        print(precision.line(), flush=True)  # training's precision: the probe predicts what training will see
        result = probe(model, tokenizer, task, recipe, rows, args.batch_size or recipe.run.eval_batch_size,
                       gold_read, progress=True)
        result.info["precision"] = precision.dtype
    finally:
        task.close()
    output = Path(args.output) if args.output else recipe.output_dir / "probe.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_json(output, result.to_json())
    print(table(result))
    print(f"rlvr: probe took {result.info['seconds']:.0f} s -> {output}")
    return 0
