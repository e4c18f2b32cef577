"""Find the conditions a text names, whether it claims them, and the key findings it cites.

Matching is on words: names as :mod:`rlvr.verifiers.condition_table` describes; key findings also match their
simple inflections (:func:`rlvr.verifiers.keyword_rubric.surface_forms`). Longest match first, no overlaps.

A mention is *claimed* as the diagnosis when it is not negated or ruled out ("no", "not", "unlikely", "ruled
out", "excluded", see :func:`rlvr.verifiers.sentences.is_negated`), and not in a risk, prevention or history
context ("risk of stroke", "to prevent a stroke", "history of type 2 diabetes", "his father had a heart
attack"). A differential ("could also be pulmonary embolism", "consider asthma") claims it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rlvr.verifiers.condition_table import ConditionTerms, Table, load_table
from rlvr.verifiers.keyword_rubric import surface_forms
from rlvr.verifiers.sentences import (
    NEGATION_WINDOW_AFTER,
    NEGATION_WINDOW_BEFORE,
    SCOPE_ENDS,
    Unit,
    is_negated,
    split_units,
)

#: Words before a mention that set it aside as a claim: risk, prevention, past or family history, ruling out, a
#: contrast ("rather than pulmonary embolism", "more likely than asthma").
SET_ASIDE_BEFORE = frozenset(
    "risk risks prevent prevents prevented preventing prevention prophylaxis avoid avoiding complication "
    "complications previous previously prior exclude excluding rule ruling ruled father mother brother sister "
    "parent parents sibling siblings aunt uncle grandmother grandfather than".split()
)
#: Words shortly after a mention that set it aside ("stroke risk", "PE was ruled out").
SET_ASIDE_AFTER = frozenset("risk risks prevention prophylaxis ruled".split())
#: Two-word cues: (first, second) before the mention ("history of", "instead of"), after it ("less likely").
SET_ASIDE_PAIRS_BEFORE = frozenset({("history", "of"), ("instead", "of")})
SET_ASIDE_PAIRS_AFTER = frozenset({("less", "likely")})

_APOSTROPHE_NOT = re.compile(r"n['’]t", re.IGNORECASE)
_TOKEN = re.compile(r"[^\W_]+")


@dataclass
class NameMention:
    slug: str
    name: str
    unit: int
    start: int
    end: int
    claimed: bool


def original_words(unit: Unit) -> list[str]:
    """``unit.words`` with their original case (the lower-case words where the two do not line up)."""
    words = _TOKEN.findall(_APOSTROPHE_NOT.sub(" not", unit.text))
    return words if len(words) == len(unit.words) else list(unit.words)


def name_mentions(units: Sequence[Unit], table: Table | None = None) -> list[NameMention]:
    """Every mention of a condition's name in ``units``, longest match first, with whether it is claimed."""
    table = table or load_table()
    found = []
    for number, unit in enumerate(units):
        words, exact = unit.words, original_words(unit)
        i = 0
        while i < len(words):
            for lower, cased, slug, name in table.index.get(words[i], ()):
                end = i + len(lower)
                if tuple(words[i:end]) == lower and (cased is None or tuple(exact[i:end]) == cased):
                    if slug is not None:
                        found.append(NameMention(slug, name, number, i, end, claimed=not set_aside(unit, i, end)))
                    i = end
                    break
            else:
                i += 1
    return found


def set_aside(unit: Unit, start: int, end: int) -> bool:
    """Whether the mention at ``start:end`` is negated, ruled out, or in a risk, prevention or history context."""
    if is_negated(unit, start, end):
        return True
    words, hard = unit.words, unit.hard_clause
    for i in range(start - 1, max(-1, start - 1 - NEGATION_WINDOW_BEFORE), -1):
        if hard[i] != hard[start] or words[i] in SCOPE_ENDS:
            break
        if words[i] in SET_ASIDE_BEFORE or (words[i], words[i + 1]) in SET_ASIDE_PAIRS_BEFORE:
            return True
    for i in range(end, min(len(words), end + NEGATION_WINDOW_AFTER)):
        if unit.clause[i] != unit.clause[end - 1] or words[i] in SCOPE_ENDS:
            break
        if words[i] in SET_ASIDE_AFTER or tuple(words[i : i + 2]) in SET_ASIDE_PAIRS_AFTER:
            return True
    return False


def finding_index(labels: Iterable[str], terms: ConditionTerms | None) -> dict[str, list[tuple[tuple[str, ...], str]]]:
    index: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for label in labels:
        phrases = terms.findings.get(label, (label,)) if terms else (label,)
        for phrase in phrases:
            for form in surface_forms(phrase, inflect=True):
                index.setdefault(form[0], []).append((form, label))
    for candidates in index.values():
        candidates.sort(key=lambda entry: -len(entry[0]))
    return index


def findings_found(units: Sequence[Unit], index: dict[str, list[Any]], usable: Sequence[bool]) -> dict[str, int]:
    """Label -> the first unit citing it (not negated, in a usable unit)."""
    found: dict[str, int] = {}
    for number, unit in enumerate(units):
        if not usable[number]:
            continue
        words = unit.words
        i = 0
        while i < len(words):
            for form, label in index.get(words[i], ()):
                end = i + len(form)
                if tuple(words[i:end]) == form:
                    if not is_negated(unit, i, end):
                        found.setdefault(label, number)
                    i = end
                    break
            else:
                i += 1
    return found


def findings_in(text: str, condition: str, table: Table | None = None) -> list[str]:
    """The key findings of ``condition`` that ``text`` (a vignette) states, not negated, in table order."""
    table = table or load_table()
    terms = table.conditions.get(condition)
    if terms is None or not isinstance(text, str):
        return []
    units = split_units(text)
    found = findings_found(units, finding_index(terms.findings, terms), [True] * len(units))
    return [label for label in terms.findings if label in found]


def conditions_named(text: str, table: Table | None = None) -> list[str]:
    """The conditions ``text`` names at all (claimed or not), in table order."""
    if not isinstance(text, str) or not text:
        return []
    table = table or load_table()
    slugs = {mention.slug for mention in name_mentions(split_units(text), table)}
    return [slug for slug in table.conditions if slug in slugs]
