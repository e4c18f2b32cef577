"""The ``jsonl`` task's data as lines: the file of each split, the splits carved where files are missing, and
which fields of the lines become columns of their own.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError

#: Columns rlvr writes itself; fields of the user's file with these names are kept in ``record`` only.
RESERVED = ("id", "prompt", "completion", "question", "final_answer", "record")
SPLIT_FILES = {"train": "train.jsonl", "validation": "validation.jsonl", "test": "test.jsonl"}


@dataclass
class Line:
    """One line of the user's file: where it came from, its fields, and its question and gold as text."""

    source: str
    number: int
    record: dict[str, Any]
    question: str
    gold: str


def split_files(option: str) -> dict[str, Path]:
    """The file of each split the ``path`` option names: one file (train), or a directory's split files."""
    path = Path(option).expanduser()
    if path.is_file():
        return {"train": path}
    if path.is_dir():
        files = {split: path / name for split, name in SPLIT_FILES.items() if (path / name).is_file()}
        if "train" not in files:
            found = sorted(p.name for p in path.glob("*.jsonl"))
            raise RlvrError(f"{path} has no train.jsonl (found: {', '.join(found) or 'no JSONL files'}); "
                            "a directory task needs train.jsonl and optionally test.jsonl, validation.jsonl.")
        return files
    raise RlvrError(f"jsonl path not found: {option} (relative paths start at {Path.cwd()}).")


def carve_lines(lines: dict[str, list[Line]], seed: int, test_fraction: float,
                validation_fraction: float) -> dict[str, list[Line]]:
    """Test and validation cut from train (seeded) where their files are absent."""
    train = list(lines["train"])
    random.Random(seed).shuffle(train)
    out: dict[str, list[Line]] = {}
    for split, fraction in (("test", test_fraction), ("validation", validation_fraction)):
        if split in lines:
            out[split] = lines[split]
        else:
            cut = max(1, round(len(lines["train"]) * fraction)) if len(train) > 1 else 0
            out[split], train = sorted(train[:cut], key=_order), train[cut:]
    out["train"] = sorted(train, key=_order)
    return out


def scalar_fields(lines: list[Line]) -> list[str]:
    """Fields of the lines that become their own columns (TRL passes them to rewards): one scalar type each."""
    names = dict.fromkeys(k for line in lines for k in line.record if k not in RESERVED)
    return [n for n in names if _one_scalar_type([line.record.get(n) for line in lines])]


def is_blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def options_of(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _order(line: Line) -> tuple[str, int]:
    return line.source, line.number


def _one_scalar_type(values: list[Any]) -> bool:
    kinds = set()
    for value in values:
        if value is None:
            continue
        if isinstance(value, bool):
            kinds.add("bool")
        elif isinstance(value, (int, float)):
            kinds.add("number")
        elif isinstance(value, str):
            kinds.add("str")
        else:
            return False
    return len(kinds) == 1
