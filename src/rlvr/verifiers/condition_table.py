"""The condition table of the ``keywords`` task's per-item check: each condition's names and key findings.

The table (``rlvr/data/keywords/conditions.yaml``) gives each condition ``names`` (accepted names, synonyms,
abbreviations), optional ``not_names`` (phrases containing a name that do not name the condition, such as "ST
depression") and ``key_findings`` (phrases a note would cite; a list entry holds alternatives, the first is its
label). Names match case-insensitively as whole words, with a plural of the last word, except a short
abbreviation (up to three characters, no lower-case letter: ``ACS``, ``MI``, ``PE``), which matches exactly as
written (``mi`` and ``pe`` in lower case are not diagnoses). :func:`load_table` builds the look-up of every name
once; :mod:`rlvr.verifiers.condition_mentions` finds them in text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError
from rlvr.verifiers.keyword_rubric import WORD, surface_forms

CONDITIONS_PATH = Path(__file__).resolve().parent.parent / "data" / "keywords" / "conditions.yaml"


@dataclass(frozen=True)
class ConditionTerms:
    """The names and key findings of one condition of the table."""

    slug: str
    names: tuple[str, ...]
    not_names: tuple[str, ...]
    #: Each key finding's label (its first phrase) -> all its phrases.
    findings: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Table:
    conditions: dict[str, ConditionTerms]
    #: First lower-case word -> [(lower-case words, exact words or None, slug or None for a not-name, name)].
    index: dict[str, list[tuple[tuple[str, ...], tuple[str, ...] | None, str | None, str]]]


@lru_cache(maxsize=4)
def load_table(path: str | None = None) -> Table:
    """The names and key findings of every condition (the built-in table when ``path`` is None), read once."""
    import yaml

    source = Path(path) if path else CONDITIONS_PATH
    rows = yaml.safe_load(source.read_text(encoding="utf-8"))
    conditions: dict[str, ConditionTerms] = {}
    for row in rows:
        slug = str(row.get("condition"))
        where = f"{source}: condition {slug!r}"
        names = _phrases(row.get("names"), f"{where}: 'names'")
        if not names:
            raise RlvrError(f"{where} needs 'names': the names a note may give it.")
        findings: dict[str, tuple[str, ...]] = {}
        for entry in row.get("key_findings") or []:
            phrases = _phrases(entry if isinstance(entry, list) else [entry], f"{where}: 'key_findings'")
            if phrases:
                findings[phrases[0]] = tuple(phrases)
        if not findings:
            raise RlvrError(f"{where} needs 'key_findings': phrases a note would cite.")
        conditions[slug] = ConditionTerms(slug, tuple(names), tuple(_phrases(row.get("not_names"), where)), findings)
    return Table(conditions, _name_index(conditions.values(), source))


def _phrases(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and WORD.search(v) for v in value):
        raise RlvrError(f"{where} must be a list of words or phrases, got {value!r}.")
    return list(value)


#: Abbreviations up to this long match only as written (``MI``, ``AF``, ``PE``); longer ones (``COPD``) in any case.
EXACT_CASE_MAX = 3


def exact_case(name: str) -> bool:
    """Whether ``name`` matches only as written: a short abbreviation, one word of at most :data:`EXACT_CASE_MAX`
    characters with no lower-case letter (``ACS``, ``MI``; ``mi`` and ``pe`` are not diagnoses)."""
    return (len(name) <= EXACT_CASE_MAX and len(WORD.findall(name)) == 1 and not any(c.islower() for c in name)
            and any(c.isupper() for c in name))


def name_forms(name: str) -> set[tuple[str, ...]]:
    """The word tuples ``name`` matches (as written when :func:`exact_case`, else lower case): itself and a plural."""
    exact = exact_case(name)
    words = tuple(WORD.findall(name if exact else name.lower()))
    last = words[-1]
    if exact or not last.isalpha():
        plural = last + "s"  # MIs, UTIs
    elif last.endswith(("s", "x", "z", "ch", "sh")):
        plural = last + "es"
    elif last.endswith("y") and len(last) > 1 and last[-2] not in "aeiou":
        plural = last[:-1] + "ies"
    else:
        plural = last + "s"
    return {words, words[:-1] + (plural,)}


def _name_index(conditions: Iterable[ConditionTerms], source: Path) -> dict[str, list[Any]]:
    index: dict[str, list[Any]] = {}
    claimed: dict[tuple[tuple[str, ...], bool], str] = {}
    for terms in conditions:
        for phrases, slug in ((terms.names, terms.slug), (terms.not_names, None)):
            for phrase in phrases:
                exact = slug is not None and exact_case(phrase)
                for form in name_forms(phrase) if slug is not None else surface_forms(phrase, inflect=False):
                    owner = f"{terms.slug}" + ("" if slug else " (not_names)")
                    if claimed.setdefault((form, exact), owner) != owner:
                        raise RlvrError(f"{source}: '{phrase}' of condition {owner!r} is also a name of "
                                        f"{claimed[(form, exact)]!r}; a name may belong to one condition.")
                    lower = tuple(word.lower() for word in form)
                    index.setdefault(lower[0], []).append((lower, form if exact else None, slug, phrase))
    for candidates in index.values():
        candidates.sort(key=lambda entry: (-len(entry[0]), entry[2] is not None))  # longest; a not-name first
    return index


def known_condition(condition: str, table: Table | None = None) -> bool:
    return condition in (table or load_table()).conditions
