"""The ``example_copy`` reward: a cost for reproducing the worked example the prompt shows.

With a worked example before every prompt (the keywords task's ``shots``), a small model can earn the rubric's
form by copying the example whole, whatever it is asked: trained at temperature 0.5, one seed's notes became the
example cellulitis note, in its own sentences, on 111 of 216 test vignettes (BENCHMARKS.md, "Keywords sampled at
0.5"). The rubric cannot see that; this reward does.

It is minus the share of the completion's word 4-grams that occur in an example, beyond what reusing the
example's sentence frames costs: 0 up to ``free`` (default 0.4), -1 from ``full`` (0.7), linear between. Measured
against the built-in cellulitis note: the gout note, written in its frame ("... makes X the most likely
diagnosis, so I would start treatment with ..."), shares 16% of its 4-grams; the audit's honest pneumonia note,
which also reuses its follow-up sentence whole ("I would review him in 48 hours to monitor his response to the
antibiotic, and ask him to return sooner if ..."), 36%; both stay free. The cellulitis note with its condition,
site and drug swapped for a migraine's shares 85%. Default weight 1.0, so a whole copy loses more than the
rubric can pay for its form.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rlvr.errors import RlvrError
from rlvr.rewards.base import REWARDS, RewardFunc, completion_text, default_weight, named

_WORD = re.compile(r"[a-z0-9']+")
#: Where the cost starts and where it reaches -1, as shares of a completion's word 4-grams found in an example.
#: From ``FREE`` on, the evaluation counts a note as copying the example (the keywords task's breakdown).
FREE, FULL = 0.4, 0.7


def word_ngrams(text: str, n: int) -> list[tuple[str, ...]]:
    """The lower-cased word ``n``-grams of ``text``, in order (punctuation and spacing ignored)."""
    words = _WORD.findall(text.lower()) if isinstance(text, str) else []
    return [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]


def copied_share(text: str, examples: Sequence[str], n: int = 4) -> float:
    """The share of ``text``'s word ``n``-grams that occur in one of ``examples`` (0.0 for a text too short to have one)."""
    grams = word_ngrams(text, n)
    if not grams:
        return 0.0
    shown = {gram for example in examples for gram in word_ngrams(example, n)}
    return sum(gram in shown for gram in grams) / len(grams)


def copy_cost(share: float, free: float, full: float) -> float:
    """0 up to ``free``, 1 from ``full``, linear between."""
    return round(min(1.0, max(0.0, (share - free) / (full - free))), 4)


@REWARDS.register("example_copy")
@default_weight(1.0)
def example_copy(examples: Sequence[str] | None = None, n: int = 4, free: float = FREE,
                 full: float = FULL) -> RewardFunc:
    """Minus the cost of copying ``examples`` (texts; the keywords task fills in the notes its prompts show) in
    [-1, 0]; see the module docstring. ``n``: the n-gram length; ``free`` and ``full``: where the cost starts and
    where it reaches -1, as shares of the completion's n-grams."""
    if isinstance(examples, str) or not examples or not all(isinstance(t, str) and t.strip() for t in examples):
        raise RlvrError("reward example_copy needs the example texts the prompts show: with the keywords task set "
                        "task.shots to 1 or more, otherwise give examples: a list of texts, [text, ...].")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise RlvrError(f"reward example_copy n must be a positive whole number of words, got {n!r}.")
    if not 0 <= free < full <= 1:
        raise RlvrError(f"reward example_copy needs 0 <= free < full <= 1, got free {free!r} and full {full!r}.")
    texts = [str(text) for text in examples]

    def example_copy(completions: list[Any], **_: Any) -> list[float]:
        return [0.0 - copy_cost(copied_share(completion_text(c), texts, n), free, full) for c in completions]  # no -0.0

    return named("example_copy", example_copy)
