"""``rlvr reward ...``: score completions with a task's reward functions."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
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
    add_user_code_options(score, "default 60")
    score.set_defaults(func=run_score)
    audit = actions.add_parser(
        "audit",
        help="probe the rewards with completions that imitate known reward hacks",
        description="Score a library of hack probes (answer without reasoning, several answers, number spam, early "
        "exit, ...) and honest controls with a task's rewards (or a recipe's). Exit 1 when a hack earns at least as "
        "much as an honest correct answer.",
    )
    audit.add_argument("--task", action="append", metavar="TASK",
                       help="task whose probes to run: gsm8k, arithmetic, code (also mbpp, humaneval, pyfunc), keywords, "
                            "jsonl and reasoning-gym with --recipe (repeatable; default: all)")
    audit.add_argument("--recipe", help="use this recipe's rewards (and reward_weights) instead of the task defaults")
    audit.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                       help="override a recipe field, e.g. --set 'rewards=[{name: correctness}]' (repeatable)")
    audit.set_defaults(func=run_audit)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def add_user_code_options(parser: argparse.ArgumentParser, default: str) -> None:
    """--user-code-timeout and --sandbox-allow-weaker (rlvr eval, rlvr reward score)."""
    parser.add_argument("--user-code-timeout", type=float, metavar="SECONDS",
                        help=f"limit on each call of your reward (a whole batch) or checker (one completion); {default}; "
                        "0: none")
    parser.add_argument("--sandbox-allow-weaker", action="store_true",
                        help="code tasks: run programs with weaker sandbox isolation where this machine allows no more "
                        "(default: stop with one line naming what is missing)")


def apply_user_code_options(args: argparse.Namespace, limits: dict[str, Any] | None = None) -> None:
    """The time limits on the user's code (a run recipe's ``limits``, then --user-code-timeout, else the default)
    and the sandbox opt-in (``--sandbox-allow-weaker`` sets what the sandbox reads)."""
    from rlvr import timeouts

    if limits is not None:
        timeouts.configure(limits)
    given = getattr(args, "user_code_timeout", None)
    if given is not None or limits is None:  # no run recipe: the option (or the default) holds
        timeouts.set_user_code_timeout(timeouts.DEFAULT_USER_CODE_TIMEOUT if given is None else given,
                                       "--user-code-timeout")
    if getattr(args, "sandbox_allow_weaker", False):
        import os

        from rlvr.sandbox.executor import ALLOW_WEAKER_ENV

        os.environ[ALLOW_WEAKER_ENV] = "1"


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

    apply_user_code_options(args)  # no recipe here: the option (or the default) holds
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


def run_audit(args: argparse.Namespace) -> int:
    from rlvr.audit.probe_sets import PROBE_SETS
    from rlvr.audit.report import render_table, verdict
    from rlvr.audit.runner import audit
    from rlvr.audit.tool_probes import with_tool_probes
    from rlvr.config import load_recipe
    from rlvr.rewards import REWARDS
    from rlvr.rewards.base import reward_weights
    from rlvr.tasks.base import TASKS

    recipe = load_recipe(args.recipe, args.overrides) if (args.recipe or args.overrides) else None
    tools: list[str] = []
    if recipe is not None:  # the recipe's limits on the user's code and sandbox policy, as training applies them
        from rlvr.run_parts import build_parts

        parts = build_parts(recipe)
        parts.apply_policies()
        print(parts.line(), flush=True)
        tools = list(parts.tool_names)
    names = args.task or ([recipe.task_name] if recipe else list(PROBE_SETS))
    failed = audited = 0
    for name in names:
        grpo_weights = recipe.grpo.get("reward_weights") if recipe else None
        probes = _probe_set_name(name, PROBE_SETS)
        if probes is None:
            result = _audit_answer_line_task(name, recipe, grpo_weights, tools)
            audited += 1
            failed += not result.passed
            continue
        probe_set = PROBE_SETS[probes]
        specs = recipe.rewards if recipe and recipe.rewards else _default_rewards(name, probe_set, TASKS)
        if grpo_weights is not None and not (recipe and recipe.rewards):  # the recipe's weights replace the defaults'
            specs = [{**spec, "weight": None} for spec in specs]
        if name == "keywords":
            specs = _with_task_rubric(specs, recipe.task_options if recipe and recipe.task_name == name else {})
            own = _custom_rubric(specs)
            if own:
                print(f"skipping keywords: its probes are written for the built-in clinical rubric, and the rewards "
                      f"use {own}; audit that rubric with your own honest and hacked completions "
                      f"(rlvr reward score --task keywords --rubric {own}).\n")
                continue
            if any(_judges_per_item(spec) for spec in specs):
                probe_set = _keyword_item_probes(recipe)
        probe_set = with_tool_probes(name, probe_set, tools)
        missing = sorted({spec["name"] for spec in specs if not _available(spec["name"])})
        if missing:
            print(f"skipping {name}: reward {', '.join(repr(m) for m in missing)} is not registered in this "
                  f"install (registered: {', '.join(REWARDS.names())}).\n")
            continue
        funcs = [_build(spec) for spec in specs]
        result = audit(probe_set, funcs, reward_weights(specs, grpo_weights))
        via = "" if probes == name else f", {probes}'s probes"
        print(f"reward audit: {name} ({', '.join(f.__name__ for f in funcs)}){via}")
        print(render_table(result))
        print(verdict(result) + "\n")
        audited += 1
        failed += not result.passed
    if not audited:
        raise RlvrError("no task could be audited: see why above.")
    return 1 if failed else 0


def _judges_per_item(spec: dict[str, Any]) -> bool:
    """Whether a reward reads the vignette's condition and findings: the per-item ``keywords`` rubric, and
    ``diagnosis`` always (it scores nothing on a probe without a condition)."""
    return spec["name"] == "diagnosis" or (spec["name"] == "keywords" and bool(spec.get("per_item")))


def _probe_set_name(name: str, probe_sets: dict[str, Any]) -> str | None:
    """The probe set that audits task ``name``: its own, else ``code``'s for a task judged as the ``code`` task is
    (mbpp, humaneval, pyfunc: the same execution reward on the same fenced programs), else None."""
    if name in probe_sets:
        return name
    from rlvr.tasks import task_class
    from rlvr.tasks.code import CodeTask

    try:
        cls = task_class(name)
    except RlvrError:
        return None
    return "code" if issubclass(cls, CodeTask) and "code" in probe_sets else None


def _audit_answer_line_task(name: str, recipe: Any, grpo_weights: Any, tools: list[str]) -> Any:
    """Audit a task judged on the answer line by its own verifier (jsonl, reasoning-gym): probes around its first
    test item, through the rewards the task builds (its format and correctness follow its verifier)."""
    from rlvr.audit.probe_sets import PROBE_SETS, answer_line_probes
    from rlvr.audit.report import render_table, verdict
    from rlvr.audit.runner import audit
    from rlvr.audit.tool_probes import with_tool_probes
    from rlvr.tasks import get_task, task_class
    from rlvr.tasks.answer_line import AnswerLineTask

    try:
        cls = task_class(name)
    except RlvrError:
        cls = None
    if cls is None or not issubclass(cls, AnswerLineTask):
        raise RlvrError(f"no reward-hack probes for task '{name}'; tasks with probes: {', '.join(PROBE_SETS)}, and "
                        "tasks judged on the answer line (jsonl, reasoning-gym) given by --recipe.")
    if recipe is None or recipe.task_name != name:
        raise RlvrError(f"task '{name}' needs its options (data, verifier): audit it with --recipe RECIPE.")
    task = get_task(name, recipe.task_options)
    specs = recipe.rewards or None
    funcs = task.reward_functions(specs)
    probe_set = with_tool_probes(name, answer_line_probes(task), tools)
    result = audit(probe_set, funcs, task.reward_weights(specs, grpo_weights))
    print(f"reward audit: {name} ({', '.join(f.__name__ for f in funcs)})")
    print(render_table(result))
    print(verdict(result) + "\n")
    return result


def _available(name: str) -> bool:
    """Whether reward ``name`` can be built here: built in, an installed plug-in, or an import path that loads."""
    from rlvr.rewards.base import reward_factory

    try:
        reward_factory(name)
    except RlvrError:
        return False
    return True


def _default_rewards(name: str, probe_set: Any, tasks: Any) -> list[dict[str, Any]]:
    if name in tasks:
        return list(tasks.get(name).default_rewards)
    return [{"name": reward} for reward in probe_set.rewards]


def _with_task_rubric(specs: list[dict[str, Any]], options: dict[str, Any]) -> list[dict[str, Any]]:
    """``specs`` with the keywords task's options (rubric, semantic, per-item, example notes) filled in, as
    training builds them: the task fills them, so the audit judges with the rewards training uses."""
    from rlvr.tasks import get_task

    return get_task("keywords", options).reward_specs(specs)


def _keyword_item_probes(recipe: Any) -> Any:
    """The per-item keyword probes around a real community-acquired pneumonia vignette of the recipe's prompts (its
    ``condition`` and ``findings`` columns as training reads them; the probes' own vignette when there is none),
    with copies of the example note when the recipe's prompts show one."""
    from rlvr.audit.keyword_probes import ITEM_CONDITION, keyword_item_probes
    from rlvr.tasks import get_task

    options = dict(recipe.task_options) if recipe is not None and recipe.task_name == "keywords" else {}
    task = get_task("keywords", {**options, "per_item": True, "limit": None})
    examples = [note.completion for note in task.shown_notes()]
    for split in ("test", "validation", "train"):
        for row in task.load(split):
            if row["condition"] == ITEM_CONDITION:
                print(f"per-item probes around {split} vignette {row['id']} (findings: {', '.join(row['findings'])})")
                return keyword_item_probes({key: row[key] for key in ("question", "rubric", "condition", "findings")},
                                           examples)
    return keyword_item_probes(examples=examples)


def _custom_rubric(specs: list[dict[str, Any]]) -> str | None:
    from rlvr.verifiers.keyword_rubric_loader import BUILTIN_RUBRIC

    for spec in specs:
        rubric = spec.get("rubric") if spec["name"] == "keywords" else None
        if rubric and Path(rubric).expanduser().resolve() != BUILTIN_RUBRIC.resolve():
            return str(rubric)
    return None


def _build(spec: dict[str, Any]) -> Any:
    from rlvr.rewards.base import build_reward

    return build_reward(spec["name"], {k: v for k, v in spec.items() if k not in ("name", "weight")})
