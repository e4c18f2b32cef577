"""What ``rlvr recipe show`` prints: a resolved recipe as YAML, each value ending in ``# ORIGIN``, the comments in one
column whatever the values.

The column comes after the longest value that fits on one line within :data:`COLUMN_MAX` characters. A longer value
(a list or mapping written over several lines in its file, a long description) is written over several lines that
fit before the column, its comment after the last one; a single word too long to fold puts the comment on a line of
its own, still at the column. The output stays valid YAML: ``yaml.safe_load`` reads the recipe back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

KeyPath = tuple[str, ...]

#: The widest one-line value that sets the comment column; longer ones are folded to fit before it.
COLUMN_MAX = 48

#: PyYAML ignores a width under 5 (it takes 80 instead).
_NARROWEST = 5


def flow(value: Any) -> str:
    """One value as flow-style YAML on one line."""
    text = yaml.safe_dump(value, default_flow_style=True, width=10**9, sort_keys=False, allow_unicode=True).strip()
    return text.removesuffix("\n...").removesuffix("...").strip()


def annotated_yaml(recipe: dict[str, Any], origin: Callable[[KeyPath], str],
                   notes: dict[KeyPath, str] | None = None) -> str:
    """``recipe`` (``Recipe.to_dict()``) as YAML, each value's line ending in ``# ORIGIN`` (``origin(path)``).

    Mappings are written as blocks (nested ones too), everything else in flow style; a list of mappings gets one
    item per line, or a block per item where the line would pass :data:`COLUMN_MAX`. ``notes`` adds a comment line
    at the end of a mapping's block.
    """
    entries: list[tuple[str, Any, str] | str] = []  # (lead, value, comment), or a line without a value

    def block(node: dict[str, Any], at: KeyPath, indent: int, dash: bool = False) -> None:
        pad = "  " * indent
        for index, (key, value) in enumerate(node.items()):
            here, lead = (*at, key), (pad[:-2] + "- " if dash and index == 0 else pad) + flow(key)
            if isinstance(value, dict) and value:
                entries.append(f"{lead}:")
                block(value, here, indent + 1)
            elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                entries.append(f"{lead}:")
                for item in value:
                    if item and len(f"{pad}  - {flow(item)}") > COLUMN_MAX:
                        block(item, here, indent + 2, dash=True)  # each leaf takes the list's origin
                    else:
                        entries.append((f"{pad}  - ", item, origin(here)))
            else:
                entries.append((f"{lead}: ", value, origin(here)))
        if notes and at in notes:
            entries.append(f"{pad}# {notes[at]}")

    block(recipe, (), 0)
    one_line = [len(lead + flow(value)) for lead, value, _ in (e for e in entries if not isinstance(e, str))]
    column = max((width for width in one_line if width <= COLUMN_MAX), default=0)
    out: list[str] = []
    for entry in entries:
        if isinstance(entry, str):
            out.append(entry)
            continue
        lead, value, comment = entry
        lines = _fitted(lead, value, column)
        if len(lines[-1]) <= column:
            lines[-1] = f"{lines[-1]:<{column}}   # {comment}"
        else:  # a word longer than the room: the comment under it, in the column
            lines.append(f"{'':<{column}}   # {comment}")
        out.extend(lines)
    return "\n".join(out) + "\n"


def _fitted(lead: str, value: Any, column: int) -> list[str]:
    """``lead`` + ``value`` in flow style, on one line when it ends by ``column``, else folded (continuation lines
    indented under ``lead``) so that the fewest lines pass the column, then into the fewest lines."""
    single = lead + flow(value)
    if len(single) <= column:
        return [single]
    indent = " " * (len(lead) - len(lead.lstrip()) + 4)
    shift = len(indent) - 2  # PyYAML indents continuation lines by 2; ours by len(indent)
    widths = range(max(column - shift, _NARROWEST), _NARROWEST - 1, -1)
    folds = [_folded(lead, value, indent, width, len(lead) - shift) for width in widths]
    return min(folds, key=lambda lines: (sum(len(line) > column for line in lines), len(lines)))


def _folded(lead: str, value: Any, indent: str, width: int, start: int) -> list[str]:
    """``value`` folded by PyYAML at ``width``, its first line starting at column ``start`` (after ``lead``)."""

    class Dumper(yaml.SafeDumper):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.column = start  # the emitter's position on its first line: where the value starts

    text = yaml.dump(value, Dumper=Dumper, default_flow_style=True, width=width, sort_keys=False, allow_unicode=True)
    parts = [part.strip() for part in text.strip().splitlines()]
    if parts[-1] == "...":  # a plain scalar's end-of-document marker
        parts.pop()
    return [lead + parts[0], *(indent + part for part in parts[1:])]
