"""Tasks whose completions end in ``#### The final answer is X`` and whose verifier is chosen, not fixed.

The user's file task (``jsonl``) and reasoning-gym datasets (``reasoning-gym``) share this base: the
prompt states the answer line and what ``X`` must be (the verifier's ``answer_form``), generation stops
at that line as in the math tasks, and the task's own verifier decides "correct" everywhere:

* :meth:`AnswerLineTask.judge` (evaluation, ``rlvr filter``);
* the rewards ``format`` (1 when the answer line has the phrase and an answer of the verifier's form)
  and ``correctness`` (the verifier's score: 1 / 0, or a checker's partial credit), which a recipe names
  as for the math tasks and which here follow the task's verifier. Other rewards (built-in, import
  paths, plug-ins) are built as usual.

A task whose answers span lines (grids, matrices) sets :attr:`AnswerLineTask.block_answers`: the answer line
then opens a fenced block holding the answer (:mod:`rlvr.verifiers.answer_block`), and the instruction,
exemplars, gold completions, stop patterns and parsing all take that form; nothing changes for the others.

A verifier that fails on an item (the user's checker raised) judges it wrong: the failure is counted,
the first one is printed, evaluations report the share (:meth:`breakdown`) and each outcome's
``details``; the run goes on.
"""

from __future__ import annotations

import abc
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rlvr.errors import RlvrError
from rlvr.rewards.base import RewardFunc, build_reward, column, completion_text, named
from rlvr.tasks.base import FULL_CREDIT, Outcome, Task
from rlvr.tasks.prompts import COT_LEAD, STOP_PATTERNS
from rlvr.verifiers.answer_block import BLOCK_END, render_block
from rlvr.verifiers.answers import Verdict

ANSWER_LINE = "#### The final answer is"
#: Where a rambling model starts the next item of the k-shot prompt.
NEXT_QUESTION = "\nQuestion:"
#: The rewards these tasks build from their verifier (a recipe names them as for the math tasks).
OWN_REWARDS = ("format", "correctness")
#: Generation of a block answer stops once it is decided (the block closed, or no block opened), or at a new question.
BLOCK_STOP_PATTERNS = [BLOCK_END, STOP_PATTERNS[1]]
_CHECKER_FAILED = "checker failed (judged wrong)"


@dataclass(frozen=True)
class Shot:
    """An exemplar: the item as the template renders it, an optional worked solution, and the gold answer."""

    text: str
    reasoning: str
    answer: str


def instruction_for(answer_form: str, block: bool = False) -> str:
    if block:
        return (f"Answer the question. End with a line '{ANSWER_LINE}:', then a line '```', X, and a line '```', "
                f"where X is {answer_form}.")
    return f"Answer the question. End with a line '{ANSWER_LINE} X', where X is {answer_form}."


def answer_lines(answer: Any, block: bool = False) -> str:
    """``answer`` as a completion gives it: on the answer line, or (``block``) in a fenced block after it."""
    return render_block(str(answer)) if block else f"{ANSWER_LINE} {answer}"


def gold_as_answer_line(gold: Any, block: bool = False) -> str:
    """A completion that gives ``gold`` on the answer line (``block``: in the block after it) after the reasoning lead."""
    return f"{COT_LEAD}\n{answer_lines(gold, block)}\n"


def render_plain(instruction: str, shots: Sequence[Shot], text: str, block: bool = False) -> str:
    """The plain k-shot prompt: the instruction, each exemplar with its answer line, then the item."""
    blocks = [instruction.strip() + "\n\n"] if instruction.strip() else []
    for shot in shots:
        reasoning = f" {shot.reasoning.strip()}" if shot.reasoning.strip() else ""
        blocks.append(f"{shot.text}\nSolution: {COT_LEAD}{reasoning}\n{answer_lines(shot.answer, block)}\n\n")
    blocks.append(f"{text}\nSolution: {COT_LEAD}")
    return "".join(blocks)


def render_messages(instruction: str, shots: Sequence[Shot], text: str, block: bool = False) -> list[dict[str, str]]:
    """The same prompt as chat turns: exemplars as user/assistant pairs, the instruction with the item."""
    messages: list[dict[str, str]] = []
    for shot in shots:
        reasoning = f"{COT_LEAD} {shot.reasoning.strip()}".strip()
        messages.append({"role": "user", "content": shot.text})
        messages.append({"role": "assistant", "content": f"{reasoning}\n{answer_lines(shot.answer, block)}"})
    messages.append({"role": "user", "content": f"{instruction.strip()}\n\n{text}".strip()})
    return messages


class AnswerLineTask(Task):
    """Base of tasks judged by a chosen verifier on the answer line (rows carry ``final_answer``)."""

    takes_shots: ClassVar[bool] = True
    stop_strings: ClassVar[list[str]] = [NEXT_QUESTION]
    #: Whether answers are given in a fenced block after the answer line (answers that span lines).
    block_answers: ClassVar[bool] = False
    judged_by: ClassVar[str | None] = "correctness"
    default_rewards: ClassVar[list[dict[str, Any]]] = [{"name": "format", "weight": 0.5},
                                                        {"name": "correctness", "weight": 1.0}]

    @property
    def stop_patterns(self) -> list[str]:  # type: ignore[override]
        """Generation ends at the answer line's end, or (block answers) once the block is closed."""
        return BLOCK_STOP_PATTERNS if self.block_answers else STOP_PATTERNS

    @abc.abstractmethod
    def verify(self, text: str, row: Mapping[str, Any]) -> Verdict:
        """The verdict on one completion's text for the dataset row it answers."""

    @abc.abstractmethod
    def well_formed(self, text: str) -> bool:
        """Whether the answer line has the phrase and an answer of the verifier's form."""

    # ----------------------------------------------------------------------------- correctness

    def judge(self, completions: Sequence[Any], rows: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        outcomes = []
        for completion, row in zip(completions, rows, strict=True):
            verdict = self._verify(completion_text(completion), row)
            details = {"checker_error": verdict.error} if verdict.error else {}
            outcomes.append(Outcome(
                correct=verdict.score >= FULL_CREDIT,
                score=verdict.score,
                answer=verdict.answer,
                gold=self.shown_gold(row),
                well_formed=verdict.well_formed,
                details=details,
            ))
        return outcomes

    def _verify(self, text: str, row: Mapping[str, Any]) -> Verdict:
        verdict = self.verify(text, row)
        if verdict.error:
            failures = self.__dict__.get("checker_failures", 0) + 1
            self.__dict__["checker_failures"] = failures
            if failures == 1:
                print(f"rlvr: warning: the verifier {verdict.error} on item {row.get('id', '?')}: judged wrong; "
                      "further failures are counted (evaluations report their share).", file=sys.stderr, flush=True)
        return verdict

    def shown_answer(self, completion: Any) -> str | None:
        from rlvr.verifiers.answers import answer_text

        return answer_text(completion_text(completion), self.block_answers)[0]

    def shown_gold(self, row: Mapping[str, Any]) -> str | None:
        gold = row.get("final_answer")
        return None if gold is None else str(gold)

    def reference_completions(self) -> dict[str, str]:
        """The train split's most common gold written as the answer line ({} without golds)."""
        from rlvr.verifiers.answer_keys import most_common_answer

        gold = most_common_answer([g for g in self.load("train")["final_answer"] if g is not None and str(g).strip()])
        if gold is None:
            return {}
        label = f"the train split's most common answer {gold[:40]!r} on the answer line"
        return {label: gold_as_answer_line(gold, self.block_answers)}

    def well_formed_from_rewards(self, rewards: Mapping[str, float | None]) -> bool | None:
        if "format" not in rewards:
            return None
        return (rewards["format"] or 0.0) > 0

    def breakdown(self, details: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
        failed = sum(1 for d in details if d.get("checker_error"))
        return {"verifier": {_CHECKER_FAILED: failed / len(details)}} if failed and details else {}

    # ----------------------------------------------------------------------------- rewards

    def reward_functions(self, specs: list[dict[str, Any]] | None = None) -> list[RewardFunc]:
        """``format`` and ``correctness`` from this task's verifier; any other reward as usual."""
        specs = specs if specs else self.default_rewards
        funcs = []
        for spec in specs:
            params = {k: v for k, v in spec.items() if k not in ("name", "weight")}
            if spec["name"] in OWN_REWARDS:
                if params:
                    raise RlvrError(f"reward '{spec['name']}' of task '{self.name}' follows the task's verifier "
                                    f"and takes no parameters; got {', '.join(params)}.")
                funcs.append(self._format_reward() if spec["name"] == "format" else self._correctness_reward())
            else:
                funcs.append(build_reward(spec["name"], params))
        return funcs

    def _format_reward(self) -> RewardFunc:
        def format(completions: list[Any], **_: Any) -> list[float]:
            return [1.0 if self.well_formed(completion_text(c)) else 0.0 for c in completions]

        return named("format", format)

    def _correctness_reward(self) -> RewardFunc:
        def correctness(completions: list[Any], **columns: Any) -> list[float]:
            count = len(completions)
            keys = [k for k in columns if isinstance(columns[k], list) and len(columns[k]) == count]
            rows = [{k: column(columns[k], count)[i] for k in keys} for i in range(count)]
            return [self._verify(completion_text(c), row).score for c, row in zip(completions, rows, strict=True)]

        return named("correctness", correctness)
