"""Keyword rubrics: what a rubric is made of, and how its terms match words.

A rubric names *groups* of terms (``diagnosis``, ``treatment``), *patterns* that
relate groups inside one sentence, optional *forbidden* terms, length bounds and
penalty settings. Every field is documented in ``docs/keyword-rewards.md``; the
YAML loader is :mod:`rlvr.verifiers.keyword_rubric_loader`.

Terms match case-insensitively as whole words; unless a group sets
``inflect: false`` each term also matches its simple inflections (plural,
``-ing``, ``-ed``), generated here once, so matching text stays a dictionary
look-up per word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Words of a term or a text: letters and digits; everything else separates words.
WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Group:
    name: str
    terms: tuple[str, ...]
    description: str = ""
    #: Surface forms of each term as word tuples, mapped to the term they stand for.
    forms: dict[tuple[str, ...], str] = field(default_factory=dict)
    #: Negated mentions ("no medication was given") count as present only when true.
    count_negated: bool = False


@dataclass(frozen=True)
class Pattern:
    name: str
    groups: tuple[str, ...]
    description: str = ""
    in_order: bool = True
    #: Largest distance in words from the first group's mention to the last one's (None: anywhere in the sentence).
    within_words: int | None = None


@dataclass(frozen=True)
class Penalties:
    #: Weight of the share of mentions found outside well-formed sentences (1: a bare list scores 0).
    outside_sentence: float = 1.0
    #: Mentions of one term allowed before each further mention costs ``repeat_penalty``.
    repeat_cap: int = 3
    repeat_penalty: float = 0.1
    #: Share of words that are keywords above which the score falls linearly, reaching 0 at twice it.
    density_threshold: float = 0.25
    #: Share of word trigrams repeating an earlier one (loops, copied sentences) above which the score falls
    #: linearly, reaching 0 at twice it (1.0: off).
    repeated_text_threshold: float = 0.15
    #: Score lost per mention of a forbidden term.
    forbidden: float = 0.5


@dataclass(frozen=True)
class SentenceRules:
    min_words: int = 4
    max_words: int = 60
    #: Largest share of a sentence's words that may be keywords.
    max_keyword_share: float = 0.5


@dataclass(frozen=True)
class Rubric:
    name: str
    groups: tuple[Group, ...]
    patterns: tuple[Pattern, ...] = ()
    description: str = ""
    #: Instructions appended to each prompt by the keywords task.
    instructions: str = ""
    #: Forbidden surface forms (word tuples) mapped to the term they stand for.
    forbidden: dict[tuple[str, ...], str] = field(default_factory=dict)
    min_words: int | None = None
    max_words: int | None = None
    sentences: SentenceRules = SentenceRules()
    penalties: Penalties = Penalties()
    #: Share of the score that patterns carry; groups carry the rest.
    pattern_weight: float = 0.25
    semantic_enabled: bool = False
    semantic_threshold: float = 0.2
    source: str = ""
    #: First word -> candidate forms, built by :func:`build_index` (what the matcher looks up).
    index: dict[str, list[tuple[tuple[str, ...], str | None, str]]] = field(default_factory=dict)


def words_of(text: str) -> tuple[str, ...]:
    return tuple(WORD.findall(text.lower()))


def inflections(word: str) -> set[str]:
    """``word`` with its plural, -ing and -ed forms (simple English rules, a superset is harmless)."""
    forms = {word}
    if len(word) < 3 or not word.isalpha():
        return forms | {word + "s"}
    vowels = "aeiou"
    if word.endswith("is"):  # diagnosis -> diagnoses
        forms.add(word[:-2] + "es")
    if word.endswith(("s", "x", "z", "ch", "sh")):
        forms.add(word + "es")
    elif word.endswith("y") and word[-2] not in vowels:
        forms |= {word[:-1] + "ies", word[:-1] + "ied"}
    else:
        forms.add(word + "s")
    if word.endswith("e") and not word.endswith("ee"):
        forms |= {word[:-1] + "ing", word + "d"}
    else:
        forms |= {word + "ing", word + "ed"}
    if word[-1] not in vowels + "wxy" and word[-2] in vowels and word[-3] not in vowels:  # stop -> stopping
        forms |= {word + word[-1] + "ing", word + word[-1] + "ed"}
    return forms


def surface_forms(term: str, inflect: bool) -> set[tuple[str, ...]]:
    """Word tuples that ``term`` matches; a multi-word term inflects its last word."""
    words = words_of(term)
    if not words:
        return set()
    if not inflect:
        return {words}
    return {words[:-1] + (form,) for form in inflections(words[-1])}


def build_index(rubric_groups: tuple[Group, ...], forbidden: dict[tuple[str, ...], str]) -> dict[str, list[tuple[tuple[str, ...], str | None, str]]]:
    """First word -> [(form, group name or None for forbidden, term)], longest forms first."""
    index: dict[str, list[tuple[tuple[str, ...], str | None, str]]] = {}
    for group in rubric_groups:
        for form, term in group.forms.items():
            index.setdefault(form[0], []).append((form, group.name, term))
    for form, term in forbidden.items():
        index.setdefault(form[0], []).append((form, None, term))
    for candidates in index.values():
        candidates.sort(key=lambda entry: -len(entry[0]))
    return index
