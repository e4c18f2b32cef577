"""Partial credit for intermediate steps: a verifiable process reward for GSM8K.

GSM8K reference solutions carry calculator annotations, ``48/2 = <<48/2=24>>24``:
the result of every intermediate step. ``intermediate_steps`` rewards the share
of those results that appear as numbers in the completion's reasoning (the
text before its answer line), scaled by its weight. A completion that computes the
right intermediate values earns some reward even when its final answer is
wrong, which gives GRPO a gradient on problems the model cannot yet finish.

It is off by default; add it to a gsm8k recipe with a small weight::

    rewards:
      - {name: format, weight: 0.5}
      - {name: correctness, weight: 1.0}
      - {name: intermediate_steps, weight: 0.3}

Number spam (listing many numbers to hit the intermediate results by chance)
earns nothing: reasoning with more than ``max_numbers_per_step`` numbers per
reference step (and at least 12) scores 0.
"""

from __future__ import annotations

import re
from typing import Any

from rlvr.rewards.base import REWARDS, RewardFunc, column, completion_text, default_weight, named
from rlvr.verifiers.math import TOLERANCE, find_answer_line

_ANNOTATION = re.compile(r"<<[^<>=]*=([^<>]*)>>")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?")


def step_results(reference: Any) -> list[float]:
    """The results of a reference solution's ``<<expression=result>>`` annotations."""
    if not isinstance(reference, str):
        return []
    values = [_to_float(m.group(1)) for m in _ANNOTATION.finditer(reference)]
    return [v for v in values if v is not None]


def numbers_in(text: str) -> list[float]:
    values = [_to_float(m.group()) for m in _NUMBER.finditer(text)]
    return [v for v in values if v is not None]


def _to_float(text: str) -> float | None:
    try:
        return float(text.strip().replace(",", "").rstrip("."))
    except ValueError:
        return None


def reasoning_of(text: str) -> str:
    found = find_answer_line(text)
    return found[0] if found is not None else text


def step_credit(text: str, reference: Any, max_numbers_per_step: int = 4, tolerance: float = TOLERANCE) -> float:
    """Share of the reference's intermediate results found in ``text``'s reasoning (0 for number spam)."""
    results = step_results(reference)
    if not results:
        return 0.0
    written = numbers_in(reasoning_of(text))
    if len(written) > max(12, max_numbers_per_step * len(results)):
        return 0.0
    found = sum(any(abs(value - w) <= tolerance for w in written) for value in results)
    return found / len(results)


@REWARDS.register("intermediate_steps")
@default_weight(0.3)
def intermediate_steps(reference_column: str = "reference_solution", max_numbers_per_step: int = 4) -> RewardFunc:
    """The share of the reference's ``<<a*b=c>>`` results that the reasoning contains (default weight 0.3)."""

    def intermediate_steps(completions: list[Any], **columns: Any) -> list[float]:
        references = column(columns.get(reference_column), len(completions))
        return [
            step_credit(completion_text(c), ref, max_numbers_per_step)
            for c, ref in zip(completions, references, strict=False)
        ]

    return named("intermediate_steps", intermediate_steps)
