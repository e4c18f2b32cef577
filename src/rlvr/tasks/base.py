"""The Task interface and the registry recipes name tasks from.

A task bundles what a training or evaluation run needs to know about one kind
of problem: how to load its data as rows with a ``prompt`` column and gold
columns, which rewards train on it, where generation should stop, and what
"correct" means. Adding a task means adding a module under ``rlvr/tasks/``;
the trainer never changes.

Tasks are dataclasses: their fields are the task's options, so a recipe's
``task:`` section is validated against them (unknown keys are named, with the
closest valid one).

**The task owns correctness.** Every module that needs to know whether a
completion is right (``rlvr eval``, the in-training evaluation, ``rlvr filter``,
run health, sample tables) asks the task; none of them names a reward:

* :meth:`Task.judge` judges completions against their rows' gold columns and
  returns one :class:`Outcome` each (correct, score, answer and gold as shown,
  well-formed, details). It is the authority: it uses the task's verifier
  (math: the answer-line verifier; code: the sandbox, correct when every test
  passes; keywords: the rubric, correct at full credit), not a recipe's rewards.
* :meth:`Task.correct_from_rewards` / :meth:`Task.well_formed_from_rewards`
  read the same verdicts off a completion's raw reward components where they
  are already computed (training batches), so health metrics cost nothing; they
  return None when the recipe lacks the deciding reward (:attr:`Task.judged_by`).
* :meth:`Task.shown_answer` and :meth:`Task.shown_gold` say how to show the
  extracted answer and the gold to people; :attr:`Task.accuracy_name` names the
  accuracy metric; :attr:`Task.takes_shots` says whether ``shots`` (exemplars)
  is an option of the task.
* :meth:`Task.reference_completions` gives fixed completions (a reference note, a
  reference program, the most common gold on the answer line) that the held-out
  verdict judges on every test item: what one fixed text earns where items have
  no single gold answer to compare (:attr:`Task.single_gold_answer` False, or no
  ``final_answer`` column).
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from rlvr.errors import RlvrError
from rlvr.registry import Registry
from rlvr.rewards.base import RewardFunc, build_reward, reward_weights

TASKS: Registry[type[Task]] = Registry("task")

SPLITS = ("train", "validation", "test")
#: A raw reward component at or above this (less float noise) is full credit: correct.
FULL_CREDIT = 1.0 - 1e-9


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How one completion fared, as its task judges it.

    ``correct``: the task's verdict (math: the answer equals the gold; code: every test
    passes; keywords: full rubric credit). ``score``: the task's own measure in [0, 1]
    (math: 1 or 0; code: the share of tests passed; keywords: the rubric score).
    ``answer`` / ``gold``: the extracted answer and the gold as shown to people (None:
    nothing to show). ``well_formed``: the answer came in the expected form (math: a
    well-formed answer line after reasoning; code: the program is defined and runs);
    None where the task has no notion of form. ``details``: task-specific, JSON-ready
    (code: status, tests and their outcomes; keywords: the rubric explanation).
    """

    correct: bool
    score: float
    answer: str | None = None
    gold: str | None = None
    well_formed: bool | None = None
    details: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Task(abc.ABC):
    """Base class. Subclasses are dataclasses registered with ``@TASKS.register(name)``."""

    name: ClassVar[str] = ""
    #: Rewards used when a recipe names none: ``[{"name": ..., **params}, ...]``.
    default_rewards: ClassVar[list[dict[str, Any]]] = []
    #: Regexes (``re.MULTILINE``) on generated text; generation of a row ends at the first match.
    stop_patterns: ClassVar[list[str]] = []
    #: Literal text where a rambling completion starts the next item (the k-shot prompt's ``\nQuestion:``):
    #: generation may stop on it (vLLM's ``stop``) and it is dropped from the end of the completion.
    stop_strings: ClassVar[list[str]] = []
    #: The name of the task's accuracy metric (the share of completions judged correct).
    accuracy_name: ClassVar[str] = "accuracy"
    #: Whether the task has a ``shots`` option (exemplars before each question).
    takes_shots: ClassVar[bool] = False
    #: The reward whose raw score decides "correct" in training batches (full credit, 1.0, is correct).
    judged_by: ClassVar[str | None] = None
    #: Rows each split lost because an earlier split (test, then validation) holds their question
    #: (tasks that read files set it when they split; see :mod:`rlvr.tasks.splits`).
    dropped_overlaps: ClassVar[dict[str, int]] = {}

    @abc.abstractmethod
    def load(self, split: str) -> Any:
        """A ``datasets.Dataset`` for ``split`` (train / validation / test) with a ``prompt`` column."""

    # --------------------------------------------------------------------- correctness

    @abc.abstractmethod
    def judge(self, completions: Sequence[Any], rows: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        """One :class:`Outcome` per completion; ``rows[i]`` is the dataset row (its gold columns) completion i answers.

        Completions are plain strings or chat message lists. Never raises on model output.
        """

    def shown_answer(self, completion: Any) -> str | None:
        """The answer a completion gives, as shown to people (None: nothing to extract)."""
        return None

    @property
    def single_gold_answer(self) -> bool:
        """Whether a row's ``final_answer`` (where rows carry one) is the one answer to give, so that always giving
        the train split's most common one is a baseline; False where a checker judges answers its own way."""
        return True

    def train_answers(self) -> list[Any]:
        """The train split's gold answers as the test items are drawn (the constant-answer baseline learns its
        answer from them): every train row's ``final_answer`` unless the task trains on other configurations too."""
        return list(self.load("train")["final_answer"])

    def reference_completions(self) -> dict[str, str]:
        """Fixed completions worth judging on every test item, ``{label: completion text}`` ({}: none).

        The held-out verdict's constant-completion baseline judges each (beside the best training rollouts)
        on every test item and reports the best: a reward a single fixed text maximises is a hack.
        """
        return {}

    def shown_gold(self, row: Mapping[str, Any]) -> str | None:
        """A row's gold, as shown to people (None: nothing to show)."""
        return None

    def correct_from_rewards(self, rewards: Mapping[str, float | None]) -> bool | None:
        """The verdict read off a completion's raw reward components; None when :attr:`judged_by` is not among them."""
        if self.judged_by is None or self.judged_by not in rewards:
            return None
        return (rewards[self.judged_by] or 0.0) >= FULL_CREDIT

    def well_formed_from_rewards(self, rewards: Mapping[str, float | None]) -> bool | None:
        """Whether the answer came in the expected form, read off raw reward components (None: cannot tell)."""
        return None

    def breakdown(self, details: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
        """Shares over many outcomes' ``details`` that evaluation reports show per configuration.

        ``{table title: {row: share}}``, e.g. keywords' rubric group coverage; {} when the task has none.
        """
        return {}

    def item_flags(self, details: Mapping[str, Any]) -> dict[str, bool]:
        """Yes/no facts of one outcome's ``details`` that the verdict compares item by item before and after
        training (McNemar), beside full credit: e.g. keywords' "diagnosis named correctly". {}: none."""
        return {}

    def close(self) -> None:
        """Release what judging started (the code tasks' sandbox workers). Judging again restarts it."""
        return None

    def overlap(self) -> dict[str, Any]:
        """Questions shared between this task's splits (zero when held out means held out), and rows dropped."""
        from rlvr.tasks.splits import overlap_report

        return overlap_report(self)

    def reward_functions(self, specs: list[dict[str, Any]] | None = None) -> list[RewardFunc]:
        """Reward functions (raw scores) from recipe specs, or the task's defaults; weights go to :meth:`reward_weights`."""
        specs = specs if specs else self.default_rewards
        funcs = []
        for spec in specs:
            params = {k: v for k, v in spec.items() if k not in ("name", "weight")}
            funcs.append(build_reward(spec["name"], params))
        return funcs

    def reward_weights(self, specs: list[dict[str, Any]] | None = None, grpo_weights: list[float] | None = None) -> list[float]:
        """The weights TRL applies (``GRPOConfig.reward_weights``) to :meth:`reward_functions` ``(specs)``.

        Each spec's ``weight`` (else the reward's default), or ``grpo_weights``; setting both is an error.
        """
        if not specs:  # the task's defaults; grpo.reward_weights, when given, replaces their weights
            specs = self.default_rewards if grpo_weights is None else [{**s, "weight": None} for s in self.default_rewards]
        return reward_weights(specs, grpo_weights)

    def score_records(self, records: list[dict[str, Any]], rewards: list[RewardFunc] | None = None,
                      weights: list[float] | None = None) -> list[dict[str, Any]]:
        """Score ``{"completion": ..., <gold columns>}`` records: raw components and their weighted ``total``.

        Used by ``rlvr reward score``; without ``rewards``, the task's default rewards and weights.
        Tasks with richer verdicts override it.
        """
        if rewards is None:
            rewards, weights = self.reward_functions(), self.reward_weights()
        weights = weights if weights is not None else [1.0] * len(rewards)
        completions = [r.get("completion", "") for r in records]
        columns = _columns(records)
        results: list[dict[str, Any]] = [{} for _ in records]
        for func in rewards:
            for result, value in zip(results, func(completions, **columns), strict=False):
                result[func.__name__] = value
        for result in results:
            result["total"] = sum(w * (result.get(f.__name__) or 0.0) for f, w in zip(rewards, weights, strict=True))
        return results


def _columns(records: list[dict[str, Any]]) -> dict[str, list[Any]]:
    keys = {k for r in records for k in r if k != "completion"}
    return {k: [r.get(k) for r in records] for k in keys}


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise RlvrError(f"unknown split '{split}'; use one of: {', '.join(SPLITS)}.")
    return split
