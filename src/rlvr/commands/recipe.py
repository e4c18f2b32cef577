"""``rlvr recipe show``: a recipe as it resolves (bases merged, --set applied), each value with where it came from."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("recipe", help="show a recipe as it resolves, with where each value came from")
    actions = parser.add_subparsers(dest="recipe_command", metavar="ACTION")
    show = actions.add_parser(
        "show",
        help="print the resolved recipe as YAML, each value commented with its origin",
        description="Print the recipe rlvr train would run: its base chain merged, --set applied, defaults filled "
        "in, as YAML with a comment on each value saying where it came from: file, base NAME, --set, default "
        "(the field's default) or default (cpu-default) (a recipe without any grpo section).",
    )
    show.add_argument("recipe", nargs="?", help="recipe file or built-in name (default: cpu-default)")
    show.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                      help="override a recipe field, e.g. --set grpo.max_steps=10 (repeatable)")
    show.add_argument("--plain", action="store_true",
                      help="the resolved recipe alone, without comments: a standalone recipe file with no base")
    show.set_defaults(func=run_show)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def run_show(args: argparse.Namespace) -> int:
    import yaml

    from rlvr.config import resolve_recipe
    from rlvr.recipe_base import display
    from rlvr.recipe_show import annotated_yaml

    recipe, resolved = resolve_recipe(args.recipe, args.overrides)
    data = recipe.to_dict()
    if args.plain:
        print(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120), end="")
        return 0
    chain = " -> ".join([display(resolved.path), *resolved.bases])
    print(f"# {chain}" + (f", --set {' '.join(args.overrides)}" if args.overrides else ""))
    for note in recipe.notes:
        print(f"# {note}")
    print(annotated_yaml(data, resolved.origin, {("grpo",): "every other GRPOConfig field: TRL's default"}), end="")
    return 0
