"""What "correct" means for tasks answered with one number on a ``#### The final answer is N`` line.

GSM8K and the arithmetic task share it: the math verifier (:mod:`rlvr.verifiers.math`)
reads the first answer line and compares its one number with the ``final_answer``
column within :data:`~rlvr.verifiers.math.TOLERANCE`. In training batches the
``correctness`` reward carries the same verdict and ``format`` the answer's form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from rlvr.rewards.base import completion_text
from rlvr.rewards.math import correctness_score, format_score
from rlvr.tasks.base import Outcome, Task
from rlvr.verifiers.math import format_answer, read_answer

GOLD_COLUMN = "final_answer"
#: Where a rambling model starts the next problem of the k-shot format (also a stop pattern).
NEXT_QUESTION = "\nQuestion:"


class NumericAnswerTask(Task):
    """Base of tasks whose rows carry ``final_answer`` and whose completions end in a ``####`` line."""

    accuracy_name: ClassVar[str] = "accuracy"
    takes_shots: ClassVar[bool] = True
    stop_strings: ClassVar[list[str]] = [NEXT_QUESTION]
    judged_by: ClassVar[str | None] = "correctness"
    #: The reward whose raw score > 0 means a well-formed answer line.
    formed_by: ClassVar[str] = "format"

    def judge(self, completions: Sequence[Any], rows: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        outcomes = []
        for completion, row in zip(completions, rows, strict=True):
            text = completion_text(completion)
            gold = row.get(GOLD_COLUMN)
            correct = correctness_score(text, gold)
            outcomes.append(Outcome(
                correct=correct,
                score=1.0 if correct else 0.0,
                answer=self.shown_answer(text),
                gold=self.shown_gold(row),
                well_formed=format_score(text),
            ))
        return outcomes

    def shown_answer(self, completion: Any) -> str | None:
        """The number on the first answer line (as text), or that line when it holds no single number."""
        answer = read_answer(completion_text(completion))
        if answer is None:
            return None
        return format_answer(answer.value) if answer.value is not None else answer.text

    def shown_gold(self, row: Mapping[str, Any]) -> str | None:
        gold = row.get(GOLD_COLUMN)
        return None if gold is None else str(gold)

    def well_formed_from_rewards(self, rewards: Mapping[str, float | None]) -> bool | None:
        if self.formed_by not in rewards:
            return None
        return (rewards[self.formed_by] or 0.0) > 0
