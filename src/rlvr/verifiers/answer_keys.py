"""Gold answers compared as keys, and the train split's most common one: the constant-answer baseline.

A trained model can gain accuracy by learning the answer distribution rather than the skill; always giving the
train split's most common answer measures that. It lives here, below both tasks (a task's reference completion
is that answer on the answer line) and evaluation (the held-out verdict's baseline).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from rlvr.verifiers.math import format_answer, parse_gold


def answer_key(answer: Any) -> str:
    """Answers compared as numbers where they are numbers (``"1,000"`` == ``"1000"``), else as stripped text."""
    value = parse_gold(answer) if isinstance(answer, str) else None
    return format_answer(value) if value is not None else str(answer).strip()


def most_common_answer(train_answers: Sequence[Any]) -> str | None:
    """The most frequent answer of the train split (ties: the one seen first); None without answers."""
    counts = Counter(answer_key(a) for a in train_answers)
    return counts.most_common(1)[0][0] if counts else None


def constant_answer_accuracy(train_answers: Sequence[Any], gold_answers: Sequence[Any]) -> dict[str, Any]:
    """``{"answer", "accuracy", "n"}``: always answering the train split's most common answer on ``gold_answers``."""
    answer = most_common_answer(train_answers)
    n = len(gold_answers)
    hits = sum(answer_key(g) == answer for g in gold_answers) if answer is not None else 0
    return {"answer": answer, "accuracy": hits / n if n else 0.0, "n": n, "learnt_from": "train split answers"}
