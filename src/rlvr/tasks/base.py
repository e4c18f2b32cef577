"""The Task interface and the registry recipes name tasks from.

A task bundles what a training or evaluation run needs to know about one kind
of problem: how to load its data as rows with a ``prompt`` column and gold
columns, which rewards judge it, and where generation should stop. Adding a
task means adding a module under ``rlvr/tasks/``; the trainer never changes.

Tasks are dataclasses: their fields are the task's options, so a recipe's
``task:`` section is validated against them (unknown keys are named, with the
closest valid one).
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, ClassVar

from rlvr.errors import RlvrError
from rlvr.registry import Registry
from rlvr.rewards.base import RewardFunc, build_reward

TASKS: Registry[type[Task]] = Registry("task")

SPLITS = ("train", "validation", "test")


@dataclasses.dataclass
class Task(abc.ABC):
    """Base class. Subclasses are dataclasses registered with ``@TASKS.register(name)``."""

    name: ClassVar[str] = ""
    #: Rewards used when a recipe names none: ``[{"name": ..., **params}, ...]``.
    default_rewards: ClassVar[list[dict[str, Any]]] = []
    #: Regexes (``re.MULTILINE``) on generated text; generation of a row ends at the first match.
    stop_patterns: ClassVar[list[str]] = []

    @abc.abstractmethod
    def load(self, split: str) -> Any:
        """A ``datasets.Dataset`` for ``split`` (train / validation / test) with a ``prompt`` column."""

    def reward_functions(self, specs: list[dict[str, Any]] | None = None) -> list[RewardFunc]:
        """Build reward functions from recipe specs, or the task's defaults."""
        specs = specs if specs else self.default_rewards
        funcs = []
        for spec in specs:
            params = {k: v for k, v in spec.items() if k != "name"}
            funcs.append(build_reward(spec["name"], params))
        return funcs

    def score_records(self, records: list[dict[str, Any]], rewards: list[RewardFunc] | None = None) -> list[dict[str, Any]]:
        """Score ``{"completion": ..., <gold columns>}`` records: one dict of components + total each.

        Used by ``rlvr reward score``; tasks with richer verdicts override it.
        """
        rewards = rewards or self.reward_functions()
        completions = [r.get("completion", "") for r in records]
        columns = _columns(records)
        results: list[dict[str, Any]] = [{} for _ in records]
        for func in rewards:
            for result, value in zip(results, func(completions, **columns), strict=False):
                result[func.__name__] = value
        for result in results:
            result["total"] = sum(v for v in result.values() if isinstance(v, (int, float)))
        return results


def _columns(records: list[dict[str, Any]]) -> dict[str, list[Any]]:
    keys = {k for r in records for k in r if k != "completion"}
    return {k: [r.get(k) for r in records] for k in keys}


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise RlvrError(f"unknown split '{split}'; use one of: {', '.join(SPLITS)}.")
    return split
