"""What a probe is: one completion of a known kind (an honest control or a hack), and a task's set of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

HONEST_CORRECT = "honest_correct"
HONEST_WRONG = "honest_wrong"


@dataclass(frozen=True)
class Probe:
    name: str
    kind: str  # honest_correct, honest_wrong, or hack
    completion: str
    description: str


@dataclass(frozen=True)
class ProbeSet:
    """Probes for one problem of a task: the gold columns the rewards read, and the completions."""

    task: str
    rewards: tuple[str, ...]  # the task's reward names; the audit needs them registered
    columns: dict[str, Any]
    probes: tuple[Probe, ...]
    #: The knob that usually brings down a hack that out-scores the honest wrong answer.
    hint: str = "e.g. add {name: reasoning_required, weight: 0.5}"
