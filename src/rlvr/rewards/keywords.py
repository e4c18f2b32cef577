"""The ``keywords`` reward: domain terminology used in well-formed sentences, resisting keyword stuffing.

Which rubric judges a completion:

1. the row's ``rubric_column`` value (default column ``rubric``), when the
   dataset has one and it is not empty: a path to a rubric YAML, so one dataset
   can mix rubrics;
2. otherwise the factory's ``rubric`` parameter (a path; recipes set it as
   ``{name: keywords, rubric: path/to/rubric.yaml}``; the keywords task fills
   it in from its own ``rubric`` option);
3. otherwise the built-in medical rubric.

Rubrics load once per file (cached on path and modification time), and a
broken factory rubric fails when the reward is built, before any training.

``per_item=True`` adds the per-item check (:mod:`rlvr.verifiers.conditions`): each
row's ``condition`` column (a slug of the condition table), ``findings`` (the key
findings its vignette states) and ``question`` (the vignette) decide whether the
note names the right condition, and only it, and cites a finding;
``name_is_diagnosis=True`` also counts that name as a mention of the rubric's
``diagnosis`` group, so "This is acute otitis media, so I would start amoxicillin"
states the diagnosis with its treatment without the word "diagnosis". A row without a
condition is judged by the rubric alone. The ``keywords`` task fills these columns
when its ``per_item`` option is on, and passes the option to this reward.
"""

from __future__ import annotations

from typing import Any

from rlvr.rewards.base import REWARDS, RewardFunc, column, completion_text, default_weight, named
from rlvr.verifiers.conditions import Item, make_item
from rlvr.verifiers.keyword_rubric import Rubric
from rlvr.verifiers.keyword_rubric_loader import load_rubric
from rlvr.verifiers.keywords import Judgement, judge

#: The dataset columns the per-item check reads.
CONDITION_COLUMN, FINDINGS_COLUMN, VIGNETTE_COLUMN = "condition", "findings", "question"


def judge_completion(completion: Any, rubric: Rubric, semantic: bool | None = None, item: Item | None = None) -> Judgement:
    """The judgement of one completion (a string or chat messages); ``item``: the per-item check's row."""
    return judge(completion_text(completion), rubric, semantic, item)


def item_of(row: Any, name_is_diagnosis: bool = False) -> Item | None:
    """The per-item check's :class:`Item` from a row's ``condition``, ``findings`` and ``question`` (None: no
    condition); ``name_is_diagnosis``: see :attr:`rlvr.verifiers.conditions.Item.name_is_diagnosis`."""
    get = row.get if hasattr(row, "get") else (lambda _key: None)
    return make_item(get(CONDITION_COLUMN), get(FINDINGS_COLUMN), get(VIGNETTE_COLUMN), name_is_diagnosis)


def items_of(columns: dict[str, Any], count: int, name_is_diagnosis: bool = False) -> list[Item | None]:
    """The per-item check's items of a reward call's dataset columns (None for a row without a condition)."""
    return [make_item(*row, name_is_diagnosis) for row in zip(column(columns.get(CONDITION_COLUMN), count),
                                                              column(columns.get(FINDINGS_COLUMN), count),
                                                              column(columns.get(VIGNETTE_COLUMN), count), strict=True)]


def rubric_for(row_value: Any, default: Rubric) -> Rubric:
    """The row's own rubric when its column names one, else ``default``."""
    if isinstance(row_value, str) and row_value.strip():
        return load_rubric(row_value)
    return default


@REWARDS.register("keywords")
@default_weight(1.0)
def keywords_reward(rubric: str | None = None, rubric_column: str = "rubric", semantic: bool | None = None,
                    per_item: bool = False, name_is_diagnosis: bool = False) -> RewardFunc:
    """The rubric score in [0, 1] (see :mod:`rlvr.verifiers.keywords`); default weight 1.0.

    ``semantic`` switches the embedding check on or off, overriding the rubric's
    ``semantic.enabled``; None keeps the rubric's setting. ``per_item`` reads the
    ``condition``, ``findings`` and ``question`` columns (see the module docstring); with it,
    ``name_is_diagnosis`` counts the vignette's condition, named, as a mention of the rubric's diagnosis group.
    """
    default = load_rubric(rubric)

    def keywords(completions: list[Any], **columns: Any) -> list[float]:
        count = len(completions)
        rubrics = column(columns.get(rubric_column), count)
        items = items_of(columns, count, name_is_diagnosis) if per_item else [None] * count
        return [
            judge_completion(c, rubric_for(path, default), semantic, item).score
            for c, path, item in zip(completions, rubrics, items, strict=True)
        ]

    return named("keywords", keywords)


@REWARDS.register("diagnosis")
@default_weight(1.0)
def diagnosis_reward(rubric: str | None = None, rubric_column: str = "rubric", with_finding: bool = False) -> RewardFunc:
    """1.0 when the note names the row's condition as its diagnosis in a well-formed sentence and names no other
    condition of the table (the per-item check's "diagnosis named correctly"), else 0.0; None for a row without
    a condition (TRL leaves it out of the sum). Default weight 1.0. The rubric's penalties apply to it as to the
    rubric score (a looping, repeated, too short or stuffed note, a forbidden promise), so the right name does
    not pay inside text the rubric rejects.

    Beside ``keywords``, whose score gives the right diagnosis one rubric group in four: a small model can raise
    that score by form alone while naming the right condition less often; this reward pays for the substance.
    Reads the ``condition``, ``findings`` and ``question`` columns the keywords task adds with ``per_item: true``;
    ``rubric`` only decides what a well-formed sentence is. ``with_finding`` pays the right name only when the note
    also cites one of the vignette's own findings in a sentence, so a note cannot trade its evidence for the name.
    """
    default = load_rubric(rubric)

    def diagnosis(completions: list[Any], **columns: Any) -> list[float | None]:
        count = len(completions)
        rubrics = column(columns.get(rubric_column), count)
        scores: list[float | None] = []
        for completion, path, item in zip(completions, rubrics, items_of(columns, count), strict=True):
            if item is None:
                scores.append(None)
                continue
            judgement = judge_completion(completion, rubric_for(path, default), False, item)
            right = _right_diagnosis(judgement.per_item or {}, with_finding)
            scores.append(_penalised(1.0, judgement) if right else 0.0)
        return scores

    return named("diagnosis", diagnosis)


def _right_diagnosis(check: dict[str, Any], with_finding: bool) -> bool:
    """The per-item check's "diagnosis named correctly", and with ``with_finding`` a vignette finding cited too
    (always, for a vignette without a key finding, as the check's own citation test)."""
    cited = bool(check.get("findings_cited")) or not check.get("findings")
    return bool(check.get("diagnosis_correct")) and (cited or not with_finding)


def _penalised(value: float, judgement: Judgement) -> float:
    for penalty in judgement.penalties.values():
        value *= penalty.factor
    return round(min(1.0, max(0.0, value)), 4)
