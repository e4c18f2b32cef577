"""Held-out means held out: train, validation and test never share a question.

Questions are compared by normalised text (:func:`normalize_question`: Unicode
NFKC, case-folded, whitespace collapsed). Tasks that read files keep the test
split whole and drop from validation, then train, every row whose question an
earlier split already holds (:func:`disjoint_rows`); generated tasks draw each
split from its own stream and skip questions already taken
(:class:`QuestionPool`). :func:`overlap_report` checks any task afterwards and is
what ``rlvr train`` and ``rlvr eval`` record.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from itertools import combinations
from typing import Any, TypeVar

from rlvr.errors import RlvrError

Row = TypeVar("Row")

#: Splits in the order they claim questions: test is kept whole, validation next, train gets the rest.
PRIORITY = ("test", "validation", "train")
_SPACE = re.compile(r"\s+")


def normalize_question(text: Any) -> str:
    """The text two questions are compared by: NFKC, case-folded, runs of whitespace as one space."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", str(text)).casefold()).strip()


def question_of(row: dict[str, Any]) -> str:
    """A row's question: its ``question`` column, else the text of its prompt (last user turn of a chat)."""
    if row.get("question"):
        return str(row["question"])
    prompt = row.get("prompt", "")
    if isinstance(prompt, list):
        users = [m.get("content", "") for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        return str(users[-1]) if users else ""
    return str(prompt)


def disjoint_rows(splits: dict[str, list[Row]], text: Callable[[Row], str]) -> tuple[dict[str, list[Row]], dict[str, int]]:
    """Drop from each split the rows whose question a split before it (``PRIORITY``) holds.

    Returns the kept rows per split and how many rows each split lost.
    """
    seen: set[str] = set()
    kept: dict[str, list[Row]] = {}
    dropped: dict[str, int] = {}
    for split in [s for s in PRIORITY if s in splits]:
        rows = splits[split]
        kept[split] = [row for row in rows if normalize_question(text(row)) not in seen]
        dropped[split] = len(rows) - len(kept[split])
        seen |= {normalize_question(text(row)) for row in kept[split]}
    return kept, dropped


class QuestionPool:
    """Questions already claimed by some split; generated splits draw around them."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def draw(self, candidates: Iterable[dict[str, Any]], size: int, where: str, least: int | None = None
             ) -> list[dict[str, Any]]:
        """The first ``size`` candidates whose question is new (to this split and every earlier one); with ``least``,
        as many as the candidates hold when that is at least ``least`` (a small problem space: a curriculum level)."""
        chosen = []
        drawn = 0
        for item in candidates:
            drawn += 1
            key = normalize_question(item["question"])
            if key in self.taken:
                continue
            self.taken.add(key)
            chosen.append(item)
            if len(chosen) == size:
                return chosen
        if least is not None and len(chosen) >= least:
            return chosen
        raise RlvrError(
            f"{where}: only {len(chosen)} distinct new questions in {drawn} generated (asked for {size}); "
            "the generator's problem space is too small for disjoint splits: lower the split sizes or widen "
            "the generator's options (arithmetic: generator_config; reasoning-gym: config)."
        )


def overlap_report(task: Any, splits: Iterable[str] = PRIORITY) -> dict[str, Any]:
    """Shared questions between every pair of ``task``'s splits, after the task's own deduplication.

    A split the task does not have (HumanEval's train) is listed under ``missing`` with the reason.
    """
    questions: dict[str, set[str]] = {}
    missing: dict[str, str] = {}
    for split in splits:
        try:
            dataset = task.load(split)
        except RlvrError as error:
            missing[split] = str(error)
            continue
        questions[split] = {normalize_question(question_of(row)) for row in dataset}
    pairs = {
        f"{a}/{b}": len(questions[a] & questions[b])
        for a, b in combinations([s for s in ("train", "validation", "test") if s in questions], 2)
    }
    report: dict[str, Any] = {
        "compared_by": "normalised question text",
        "questions": {split: len(values) for split, values in questions.items()},
        "shared": pairs,
        "dropped": dict(getattr(task, "dropped_overlaps", {}) or {}),
    }
    if missing:
        report["missing"] = missing
    return report
