"""``rlvr list``: the built-in recipes with what each measured, and the tasks and rewards a recipe can name."""

from __future__ import annotations

import argparse
import re

KINDS = ["recipes", "tasks", "rewards", "tools"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "list",
        help="list the built-in recipes, and the tasks and rewards a recipe can name (built in and plug-ins)",
        description="List the built-in recipes a run can start from, each with what it measured (its description), "
        "and the tasks and rewards a recipe can name: rlvr's own and those installed packages register "
        "under the entry-point groups rlvr.tasks and rlvr.rewards, with where each comes from. Any "
        "'module:name' or 'path/to/file.py:name' works too, without being listed.",
    )
    parser.add_argument("what", nargs="?", choices=KINDS, help="only recipes, tasks, rewards or tools")
    parser.set_defaults(func=run)


def rows(kind: str) -> list[tuple[str, str, str]]:
    """(name, where it comes from, one line of plain text) for every built-in recipe, or every task or reward a
    recipe can name."""
    if kind == "recipes":
        return recipe_rows()
    if kind == "tools":
        return tool_rows()
    from rlvr.plugins import REWARD_GROUP, TASK_GROUP, plugins
    from rlvr.rewards import REWARDS
    from rlvr.tasks import TASKS

    registry, group = (TASKS, TASK_GROUP) if kind == "tasks" else (REWARDS, REWARD_GROUP)
    out = [(name, "built in", _summary(registry.get(name))) for name in registry.names()]
    for name, plugin in sorted(plugins(group).items()):
        where = f"plug-in {plugin.distribution} ({plugin.value})"
        if name in registry:
            where += ", shadowed by the built-in of that name"
        out.append((name, where, ""))
    return out


def tool_rows() -> list[tuple[str, str, str]]:
    """The built-in tools a recipe's ``task.tools`` can name, each with the line the model reads about it."""
    from rlvr.tools.specs import TOOLS, build_tools, parse_tool_specs

    out = []
    for name in TOOLS.names():
        doc = "Run a Python snippet in the code sandbox and return what it prints." if name == "python" else None
        if doc is None:  # the python tool starts a sandbox when built: described without building it
            doc = _summary(build_tools(parse_tool_specs([name]))[0])
        out.append((name, "built in", doc))
    return out


def recipe_rows() -> list[tuple[str, str, str]]:
    """Each built-in recipe with its ``description`` (what it trains and what it measured), read as written."""
    from rlvr.recipe_base import RECIPES_DIR, builtin_recipes, read_yaml

    out = []
    for name in builtin_recipes():
        description = read_yaml(RECIPES_DIR / f"{name}.yaml").get("description") or ""
        out.append((name, "", " ".join(str(description).split())))  # all built in: no column saying so
    return out


def _summary(obj: object) -> str:
    """The first sentence of a docstring's first paragraph, as plain text on one line."""
    paragraph = (getattr(obj, "__doc__", None) or "").strip().split("\n\n")[0]
    sentences = re.split(r"(?<!e\.g)(?<!i\.e)(?<!etc)(?<=\.)\s+", plain_text(paragraph), maxsplit=1)
    return sentences[0]


def plain_text(text: str) -> str:
    """reST markup as the words it marks, on one line: ``:func:`~a.name``` -> ``name``, ````code```` -> ``code``,
    ```text``` -> ``text``, ``**bold**`` / ``*emphasis*`` -> their words."""
    text = re.sub(r":[\w:.-]+:`~?([^`<]*?)\s*(?:<[^`>]*>)?`", _last_part_if_tilde, text)
    text = re.sub(r"`{1,2}([^`]+)`{1,2}_?", r"\1", text)
    text = re.sub(r"\*{1,2}([^*\s][^*]*)\*{1,2}", r"\1", text)
    return " ".join(text.split())


def _last_part_if_tilde(match: re.Match[str]) -> str:
    """A role's target as shown: ``~pkg.mod.name`` shows ``name``; a role with a title shows its title."""
    whole, target = match.group(0), match.group(1)
    return target.rpartition(".")[2] if "`~" in whole else target


def run(args: argparse.Namespace) -> int:
    for kind in [args.what] if args.what else KINDS:
        entries = rows(kind)
        width = max(len(name) for name, _, _ in entries)
        print(f"{kind}:")
        for name, where, summary in entries:
            shown = [where] + ([summary] if summary and where in ("built in", "") else [])
            print(f"  {name:<{width}}  " + "  ".join(part for part in shown if part))
        print(f"  ({_own(kind)})\n")
    return 0


def _own(kind: str) -> str:
    if kind == "recipes":
        return ("or your own file: rlvr train my-recipe.yaml, which can build on one of these (base: cpu-default); "
                "the keyword rounds of BENCHMARKS.md ran recipes in the repository's benchmarks/recipes/")
    if kind == "tools":
        return "or your own by import path in task.tools: my_tools.py:lookup (docs/tools.md)"
    own = "mypkg.tasks:MyTask or my_task.py:MyTask" if kind == "tasks" else "mypkg.rewards:fn or my_rewards.py:fn"
    return f"or your own by import path: {own}"
