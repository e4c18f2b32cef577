"""Penalties for answers that skip the work.

``reasoning_required`` scores -1 (raw) a completion whose answer line comes with
no reasoning before it, e.g. a bare ``#### The final answer is 18``; its weight
(default 0.5) makes that -0.5. Correctness alone pays a guessed or memorised
answer as much as a worked one; this makes answering without reasoning cost
more than it can earn from the format reward. Add it to a recipe's rewards::

    rewards:
      - {name: format, weight: 0.5}
      - {name: correctness, weight: 1.0}
      - {name: reasoning_required, weight: 0.5}
"""

from __future__ import annotations

from typing import Any

from rlvr.rewards.base import REWARDS, RewardFunc, completion_text, default_weight, named
from rlvr.verifiers.math import find_answer_line


def skipped_reasoning(text: str, min_chars: int = 1) -> bool:
    """True when ``text`` has an answer line with fewer than ``min_chars`` non-space characters before it."""
    found = find_answer_line(text) if isinstance(text, str) else None
    if found is None:
        return False
    before, _ = found
    return len("".join(before.split())) < min_chars


@REWARDS.register("reasoning_required")
@default_weight(0.5)
def reasoning_required(min_chars: int = 1) -> RewardFunc:
    """-1 for an answer line with under ``min_chars`` characters of reasoning before it, else 0 (default weight 0.5)."""

    def reasoning_required(completions: list[Any], **_: Any) -> list[float]:
        return [-1.0 if skipped_reasoning(completion_text(c), min_chars) else 0.0 for c in completions]

    return named("reasoning_required", reasoning_required)
