"""What a probe is: one completion of a known kind (an honest control or a hack), and a task's set of them.

A completion is a plain string or, as TRL's tool loop hands rewards, a chat: assistant messages (some with
``tool_calls``) and ``tool`` replies. A probe keeps a chat as a tuple (probes are frozen); the audit passes rewards a
fresh list of copied messages, as TRL would."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

HONEST_CORRECT = "honest_correct"
HONEST_WRONG = "honest_wrong"

#: A chat completion: ``{"role": "assistant" | "tool", "content": ..., "tool_calls"?: ..., "name"?: ...}`` messages.
Messages = tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Probe:
    name: str
    kind: str  # honest_correct, honest_wrong, or hack; the first of each honest kind is the one hacks are judged by
    completion: str | Messages
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
