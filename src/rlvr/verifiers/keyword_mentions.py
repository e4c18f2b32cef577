"""Find a rubric's terms in a text: each mention, and whether it stands in a well-formed sentence.

A mention's ``outside`` says why it does not count as written in a sentence (the unit is no well-formed
sentence, most of its words are keywords, or the mention sits in an inline list of terms); ``negated`` and
``off_topic`` (the semantic check) are set here too. The judge (:mod:`rlvr.verifiers.keywords`) decides what
they are worth. At most :data:`MAX_MENTIONS` mentions are collected.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlvr.verifiers.keyword_rubric import Rubric
from rlvr.verifiers.sentences import Unit, comma_run_words, is_negated, sentence_problem

MAX_MENTIONS = 5_000


@dataclass
class Mention:
    group: str | None  # None: a forbidden term
    term: str
    unit: int
    start: int
    end: int
    outside: str | None = None  # why the mention is not inside a well-formed sentence
    negated: bool = False
    off_topic: bool = False  # failed the semantic check

    @property
    def words(self) -> int:
        return self.end - self.start


def find_mentions(units: list[Unit], rubric: Rubric) -> tuple[list[Mention], list[str | None]]:
    """Every mention (longest match first, no overlaps) and, per unit, why it is not a sentence (None: it is)."""
    mentions: list[Mention] = []
    problems: list[str | None] = []
    rules = rubric.sentences
    for number, unit in enumerate(units):
        found = _match(unit.words, rubric.index, number) if len(mentions) < MAX_MENTIONS else []
        mentions.extend(found)
        is_keyword = [False] * len(unit.words)
        for mention in found:
            if mention.group is not None:
                is_keyword[mention.start : mention.end] = [True] * mention.words
        problem = sentence_problem(unit, rules.min_words, rules.max_words)
        if problem is None and unit.words and sum(is_keyword) / len(unit.words) > rules.max_keyword_share:
            problem = f"more than {rules.max_keyword_share:.0%} of its words are keywords"
        problems.append(problem)
        in_list = comma_run_words(unit, is_keyword) if problem is None and found else set()
        for mention in found:
            mention.outside = problem or ("inline list of terms" if mention.start in in_list else None)
            mention.negated = is_negated(unit, mention.start, mention.end)
    return mentions[:MAX_MENTIONS], problems


def _match(words: list[str], index: dict[str, list[Any]], unit: int) -> list[Mention]:
    found = []
    i = 0
    while i < len(words):
        for form, group, term in index.get(words[i], ()):
            if tuple(words[i : i + len(form)]) == form:
                found.append(Mention(group, term, unit, i, i + len(form)))
                i += len(form)
                break
        else:
            i += 1
    return found


def semantic_check(mentions: list[Mention], units: list[Unit], rubric: Rubric) -> None:
    """Mark mentions whose sentence is not close in meaning to their group's description."""
    from rlvr.verifiers.semantic import similarities

    descriptions = {g.name: g.description for g in rubric.groups if g.description}
    pairs = sorted({(m.unit, m.group) for m in mentions if m.group in descriptions and m.outside is None})
    if not pairs:
        return
    scores = similarities([units[u].text for u, _ in pairs], [descriptions[g] for _, g in pairs])
    far = {pair for pair, score in zip(pairs, scores, strict=True) if score < rubric.semantic_threshold}
    for mention in mentions:
        mention.off_topic = (mention.unit, mention.group) in far
