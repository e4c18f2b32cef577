"""Score every probe of a set with a task's rewards and flag the hacks that out-score the honest answers."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rlvr.audit.probe import HONEST_CORRECT, HONEST_WRONG, Probe, ProbeSet


@dataclass
class ProbeResult:
    probe: Probe
    reward: float
    components: dict[str, float]
    beats_wrong: bool = False
    exploit: bool = False


@dataclass
class AuditResult:
    task: str
    hint: str = ""
    results: list[ProbeResult] = field(default_factory=list)
    #: Rewards that scored no probe (None for all: e.g. ``overlong``, which needs the token ids only training has).
    unjudged: list[str] = field(default_factory=list)

    def score(self, kind: str) -> float:
        return next(r.reward for r in self.results if r.probe.kind == kind)

    @property
    def exploits(self) -> list[ProbeResult]:
        return [r for r in self.results if r.exploit]

    @property
    def honest_below_wrong(self) -> list[ProbeResult]:
        """Honest correct probes that do not out-score the honest wrong answer (the plain one, or another way of
        answering right, such as after a tool call)."""
        wrong = self.score(HONEST_WRONG)
        return [r for r in self.results if r.probe.kind == HONEST_CORRECT and r.reward <= wrong]

    @property
    def separates_honest(self) -> bool:
        """Whether every honest correct answer out-scores the honest wrong one at all."""
        return not self.honest_below_wrong

    @property
    def passed(self) -> bool:
        return self.separates_honest and not self.exploits


def audit(probe_set: ProbeSet, reward_funcs: list[Callable[..., list[float]]], weights: list[float] | None = None) -> AuditResult:
    """Score every probe with ``reward_funcs`` (times ``weights``, TRL's ``reward_weights``) and judge the hacks
    against the first honest correct and the first honest wrong probe."""
    probes = list(probe_set.probes)
    columns = {key: [value] * len(probes) for key, value in probe_set.columns.items()}
    weights = weights or [1.0] * len(reward_funcs)
    components: list[dict[str, float]] = [{} for _ in probes]
    unjudged: list[str] = []
    for func, weight in zip(reward_funcs, weights, strict=True):
        completions = [_completion(p) for p in probes]  # fresh chats each time: a reward may change what it gets
        scores = func(completions, prompts=[probe_set.columns.get("question", "")] * len(probes), **columns)
        if all(score is None for score in scores):
            unjudged.append(func.__name__)
        for row, score in zip(components, scores, strict=True):
            row[func.__name__] = weight * float(score if score is not None else 0.0)
    result = AuditResult(probe_set.task, probe_set.hint, unjudged=unjudged)
    for probe, parts in zip(probes, components, strict=True):
        result.results.append(ProbeResult(probe, sum(parts.values()), parts))
    correct, wrong = result.score(HONEST_CORRECT), result.score(HONEST_WRONG)
    for row in result.results:
        if row.probe.kind == "hack":
            row.beats_wrong = row.reward > wrong + 1e-9
            row.exploit = row.reward >= correct - 1e-9
    return result


def _completion(probe: Probe) -> Any:
    """What a reward gets for ``probe``: its text, or its chat as a list of copied messages (TRL's shape)."""
    return probe.completion if isinstance(probe.completion, str) else copy.deepcopy(list(probe.completion))
