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
note names the right condition, and only it, and cites a finding. A row without a
condition is judged by the rubric alone. The ``keywords`` task fills these columns
when its ``per_item`` option is on, and passes the option to this reward.
"""

from __future__ import annotations

from typing import Any

from rlvr.rewards.base import REWARDS, RewardFunc, column, completion_text, default_weight, named
from rlvr.verifiers.conditions import Item, make_item
from rlvr.verifiers.keyword_rubric import Rubric, load_rubric
from rlvr.verifiers.keywords import Judgement, judge

#: The dataset columns the per-item check reads.
CONDITION_COLUMN, FINDINGS_COLUMN, VIGNETTE_COLUMN = "condition", "findings", "question"


def judge_completion(completion: Any, rubric: Rubric, semantic: bool | None = None, item: Item | None = None) -> Judgement:
    """The judgement of one completion (a string or chat messages); ``item``: the per-item check's row."""
    return judge(completion_text(completion), rubric, semantic, item)


def item_of(row: Any) -> Item | None:
    """The per-item check's :class:`Item` from a row's ``condition``, ``findings`` and ``question`` (None: no condition)."""
    get = row.get if hasattr(row, "get") else (lambda _key: None)
    return make_item(get(CONDITION_COLUMN), get(FINDINGS_COLUMN), get(VIGNETTE_COLUMN))


def rubric_for(row_value: Any, default: Rubric) -> Rubric:
    """The row's own rubric when its column names one, else ``default``."""
    if isinstance(row_value, str) and row_value.strip():
        return load_rubric(row_value)
    return default


@REWARDS.register("keywords")
@default_weight(1.0)
def keywords_reward(rubric: str | None = None, rubric_column: str = "rubric", semantic: bool | None = None,
                    per_item: bool = False) -> RewardFunc:
    """The rubric score in [0, 1] (see :mod:`rlvr.verifiers.keywords`); default weight 1.0.

    ``semantic`` switches the embedding check on or off, overriding the rubric's
    ``semantic.enabled``; None keeps the rubric's setting. ``per_item`` reads the
    ``condition``, ``findings`` and ``question`` columns (see the module docstring).
    """
    default = load_rubric(rubric)

    def keywords(completions: list[Any], **columns: Any) -> list[float]:
        count = len(completions)
        rubrics = column(columns.get(rubric_column), count)
        if per_item:
            items = [make_item(*row) for row in zip(column(columns.get(CONDITION_COLUMN), count),
                                                    column(columns.get(FINDINGS_COLUMN), count),
                                                    column(columns.get(VIGNETTE_COLUMN), count), strict=True)]
        else:
            items = [None] * count
        return [
            judge_completion(c, rubric_for(path, default), semantic, item).score
            for c, path, item in zip(completions, rubrics, items, strict=True)
        ]

    return named("keywords", keywords)
