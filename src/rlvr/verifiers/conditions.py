"""The per-item check of the ``keywords`` task: does a note name the vignette's condition, and only it, and cite
the vignette's own findings?

:func:`check` judges a note against an :class:`Item` (the vignette's condition, its findings and its text), with
the condition table (:mod:`rlvr.verifiers.condition_table`) and the mentions of names and findings found in the
note (:mod:`rlvr.verifiers.condition_mentions`). The diagnosis is *correct* when the note names (claims) the
vignette's condition inside a well-formed sentence and names no other condition anywhere (lists and headings
included), apart from conditions the vignette itself names (a history of type 2 diabetes in a chest-pain
vignette). So the set of conditions a text claims does not depend on the vignette, and one text can be correct
for one condition only: listing several never pays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rlvr.errors import RlvrError
from rlvr.verifiers.condition_mentions import (
    conditions_named,
    finding_index,
    findings_found,
    findings_in,
    name_mentions,
)
from rlvr.verifiers.condition_table import load_table
from rlvr.verifiers.sentences import Unit


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
    cited = findings_found(units, finding_index(item.findings, terms), sentence_ok)
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
