"""A reward in TRL's signature: ``completions, **columns -> list[float]``, one number per completion."""

from __future__ import annotations

from typing import Any


def brevity(completions: list[Any], max_words: int = 40, **columns: Any) -> list[float]:
    """1.0 for a completion of at most ``max_words`` words, falling to 0 at twice that.

    ``max_words`` can be set from a recipe: ``{name: brevity, weight: 0.2, max_words: 30}``.
    """
    scores = []
    for completion in completions:
        text = completion if isinstance(completion, str) else str(completion[-1].get("content", ""))
        words = len(text.split())
        scores.append(max(0.0, min(1.0, 2.0 - words / max_words)))
    return scores


brevity.default_weight = 0.2  # the weight a recipe gets when it names the reward without one
