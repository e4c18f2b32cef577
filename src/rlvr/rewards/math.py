"""Rewards for answers written as ``#### The final answer is N`` (GSM8K and arithmetic tasks).

Raw scores are 0 or 1; the default weights reproduce the published recipe's scale:
format 0.5 + correctness 1.0.
"""

from __future__ import annotations

from typing import Any

from rlvr.rewards.base import REWARDS, RewardFunc, column, completion_text, default_weight, named
from rlvr.verifiers.math import TOLERANCE, is_correct, parse_gold, read_answer


def format_score(text: str) -> bool:
    """An answer line ``#### The final answer is <one number>`` with reasoning before it."""
    answer = read_answer(text)
    return bool(answer and answer.has_phrase and answer.value is not None and answer.has_reasoning_before)


def correctness_score(text: str, gold: Any, tolerance: float = TOLERANCE) -> bool:
    """The first answer line's one number equals the ground truth within ``tolerance``."""
    answer = read_answer(text)
    return bool(answer and is_correct(answer.value, parse_gold(gold), tolerance))


@REWARDS.register("format")
@default_weight(0.5)
def format_reward() -> RewardFunc:
    """1 when the completion has a well-formed answer line after some reasoning, else 0 (default weight 0.5)."""

    def format(completions: list[Any], **_: Any) -> list[float]:
        return [1.0 if format_score(completion_text(c)) else 0.0 for c in completions]

    return named("format", format)


@REWARDS.register("correctness")
@default_weight(1.0)
def correctness_reward(tolerance: float = TOLERANCE, answer_column: str = "final_answer") -> RewardFunc:
    """1 when the answer is within ``tolerance`` of the ``answer_column`` value, else 0 (default weight 1.0)."""

    def correctness(completions: list[Any], **columns: Any) -> list[float]:
        golds = column(columns.get(answer_column), len(completions))
        return [
            1.0 if correctness_score(completion_text(c), gold, tolerance) else 0.0
            for c, gold in zip(completions, golds, strict=False)
        ]

    return named("correctness", correctness)


def closeness_score(text: str, gold: Any) -> float:
    """1 for the exact answer, falling linearly to 0 at a distance of ``max(1, |gold|)``; 0 without an answer.

    A graded reward: in a group whose samples are all wrong, the nearer answers (right sign, right magnitude)
    still earn more, so the group has an advantage to learn from. Evaluation still counts exact answers only.
    """
    answer = read_answer(text)
    target = parse_gold(gold)
    if answer is None or answer.value is None or target is None:
        return 0.0
    return max(0.0, 1.0 - abs(answer.value - target) / max(1.0, abs(target)))


@REWARDS.register("closeness")
@default_weight(0.5)
def closeness_reward(answer_column: str = "final_answer") -> RewardFunc:
    """:func:`closeness_score` in [0, 1]: partial credit for numeric answers near the gold one (default weight 0.5)."""

    def closeness(completions: list[Any], **columns: Any) -> list[float]:
        golds = column(columns.get(answer_column), len(completions))
        return [closeness_score(completion_text(c), gold) for c, gold in zip(completions, golds, strict=False)]

    return named("closeness", closeness)
