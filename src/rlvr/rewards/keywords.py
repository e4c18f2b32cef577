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
"""

from __future__ import annotations

from typing import Any

from rlvr.rewards.base import REWARDS, RewardFunc, column, completion_text, default_weight, named
from rlvr.verifiers.keyword_rubric import Rubric, load_rubric
from rlvr.verifiers.keywords import Judgement, judge


def judge_completion(completion: Any, rubric: Rubric, semantic: bool | None = None) -> Judgement:
    """The judgement of one completion (a string or chat messages)."""
    return judge(completion_text(completion), rubric, semantic)


def rubric_for(row_value: Any, default: Rubric) -> Rubric:
    """The row's own rubric when its column names one, else ``default``."""
    if isinstance(row_value, str) and row_value.strip():
        return load_rubric(row_value)
    return default


@REWARDS.register("keywords")
@default_weight(1.0)
def keywords_reward(rubric: str | None = None, rubric_column: str = "rubric", semantic: bool | None = None) -> RewardFunc:
    """The rubric score in [0, 1] (see :mod:`rlvr.verifiers.keywords`); default weight 1.0.

    ``semantic`` switches the embedding check on or off, overriding the rubric's
    ``semantic.enabled``; None keeps the rubric's setting.
    """
    default = load_rubric(rubric)

    def keywords(completions: list[Any], **columns: Any) -> list[float]:
        rubrics = column(columns.get(rubric_column), len(completions))
        return [
            judge_completion(c, rubric_for(path, default), semantic).score
            for c, path in zip(completions, rubrics, strict=True)
        ]

    return named("keywords", keywords)
