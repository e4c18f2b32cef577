"""Judge a text against a keyword rubric: coverage, patterns, penalties, and why.

``judge(text, rubric)`` returns a :class:`Judgement` whose ``score`` lies in
[0, 1] and whose ``explanation()`` says which groups were covered, which
patterns held, and what each penalty cost. The score is::

    base = (1 - pattern_weight) * share of groups covered + pattern_weight * share of patterns satisfied
           (just the share of groups when the rubric has no patterns)
    score = base * outside_sentence * repeats * density * repeated_text * length * forbidden

A mention *covers* its group only inside a well-formed sentence (see
:mod:`rlvr.verifiers.sentences`), not negated (unless the group allows it) and,
with the semantic check on, in a sentence close in meaning to the group's
description. Each penalty is a factor in [0, 1] aimed at one exploit; see
``docs/keyword-rewards.md``.

With an ``item`` (the per-item check, :mod:`rlvr.verifiers.conditions`), two requirements join the rubric's
groups: the ``diagnosis`` group counts as covered only when the note names the vignette's condition in a
sentence and no other condition of the table (added as a group of its own when the rubric has none), and a
``findings`` group is covered when a sentence cites one of the vignette's key findings (always, when the
vignette has none). The explanation's ``per_item`` entry says what was named and cited.

Work is capped: only the first :data:`MAX_ANALYSED_CHARS` characters are read
for mentions (the length penalty still counts every word), and at most
:data:`rlvr.verifiers.keyword_mentions.MAX_MENTIONS` mentions are collected
(:mod:`rlvr.verifiers.keyword_mentions` finds them; :mod:`rlvr.verifiers.keyword_penalties` prices them).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from rlvr.verifiers.conditions import Check, Item, check
from rlvr.verifiers.keyword_mentions import Mention, find_mentions, semantic_check
from rlvr.verifiers.keyword_penalties import Penalty, repeated_text_penalty, rubric_penalties
from rlvr.verifiers.keyword_rubric import WORD, Rubric
from rlvr.verifiers.sentences import Unit, split_units

MAX_ANALYSED_CHARS = 100_000
#: The breakdown table (and report rows) averaging :func:`writing_indicators` over completions.
WRITING_INDICATORS = "writing indicators (mean per completion)"
#: The rubric group the per-item check gates on the vignette's condition, and the group it adds for findings.
DIAGNOSIS, FINDINGS = "diagnosis", "findings"
_EVIDENCE_CHARS = 200


@dataclass
class Judgement:
    score: float
    base: float
    groups: dict[str, dict[str, Any]]
    patterns: dict[str, dict[str, Any]]
    penalties: dict[str, Penalty]
    words: int
    sentences: int
    truncated: bool = False
    semantic: bool = False
    notes: list[str] = field(default_factory=list)
    #: How the text is written, apart from the score (see :func:`writing_indicators`).
    indicators: dict[str, float | None] = field(default_factory=dict)
    #: The per-item check's verdict (:meth:`rlvr.verifiers.conditions.Check.explanation`); None without an item.
    per_item: dict[str, Any] | None = None

    def explanation(self) -> dict[str, Any]:
        """Plain data (JSON-ready): the score, its base, every group, pattern and penalty (and the per-item check)."""
        explained = {
            "score": self.score,
            "summary": self.summary(),
            "base": self.base,
            "groups": self.groups,
            "patterns": self.patterns,
            "penalties": {name: {"factor": p.factor, "detail": p.detail} for name, p in self.penalties.items()},
            "words": self.words,
            "well_formed_sentences": self.sentences,
            "truncated": self.truncated,
            "semantic_check": self.semantic,
            "indicators": self.indicators,
        }
        if self.per_item is not None:
            explained["per_item"] = self.per_item
        return explained

    def summary(self) -> str:
        covered = sum(g["covered"] for g in self.groups.values())
        held = sum(p["satisfied"] for p in self.patterns.values())
        parts = [f"{self.score:.3f} = base {self.base:.3f} (groups {covered}/{len(self.groups)}"]
        parts[0] += f", patterns {held}/{len(self.patterns)})" if self.patterns else ")"
        parts += [f"{name} {p.factor:.2f}" for name, p in self.penalties.items() if p.factor < 1]
        return " x ".join(parts)


def judge(text: str, rubric: Rubric, semantic: bool | None = None, item: Item | None = None) -> Judgement:
    """Score ``text`` against ``rubric``; ``semantic`` overrides the rubric's semantic setting; ``item`` adds the
    per-item check of the vignette's condition and findings (see the module docstring)."""
    text = text if isinstance(text, str) else ""
    use_semantic = rubric.semantic_enabled if semantic is None else semantic
    total_words = sum(1 for _ in WORD.finditer(text))
    analysed = text[:MAX_ANALYSED_CHARS]
    units = split_units(analysed)
    mentions, problems = find_mentions(units, rubric)
    if use_semantic:
        semantic_check(mentions, units, rubric)
    verdict = check(units, [problem is None for problem in problems], item) if item is not None else None
    scored = mentions + _condition_mentions(verdict, units, rubric) if item is not None and item.name_is_diagnosis else mentions
    groups = _group_verdicts(scored, units, rubric, use_semantic)
    per_item = _per_item(groups, verdict, item) if verdict is not None and item is not None else None
    patterns = _pattern_verdicts(scored, units, problems, rubric)
    base = _base(groups, patterns, rubric)
    analysed_words = sum(len(u.words) for u in units)
    indicators = writing_indicators(mentions, units)
    penalties = rubric_penalties(mentions, analysed_words, total_words, rubric)
    penalties["repeated_text"] = repeated_text_penalty(indicators["repeated_trigram_share"], rubric)
    score = base
    for penalty in penalties.values():
        score *= penalty.factor
    return Judgement(
        score=round(min(1.0, max(0.0, score)), 4),
        base=round(base, 4),
        groups=groups,
        patterns=patterns,
        penalties=penalties,
        words=total_words,
        sentences=sum(problem is None for problem in problems),
        truncated=len(text) > MAX_ANALYSED_CHARS,
        semantic=use_semantic,
        indicators=indicators,
        per_item=per_item,
    )


def _condition_mentions(verdict: Check, units: list[Unit], rubric: Rubric) -> list[Mention]:
    """The vignette's condition, named in a sentence, as mentions of the rubric's ``diagnosis`` group (with
    ``Item.name_is_diagnosis``): "This is acute otitis media, so I would start amoxicillin" states the diagnosis
    and its treatment together without the word "diagnosis". Scored for coverage and patterns, not penalties."""
    if not any(group.name == DIAGNOSIS for group in rubric.groups):
        return []
    return [Mention(DIAGNOSIS, " ".join(units[unit].words[start:end]), unit, start, end)
            for unit, start, end in verdict.spans]


def _per_item(groups: dict[str, dict[str, Any]], verdict: Check, item: Item) -> dict[str, Any]:
    """Gate the ``diagnosis`` group on the vignette's condition and add the ``findings`` group (in place)."""
    diagnosis = groups.setdefault(DIAGNOSIS, {"covered": True, "mentions": 0, "counted": 0, "terms": []})
    covered_by_terms = diagnosis["covered"]
    diagnosis["covered"] = covered_by_terms and verdict.correct
    diagnosis["condition_named"] = verdict.named
    if verdict.evidence:
        diagnosis["condition_evidence"] = verdict.evidence
    diagnosis["other_conditions"] = verdict.others
    if covered_by_terms and not verdict.correct:
        diagnosis["not_counted_because"] = (
            f"names another condition: {', '.join(verdict.others)}" if verdict.others
            else f"does not name the vignette's condition ({item.condition}) in a sentence"
        )
    findings = groups.setdefault(FINDINGS, {})
    findings.update(covered=findings.get("covered", True) and verdict.cites_findings, cited=verdict.cited,
                    expected=verdict.findings)
    if verdict.finding_evidence:
        findings["evidence"] = verdict.finding_evidence
    elif verdict.findings:
        findings["not_counted_because"] = "no sentence cites a finding of the vignette"
    return verdict.explanation()


def writing_indicators(mentions: list[Mention], units: list[Unit]) -> dict[str, float | None]:
    """Signs of stuffing, to compare before and after training (the score already penalises them; these say how much).

    ``keyword_density``: share of the words that are rubric terms; ``negated_share``: share of the rubric-term
    mentions that are negated ("no treatment"), None without mentions; ``repeated_trigram_share``: share of
    the word trigrams that repeat an earlier one in the same text (loops, copied sentences).
    """
    words = [word for unit in units for word in unit.words]
    keywords = [m for m in mentions if m.group is not None]
    trigrams = list(zip(words, words[1:], words[2:], strict=False))
    return {
        "keyword_density": round(sum(m.words for m in keywords) / len(words), 4) if words else 0.0,
        "negated_share": round(sum(m.negated for m in keywords) / len(keywords), 4) if keywords else None,
        "repeated_trigram_share": round(1 - len(set(trigrams)) / len(trigrams), 4) if trigrams else 0.0,
    }


def _counts(mention: Mention, rubric: Rubric) -> bool:
    """Whether a group mention covers its group."""
    group = next(g for g in rubric.groups if g.name == mention.group)
    return mention.outside is None and not mention.off_topic and (group.count_negated or not mention.negated)


def _group_verdicts(mentions: list[Mention], units: list[Unit], rubric: Rubric, semantic: bool) -> dict[str, dict[str, Any]]:
    verdicts = {}
    for group in rubric.groups:
        own = [m for m in mentions if m.group == group.name]
        valid = [m for m in own if _counts(m, rubric)]
        verdict: dict[str, Any] = {
            "covered": bool(valid),
            "mentions": len(own),
            "counted": len(valid),
            "negated": sum(m.negated and m.outside is None for m in own),
            "outside_sentences": sum(m.outside is not None for m in own),
            "terms": sorted({m.term for m in valid}),
        }
        if semantic and group.description:
            verdict["off_topic"] = sum(m.off_topic for m in own)
        if valid:
            verdict["evidence"] = units[valid[0].unit].text[:_EVIDENCE_CHARS]
        elif own:
            first = own[0]
            reason = first.outside or ("negated" if first.negated else "sentence far from the group's description")
            verdict["not_counted_because"] = f"'{first.term}': {reason}"
        verdicts[group.name] = verdict
    return verdicts


def _pattern_verdicts(mentions: list[Mention], units: list[Unit], problems: list[str | None], rubric: Rubric) -> dict[str, dict[str, Any]]:
    by_unit: dict[int, list[Mention]] = {}
    for mention in mentions:
        if mention.group is not None and _counts(mention, rubric):
            by_unit.setdefault(mention.unit, []).append(mention)
    verdicts = {}
    for pattern in rubric.patterns:
        verdict: dict[str, Any] = {"satisfied": False, "groups": list(pattern.groups)}
        for number, found in by_unit.items():
            if problems[number] is None and _holds(pattern.groups, pattern.in_order, pattern.within_words, found):
                verdict.update(satisfied=True, evidence=units[number].text[:_EVIDENCE_CHARS])
                break
        verdicts[pattern.name] = verdict
    return verdicts


def _holds(groups: tuple[str, ...], in_order: bool, within: int | None, found: list[Mention]) -> bool:
    """Whether one sentence's mentions contain every group (in order, within ``within`` words when asked)."""
    starts = {g: sorted(m.start for m in found if m.group == g) for g in set(groups)}
    if any(not positions for positions in starts.values()):
        return False
    limit = within if within is not None else float("inf")
    if not in_order:
        # Smallest window holding one mention of each group: the latest first-mention after each start.
        for first in sorted({p for positions in starts.values() for p in positions}):
            ends = [positions[bisect_right(positions, first - 1)] for positions in starts.values() if positions[-1] >= first]
            if len(ends) == len(starts) and max(ends) - first <= limit:
                return True
        return False
    for first in starts[groups[0]]:
        position = first
        for group in groups[1:]:
            positions = starts[group]
            at = bisect_right(positions, position)
            if at == len(positions):
                position = None
                break
            position = positions[at]
        if position is not None and position - first <= limit:
            return True
    return False


def _base(groups: dict[str, dict[str, Any]], patterns: dict[str, dict[str, Any]], rubric: Rubric) -> float:
    group_share = sum(g["covered"] for g in groups.values()) / len(groups)
    if not patterns:
        return group_share
    pattern_share = sum(p["satisfied"] for p in patterns.values()) / len(patterns)
    return (1 - rubric.pattern_weight) * group_share + rubric.pattern_weight * pattern_share
