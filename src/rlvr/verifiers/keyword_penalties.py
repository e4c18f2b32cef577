"""The penalties of the keyword judge: each a factor in [0, 1] aimed at one exploit, with what it saw.

Mentions outside well-formed sentences, one term repeated past its cap, keyword density, looping text, a length
outside the rubric's bounds, and forbidden terms; see ``docs/keyword-rewards.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlvr.verifiers.keyword_mentions import Mention
from rlvr.verifiers.keyword_rubric import Rubric


@dataclass
class Penalty:
    factor: float
    detail: str


def rubric_penalties(mentions: list[Mention], analysed_words: int, total_words: int, rubric: Rubric) -> dict[str, Penalty]:
    """Every penalty by name but ``repeated_text``, which :func:`repeated_text_penalty` prices from the judge's
    writing indicators."""
    settings = rubric.penalties
    keywords = [m for m in mentions if m.group is not None]
    outside = sum(m.outside is not None for m in keywords)
    share = outside / len(keywords) if keywords else 0.0
    penalties = {
        "outside_sentence": Penalty(
            round(1 - settings.outside_sentence * share, 4),
            f"{outside} of {len(keywords)} keyword mentions outside well-formed sentences",
        )
    }
    counts: dict[str, int] = {}
    for mention in keywords:
        counts[mention.term] = counts.get(mention.term, 0) + 1
    excess = {term: n - settings.repeat_cap for term, n in counts.items() if n > settings.repeat_cap}
    worst = ", ".join(f"'{t}' x{counts[t]}" for t in sorted(excess, key=lambda t: -excess[t])[:3])
    penalties["repeats"] = Penalty(
        round(max(0.0, 1 - settings.repeat_penalty * sum(excess.values())), 4),
        f"{sum(excess.values())} mentions beyond the cap of {settings.repeat_cap} per term" + (f" ({worst})" if worst else ""),
    )
    keyword_words = sum(m.words for m in keywords)
    density = keyword_words / analysed_words if analysed_words else 0.0
    threshold = settings.density_threshold
    penalties["density"] = Penalty(
        round(1.0 if density <= threshold else max(0.0, 1 - (density - threshold) / threshold), 4),
        f"keyword density {density:.1%} (threshold {threshold:.0%})",
    )
    penalties["length"] = _length_penalty(total_words, rubric)
    forbidden = [m for m in mentions if m.group is None]
    terms = sorted({m.term for m in forbidden})
    penalties["forbidden"] = Penalty(
        round(max(0.0, 1 - settings.forbidden * len(forbidden)), 4),
        f"{len(forbidden)} forbidden mentions" + (f" ({', '.join(terms[:5])})" if terms else ""),
    )
    return penalties


def repeated_text_penalty(share: float, rubric: Rubric) -> Penalty:
    """Looping text ("The most likely outcome is renal failure." six times) carries no keyword past the repeat cap,
    so only the share of repeated word trigrams catches it."""
    threshold = rubric.penalties.repeated_text_threshold
    factor = 1.0 if share <= threshold else max(0.0, 1 - (share - threshold) / threshold)
    return Penalty(round(factor, 4), f"{share:.1%} of word trigrams repeat an earlier one (threshold {threshold:.0%})")


def _length_penalty(words: int, rubric: Rubric) -> Penalty:
    low, high = rubric.min_words, rubric.max_words
    bounds = f"bounds {low if low is not None else 0}-{high if high is not None else 'any'}"
    if low is not None and words < low:
        return Penalty(round(words / low, 4), f"{words} words, below {bounds}")
    if high is not None and words > high:
        return Penalty(round(high / words, 4), f"{words} words, above {bounds}")
    return Penalty(1.0, f"{words} words, within {bounds}")
