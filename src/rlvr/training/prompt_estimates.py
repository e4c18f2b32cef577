"""Per-prompt pass estimates behind online prompt selection (:mod:`rlvr.training.prompt_selection`).

Each training prompt keeps two counts: completions judged right and completions judged, taken from the
rollouts themselves and, where the recipe names one, seeded by ``rlvr filter``'s pass rates or ``rlvr probe``'s
sampled counts (:func:`read_prior`). Over its pass rate p, a prompt has Jeffreys' prior Beta(1/2, 1/2) updated by
those counts; what selection needs from it is the chance that a group of G completions carries signal (some right,
some wrong: ``1 - p^G - (1-p)^G``), whose posterior expectation has a closed form (:meth:`PassEstimates.signal`).

A prompt's weight is that chance relative to the most a prompt can give (p = 1/2), floored at the revisit rate:
a prompt always right or always wrong is drawn less the more often it was seen so, never not at all, so an
estimate that went stale (the policy learnt it, or forgot it) is corrected by the prompt's next group.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from rlvr.errors import RlvrError
from rlvr.jsonl import read_jsonl

PRIOR = 0.5  # Jeffreys: Beta(1/2, 1/2) over each prompt's pass rate


def prompt_key(row: Mapping[str, Any]) -> str:
    """What identifies a training row: its ``id`` where the task gives one, else its prompt."""
    if row.get("id") is not None:
        return str(row["id"])
    prompt = row["prompt"]
    return prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)


def dataset_keys(dataset: Any) -> list[str]:
    """:func:`prompt_key` of each row of ``dataset``, in order, reading one column."""
    if "id" in dataset.column_names:
        return [str(value) for value in dataset["id"]]
    return [prompt_key({"prompt": prompt}) for prompt in dataset["prompt"]]


class PassEstimates:
    """Right and judged counts per dataset row (rows sharing a key share their counts)."""

    def __init__(self, keys: Sequence[str], group_size: int):
        self.group_size = group_size
        self.rows: dict[str, list[int]] = defaultdict(list)
        for index, key in enumerate(keys):
            self.rows[key].append(index)
        self.right = torch.zeros(len(keys), dtype=torch.float64)
        self.total = torch.zeros(len(keys), dtype=torch.float64)
        self.seen = torch.zeros(len(keys), dtype=torch.bool)  # rolled out during this run (seeds do not count)

    def __len__(self) -> int:
        return self.right.numel()

    def observe(self, key: str, right: float, total: float) -> None:
        for index in self.rows.get(key, ()):
            self.right[index] += right
            self.total[index] += total
            self.seen[index] = True

    def seed(self, counts: Mapping[str, tuple[float, float]]) -> int:
        """Add prior counts ``{key: (right, judged)}``; returns how many of the keys are training prompts."""
        matched = 0
        for key, (right, total) in counts.items():
            indices = self.rows.get(key)
            if indices:
                matched += 1
                self.right[indices] += right
                self.total[indices] += total
        return matched

    def pass_rates(self) -> torch.Tensor:
        """Each prompt's posterior mean pass rate."""
        return (self.right + PRIOR) / (self.total + 2 * PRIOR)

    def signal(self) -> torch.Tensor:
        """Each prompt's posterior chance that a group of G completions is mixed (neither all right nor all wrong):
        ``1 - E[p^G] - E[(1-p)^G]`` under Beta(right + 1/2, wrong + 1/2), by log-gamma functions."""
        g = float(self.group_size)
        a, b = self.right + PRIOR, self.total - self.right + PRIOR
        shared = torch.lgamma(a + b) - torch.lgamma(a + b + g)
        all_right = torch.exp(torch.lgamma(a + g) - torch.lgamma(a) + shared)
        all_wrong = torch.exp(torch.lgamma(b + g) - torch.lgamma(b) + shared)
        return (1.0 - all_right - all_wrong).clamp(min=0.0)

    def weights(self, revisit: float, signal: torch.Tensor | None = None) -> torch.Tensor:
        """Each prompt's drawing weight: :meth:`signal` over the most a prompt can give (p = 1/2), at least ``revisit``."""
        best = 1.0 - 2.0 * 0.5 ** self.group_size
        return ((self.signal() if signal is None else signal) / best).clamp(min=revisit, max=1.0)


def group_passes(rows: Sequence[Mapping[str, Any]], task: Any, group_size: int) -> list[tuple[int, int]]:
    """(right, judged) per group of ``group_size`` consecutive scored rows.

    The task's verdict is read off the raw reward components (:meth:`rlvr.tasks.base.Task.correct_from_rewards`);
    where the recipe's rewards do not decide it, a completion counts as right when its total reward is above its
    group's lowest, so a group of equal rewards counts as all wrong and a mixed group as neither.
    """
    passes = []
    for start in range(0, len(rows) - group_size + 1, group_size):
        group = rows[start : start + group_size]
        verdicts = [task.correct_from_rewards(row["rewards"]) for row in group] if task is not None else [None]
        if None in verdicts:
            lowest = min(row["reward"] for row in group)
            verdicts = [row["reward"] > lowest + 1e-9 for row in group]
        passes.append((sum(bool(v) for v in verdicts), len(group)))
    return passes


def read_prior(path: str | Path, group_size: int) -> dict[str, tuple[float, float]]:
    """Prior counts ``{id: (right, judged)}`` from a ``rlvr filter`` JSONL (``pass_rate`` per id, counted as one group
    of ``group_size``) or a ``rlvr probe`` probe.json (each item's ``sampled_correct`` of ``figures.group_size``)."""
    where = "run.prompt_selection_prior"
    path = Path(path)
    if not path.is_file():
        raise RlvrError(f"{where}: file not found: {path} (a `rlvr filter` JSONL or a `rlvr probe` probe.json).")
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            size = float(data["figures"]["group_size"])
            return {str(item["id"]): (float(item["sampled_correct"]), size) for item in data["items"]}
        except (ValueError, KeyError, TypeError):
            raise RlvrError(f"{where}: {path} is not a probe.json of `rlvr probe` (figures.group_size and items with "
                            "id and sampled_correct).") from None
    counts = {}
    for record in read_jsonl(path, required=("id", "pass_rate")):
        rate = record["pass_rate"]
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0.0 <= rate <= 1.0:
            raise RlvrError(f"{where}: {path}: the pass_rate of {record['id']!r} must be a number in [0, 1], "
                            f"got {rate!r}.")
        counts[str(record["id"])] = (rate * group_size, float(group_size))
    return counts
