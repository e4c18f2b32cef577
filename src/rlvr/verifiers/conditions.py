"""The per-item check of the ``keywords`` task: does a note name the vignette's condition, and only it, and cite
the vignette's own findings?

The condition table (``rlvr/data/keywords/conditions.yaml``) gives each condition ``names`` (accepted names,
synonyms, abbreviations), optional ``not_names`` (phrases containing a name that do not name the condition,
such as "ST depression") and ``key_findings`` (phrases a note would cite; a list entry holds alternatives, the
first is its label). :func:`findings_in` lists the key findings a vignette's text holds; :func:`check` judges a
note against an :class:`Item` (the vignette's condition, its findings and its text).

Matching is on words, like the rubric's: names match case-insensitively as whole words, with a plural of the
last word, except a short abbreviation (up to three characters, no lower-case letter: ``ACS``, ``MI``, ``PE``),
which matches exactly as written (``mi`` and ``pe`` in lower case are not diagnoses). Key findings also match their
simple inflections (:func:`rlvr.verifiers.keyword_rubric.surface_forms`). Longest match first, no overlaps.

A note *names* a condition when a mention of it is claimed as the diagnosis: not negated or ruled out ("no",
"not", "unlikely", "ruled out", "excluded", see :func:`rlvr.verifiers.sentences.is_negated`), and not in a
risk, prevention or history context ("risk of stroke", "to prevent a stroke", "history of type 2 diabetes",
"his father had a heart attack"). A differential ("could also be pulmonary embolism", "consider asthma") names
it. The diagnosis is *correct* when the note names the vignette's condition inside a well-formed sentence and
names no other condition anywhere (lists and headings included), apart from conditions the vignette itself
names (a history of type 2 diabetes in a chest-pain vignette). So the set of conditions a text claims does not
depend on the vignette, and one text can be correct for one condition only: listing several never pays.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError
from rlvr.verifiers.keyword_rubric import WORD, surface_forms
from rlvr.verifiers.sentences import (
    NEGATION_WINDOW_AFTER,
    NEGATION_WINDOW_BEFORE,
    SCOPE_ENDS,
    Unit,
    is_negated,
    split_units,
)

CONDITIONS_PATH = Path(__file__).resolve().parent.parent / "data" / "keywords" / "conditions.yaml"

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


@dataclass(frozen=True)
class Item:
    """What the per-item check needs of a row: its condition, the key findings its vignette holds, its text."""

    condition: str
    findings: tuple[str, ...]
    vignette: str = ""
    #: Naming the condition counts as a mention of the rubric's diagnosis group (its coverage and its patterns).
    name_is_diagnosis: bool = False


@dataclass
class Check:
    """The per-item verdict on one note (see the module docstring)."""

    condition: str
    named: bool
    others: list[str]
    set_aside: list[str]
    from_vignette: list[str]
    findings: list[str]
    cited: list[str]
    evidence: str = ""
    finding_evidence: str = ""
    #: (unit, start, end) of each claimed mention of the vignette's condition inside a well-formed sentence.
    spans: list[tuple[int, int, int]] = field(default_factory=list)

    @property
    def correct(self) -> bool:
        """The vignette's condition named in a sentence, and no other condition named."""
        return self.named and not self.others

    @property
    def cites_findings(self) -> bool:
        """A vignette finding cited in a sentence (always, where the vignette has no key finding to cite)."""
        return bool(self.cited) or not self.findings

    def explanation(self) -> dict[str, Any]:
        return {
            "condition": self.condition,
            "diagnosis_correct": self.correct,
            "condition_named": self.named,
            "other_conditions": self.others,
            "set_aside": self.set_aside,
            "named_in_vignette": self.from_vignette,
            "findings": self.findings,
            "findings_cited": self.cited,
        }


# ----------------------------------------------------------------------------------------------- the table


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


# --------------------------------------------------------------------------------------------- matching


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


def _finding_index(labels: Iterable[str], terms: ConditionTerms | None) -> dict[str, list[tuple[tuple[str, ...], str]]]:
    index: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for label in labels:
        phrases = terms.findings.get(label, (label,)) if terms else (label,)
        for phrase in phrases:
            for form in surface_forms(phrase, inflect=True):
                index.setdefault(form[0], []).append((form, label))
    for candidates in index.values():
        candidates.sort(key=lambda entry: -len(entry[0]))
    return index


def _findings_found(units: Sequence[Unit], index: dict[str, list[Any]], usable: Sequence[bool]) -> dict[str, int]:
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
    found = _findings_found(units, _finding_index(terms.findings, terms), [True] * len(units))
    return [label for label in terms.findings if label in found]


def conditions_named(text: str, table: Table | None = None) -> list[str]:
    """The conditions ``text`` names at all (claimed or not), in table order."""
    if not isinstance(text, str) or not text:
        return []
    table = table or load_table()
    slugs = {mention.slug for mention in name_mentions(split_units(text), table)}
    return [slug for slug in table.conditions if slug in slugs]


# ------------------------------------------------------------------------------------------------ items


def known_condition(condition: str, table: Table | None = None) -> bool:
    return condition in (table or load_table()).conditions


def make_item(condition: Any, findings: Any = None, vignette: Any = None, name_is_diagnosis: bool = False) -> Item | None:
    """The :class:`Item` of a row's columns (None: no condition, judged without the per-item check).

    ``findings`` None: the key findings ``vignette`` holds, or every key finding of the condition without a
    vignette; a list (or a string, one finding): as given, empty meaning none to cite. An unknown condition is
    an error in the data, not in model output: it raises. ``name_is_diagnosis``: see :attr:`Item.name_is_diagnosis`.
    """
    if not isinstance(condition, str) or not condition.strip():
        return None
    condition = condition.strip()
    table = load_table()
    if condition not in table.conditions:
        from rlvr.registry import unknown_name_message

        raise RlvrError(f"per-item keywords check: {unknown_name_message('condition', condition, list(table.conditions))}")
    text = vignette if isinstance(vignette, str) else ""
    if findings is None:
        labels = findings_in(text, condition, table) if text else list(table.conditions[condition].findings)
    elif isinstance(findings, str):
        labels = [findings] if findings.strip() else []
    else:
        labels = [str(f) for f in findings if isinstance(f, str) and f.strip()]
    return Item(condition, tuple(labels), text, name_is_diagnosis)


def check(units: Sequence[Unit], sentence_ok: Sequence[bool], item: Item) -> Check:
    """The per-item verdict on a note split into ``units`` (``sentence_ok[i]``: unit i is a well-formed sentence)."""
    table = load_table()
    mentions = name_mentions(units, table)
    in_vignette = set(conditions_named(item.vignette, table)) - {item.condition}
    right = [m for m in mentions if m.slug == item.condition and m.claimed and sentence_ok[m.unit]]
    claimed = {m.slug for m in mentions if m.claimed}
    others = sorted(claimed - {item.condition} - in_vignette)
    aside = sorted({m.slug for m in mentions if not m.claimed} - claimed)
    terms = table.conditions.get(item.condition)
    cited = _findings_found(units, _finding_index(item.findings, terms), sentence_ok)
    return Check(
        condition=item.condition,
        named=bool(right),
        others=others,
        set_aside=aside,
        from_vignette=sorted(in_vignette & {m.slug for m in mentions}),
        findings=list(item.findings),
        cited=[label for label in item.findings if label in cited],
        evidence=units[right[0].unit].text[:200] if right else "",
        finding_evidence=units[min(cited.values())].text[:200] if cited else "",
        spans=[(m.unit, m.start, m.end) for m in right],
    )
