"""``rlvr reward ...``: score completions with a task's reward functions."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rlvr.errors import RlvrError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("reward", help="score completions with the built-in verifiable rewards")
    actions = parser.add_subparsers(dest="reward_command", metavar="ACTION")
    score = actions.add_parser(
        "score",
        help="score a JSONL file of completions",
        description="Read lines {'completion': ..., <gold columns>} and write one JSON line of rewards per input line.",
    )
    score.add_argument("--task", required=True, help="task whose rewards apply (gsm8k, arithmetic, ...)")
    score.add_argument("--input", required=True, help="JSONL file, one object per line")
    score.add_argument("--output", help="write here instead of stdout")
    score.add_argument("--rubric", help="rubric YAML (keywords task)")
    score.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="task option, repeatable")
    score.set_defaults(func=run_score)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def parse_options(pairs: list[str]) -> dict[str, Any]:
    import yaml

    options: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise RlvrError(f"--option expects KEY=VALUE, got '{pair}'.")
        key, value = pair.split("=", 1)
        options[key.strip()] = yaml.safe_load(value)
    return options


def run_score(args: argparse.Namespace) -> int:
    from rlvr.jsonl import iter_jsonl
    from rlvr.tasks import get_task

    options = parse_options(args.option)
    if args.rubric:
        options["rubric"] = args.rubric
    task = get_task(args.task, options)
    records, problems = [], []
    for number, record in iter_jsonl(args.input, strict=False):
        if isinstance(record, str):
            problems.append(record)
        elif not isinstance(record.get("completion"), (str, list)):
            problems.append(f"{args.input}:{number}: no 'completion' field (a string or a list of chat messages)")
        else:
            records.append(record)
    results = task.score_records(records) if records else []
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    try:
        for result in results:
            out.write(json.dumps(result, ensure_ascii=False) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    for problem in problems:
        print(f"rlvr: skipped {problem}", file=sys.stderr)
    if problems:
        print(f"rlvr: {len(problems)} line(s) skipped, {len(results)} scored", file=sys.stderr)
        return 1
    return 0
