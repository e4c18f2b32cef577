"""``rlvr list``: the tasks and rewards a recipe can name, and where each comes from."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "list",
        help="list the tasks and rewards a recipe can name (built in and installed plug-ins)",
        description="List the tasks and rewards a recipe can name: rlvr's own and those installed packages register "
        "under the entry-point groups rlvr.tasks and rlvr.rewards, with where each comes from. Any "
        "'module:name' or 'path/to/file.py:name' works too, without being listed.",
    )
    parser.add_argument("what", nargs="?", choices=["tasks", "rewards"], help="only tasks or only rewards")
    parser.set_defaults(func=run)


def rows(kind: str) -> list[tuple[str, str, str]]:
    """(name, where it comes from, first docstring line) for every task or reward a recipe can name."""
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


def _summary(obj: object) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip()
    return doc.splitlines()[0] if doc else ""


def run(args: argparse.Namespace) -> int:
    for kind in [args.what] if args.what else ["tasks", "rewards"]:
        entries = rows(kind)
        width = max(len(name) for name, _, _ in entries)
        print(f"{kind}:")
        for name, where, summary in entries:
            print(f"  {name:<{width}}  {where}" + (f"  {summary}" if summary and where == "built in" else ""))
        own = "mypkg.tasks:MyTask or my_task.py:MyTask" if kind == "tasks" else "mypkg.rewards:fn or my_rewards.py:fn"
        print(f"  (or your own by import path: {own})\n")
    return 0
