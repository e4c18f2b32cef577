"""How the ``keywords`` task shows and sums up its verdicts: gold and answer lines, breakdown tables, item flags.

The breakdown tables give the share of completions covering each rubric group, hit by each penalty, passing the
per-item diagnosis check and copying the example notes shown; the item flags mark the same for one completion.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rlvr.rewards.copying import FREE
from rlvr.tasks.base import FULL_CREDIT
from rlvr.verifiers.keyword_rubric import Rubric
from rlvr.verifiers.keywords import WRITING_INDICATORS, Judgement

#: The breakdown table of the per-item check (shares of the completions it judged).
PER_ITEM = "per-item diagnosis check (share of completions)"
#: With example notes shown: the details key of a note's share of word 4-grams found in them, its breakdown
#: table, and its per-item flag (a note copies the example from the share where ``example_copy`` starts to cost).
EXAMPLE_COPY, COPIED, COPIES_FLAG = "example_copy", "the example note copied (share of completions)", "copies the example note"


def breakdown_tables(details: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """The share of completions covering each rubric group, and the share hit by each penalty (and, where
    judged, the per-item check, the writing indicators and copies of the example notes)."""
    groups: dict[str, list[bool]] = {}
    penalties: dict[str, list[bool]] = {}
    for detail in details:
        for name, verdict in (detail.get("groups") or {}).items():
            groups.setdefault(name, []).append(bool(verdict.get("covered")))
        for name, penalty in (detail.get("penalties") or {}).items():
            penalties.setdefault(name, []).append(float(penalty.get("factor", 1.0)) < 1.0)
    tables = {}
    if groups:
        tables["rubric group coverage"] = {name: sum(v) / len(v) for name, v in groups.items()}
    if penalties:
        tables["penalised (share of completions)"] = {name: sum(v) / len(details) for name, v in penalties.items()}
    checked = [detail["per_item"] for detail in details if detail.get("per_item")]
    if checked:
        tables[PER_ITEM] = {
            "diagnosis named correctly": sum(bool(c.get("diagnosis_correct")) for c in checked) / len(checked),
            "vignette's condition named": sum(bool(c.get("condition_named")) for c in checked) / len(checked),
            "another condition named": sum(bool(c.get("other_conditions")) for c in checked) / len(checked),
            "cites a vignette finding": sum(bool(c.get("findings_cited")) for c in checked) / len(checked),
        }
    indicators = _mean_indicators(details)
    if indicators:
        tables[WRITING_INDICATORS] = indicators
    copies = [detail for detail in details if detail.get(EXAMPLE_COPY) is not None]
    if copies:
        copied = [detail for detail in copies if detail[EXAMPLE_COPY] >= FREE]
        tables[COPIED] = {
            COPIES_FLAG: len(copied) / len(copies),
            "copies it and earns full credit": sum(float(d.get("score", 0)) >= FULL_CREDIT for d in copied) / len(copies),
            "mean share of its 4-grams in the note": sum(d[EXAMPLE_COPY] for d in copies) / len(copies),
        }
    return tables


def note_flags(details: Mapping[str, Any]) -> dict[str, bool]:
    """Under the per-item check: whether the note named the right diagnosis (and no other), and cited a finding;
    with example notes shown: whether it copies them (from :data:`rlvr.rewards.copying.FREE` of its 4-grams)."""
    flags = {COPIES_FLAG: details[EXAMPLE_COPY] >= FREE} if details.get(EXAMPLE_COPY) is not None else {}
    checked = details.get("per_item")
    if not checked:
        return flags
    return {"diagnosis named correctly": bool(checked.get("diagnosis_correct")),
            "cites a vignette finding": bool(checked.get("findings_cited")) or not checked.get("findings"), **flags}


def gold_shown(rubric: Rubric, row: Mapping[str, Any], per_item: bool) -> str:
    """``rubric NAME``, and with the per-item check the row's condition."""
    condition = row.get("condition") if per_item else None
    return f"rubric {rubric.name}; condition {condition}" if isinstance(condition, str) and condition else f"rubric {rubric.name}"


def _mean_indicators(details: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Each stuffing indicator (:func:`rlvr.verifiers.keywords.writing_indicators`) averaged over the completions having it."""
    values: dict[str, list[float]] = {}
    for detail in details:
        for name, value in (detail.get("indicators") or {}).items():
            if value is not None:
                values.setdefault(name, []).append(float(value))
    return {name: sum(v) / len(v) for name, v in values.items()}


def groups_shown(judgement: Judgement) -> str:
    """The rubric groups a completion covers, e.g. ``covered 2/3: diagnosis, treatment (missing: follow_up)``, and
    with the per-item check the conditions it names (``names pneumonia``)."""
    covered = [name for name, verdict in judgement.groups.items() if verdict["covered"]]
    missing = [name for name, verdict in judgement.groups.items() if not verdict["covered"]]
    text = f"covered {len(covered)}/{len(judgement.groups)}: {', '.join(covered) or 'none'}"
    text = f"{text} (missing: {', '.join(missing)})" if missing else text
    check = judgement.per_item
    if check is not None:
        named = ([check["condition"]] if check["condition_named"] else []) + list(check["other_conditions"])
        text += f"; names {', '.join(named) or 'no condition of the table'}"
    return text
