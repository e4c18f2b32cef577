"""``rlvr filter``: estimate each training prompt's pass rate with the base model and keep a band."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "filter",
        help="keep training prompts whose base-model pass rate lies in a band (difficulty filtering)",
        description="Sample completions from the recipe's base model for each training prompt, judge them as the "
        "task defines correct (math: the right answer; code: every test passes; keywords: full rubric credit), and "
        "write {id, pass_rate, kept} lines. Train on the kept prompts with --set run.difficulty_filter=FILE.",
    )
    parser.add_argument("recipe", nargs="?", help="recipe file or built-in name (default: cpu-default)")
    parser.add_argument("--samples", type=int, default=8, help="completions per prompt (default 8)")
    parser.add_argument("--band", type=float, nargs=2, default=(0.1, 0.9), metavar=("LOW", "HIGH"),
                        help="keep prompts with LOW <= pass rate <= HIGH (default 0.1 0.9)")
    parser.add_argument("--limit", type=int, help="estimate only the first N training prompts")
    parser.add_argument("--batch-size", type=int, default=16, help="completions generated together (default 16)")
    parser.add_argument("--temperature", type=float, help="sampling temperature (default: the recipe's grpo.temperature)")
    parser.add_argument("--output", help="output JSONL (default: <output_dir>/difficulty.jsonl)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override a recipe field (repeatable)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rlvr.config import load_recipe
    from rlvr.errors import RlvrError
    from rlvr.run_parts import build_parts
    from rlvr.training.difficulty import Band, pass_rates, sample_completions

    band = Band(*args.band)
    if args.samples < 1 or args.batch_size < 1:
        raise RlvrError("--samples and --batch-size must be at least 1.")
    recipe = load_recipe(args.recipe, args.overrides)
    parts = build_parts(recipe)
    parts.apply_policies()  # the limits on the user's code and the sandbox policy, as training applies them
    print(parts.line(), flush=True)
    task = parts.task()
    dataset = task.load("train")
    if args.limit:
        dataset = dataset.select(range(min(args.limit, len(dataset))))
    rows = [dict(row) for row in dataset]
    model, tokenizer = parts.model_and_tokenizer()  # the base (no LoRA), in training's precision and template
    model.eval()
    print(parts.precision.line(), flush=True)
    temperature = args.temperature if args.temperature is not None else parts.sampling["temperature"]
    max_tokens = parts.max_completion_length
    print(f"rlvr: estimating pass rates of {len(rows)} prompts with {args.samples} samples each", flush=True)
    completions = sample_completions(
        model, tokenizer, [r["prompt"] for r in rows], args.samples, max_tokens, temperature, task.stop_patterns,
        batch_size=args.batch_size, seed=parts.seed, progress=True, top_p=parts.sampling["top_p"],
        stop_strings=task.stop_strings,
    )
    try:
        rates = pass_rates(task, rows, completions)
    finally:
        task.close()
    output = Path(args.output) if args.output else recipe.output_dir / "difficulty.jsonl"
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("w", encoding="utf-8") as out:
        for row, rate in zip(rows, rates, strict=False):
            out.write(json.dumps({"id": row.get("id"), "pass_rate": rate, "kept": band.keeps(rate)}) + "\n")
    kept = sum(band.keeps(r) for r in rates)
    never, always = sum(r == 0 for r in rates), sum(r == 1 for r in rates)
    print(f"kept {kept}/{len(rates)} prompts with pass rate in [{band.low}, {band.high}] "
          f"(never solved: {never}, always solved: {always}) -> {output}")
    print(f"train on them with: --set run.difficulty_filter={output}")
    return 0
