"""The best-rewarded completions of the training rollouts: candidates for the verdict's constant-completion baseline.

Where test items have no single gold answer (rubric prose, programs, a user's checker), the held-out verdict
judges fixed completions, the same text for every test item (:func:`rlvr.evaluation.baselines.constant_completion_baseline`).
The texts that earned the highest total reward in training are the ones a policy drifting towards one answer
writes. :class:`TopCompletions` keeps a few distinct ones with their reward and step; it only reads the rows
the trainer already scored (training is unchanged) and is saved with every checkpoint (``rlvr_state.json``,
:mod:`rlvr.training.resume`), so a resumed run keeps what the killed one saw.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rlvr.rewards.base import completion_text

#: Distinct completions kept (each is judged on every test item; code runs in the sandbox).
KEPT = 3
_ORDINALS = ("the top training rollout", "the 2nd best training rollout", "the 3rd best training rollout")


@dataclass
class TopCompletions:
    """The ``keep`` distinct completion texts with the highest total reward, best first (ties: the earliest)."""

    keep: int = KEPT
    entries: list[dict[str, Any]] = field(default_factory=list)  # {"completion", "reward", "step"}

    def offer(self, rows: Iterable[Mapping[str, Any]], step: int) -> None:
        """Consider scored rollout rows (``{"completion", "reward"}``: the weighted total) of training step ``step``."""
        for row in rows:
            reward, text = row.get("reward"), completion_text(row.get("completion"))
            if isinstance(reward, (int, float)) and math.isfinite(reward) and text.strip():
                self._add(text, float(reward), step)

    def _add(self, text: str, reward: float, step: int) -> None:
        known = next((entry for entry in self.entries if entry["completion"] == text), None)
        if known is None:
            self.entries.append({"completion": text, "reward": reward, "step": step})
        elif reward > known["reward"]:
            known.update(reward=reward, step=step)
        self.entries.sort(key=lambda entry: -entry["reward"])  # stable: among ties the earlier stays ahead
        del self.entries[self.keep :]

    def candidates(self) -> list[dict[str, Any]]:
        """The kept completions as baseline candidates: label, source, completion, step and reward."""
        return [{"label": _ORDINALS[i] if i < len(_ORDINALS) else f"training rollout {i + 1}",
                 "source": f"training rollout step {e['step']} reward {e['reward']:.3g}",
                 "completion": e["completion"], "step": e["step"], "reward": e["reward"]}
                for i, e in enumerate(self.entries)]

    def to_json(self) -> list[dict[str, Any]]:
        return [dict(entry) for entry in self.entries]

    @classmethod
    def from_json(cls, saved: Any, keep: int = KEPT) -> TopCompletions:
        """The completions saved with a checkpoint (anything unreadable is skipped: none kept)."""
        kept = cls(keep)
        for entry in saved if isinstance(saved, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get("step"), int):
                kept.offer([entry], entry["step"])
        return kept
