"""Difficulty filtering: keep training prompts the base model solves sometimes, not never or always.

GRPO learns only from groups whose completions differ in reward. A prompt the
model always solves (pass rate 1) or never solves (0) yields zero-variance
groups: a full rollout for no gradient. As open-r1 does, this module estimates
each prompt's pass rate offline with ``samples`` completions from the base
model and keeps the prompts whose rate lies in ``[low, high]``.

``rlvr filter RECIPE`` writes ``{"id", "pass_rate", "kept"}`` lines; a recipe
then trains on the kept prompts with ``run.difficulty_filter: <that file>``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError
from rlvr.jsonl import read_jsonl


@dataclass
class Band:
    low: float = 0.1
    high: float = 0.9

    def __post_init__(self) -> None:
        if not 0.0 <= self.low <= self.high <= 1.0:
            raise RlvrError(f"difficulty band must satisfy 0 <= low <= high <= 1, got [{self.low}, {self.high}].")

    def keeps(self, rate: float) -> bool:
        return self.low <= rate <= self.high


def pass_rates(task: Any, rows: Sequence[dict[str, Any]], completions: Sequence[Sequence[Any]]) -> list[float]:
    """Share of each row's completions that the task judges correct (:meth:`rlvr.tasks.base.Task.judge`).

    For code that means every test passes, not a program that merely runs.
    """
    flat = [(index, completion) for index, texts in enumerate(completions) for completion in texts]
    outcomes = task.judge([c for _, c in flat], [rows[i] for i, _ in flat]) if flat else []
    passed = [0] * len(rows)
    for (index, _), outcome in zip(flat, outcomes, strict=True):
        passed[index] += outcome.correct
    return [passed[i] / max(1, len(completions[i])) for i in range(len(rows))]


def sample_completions(
    model: Any, tokenizer: Any, prompts: Sequence[Any], samples: int, max_new_tokens: int, temperature: float,
    stop_patterns: Sequence[str] = (), batch_size: int = 16, seed: int = 0, progress: bool = False, top_p: float = 1.0,
    stop_strings: Sequence[str] = (),
) -> list[list[str]]:
    """``samples`` completions per prompt (one when ``temperature`` is 0: greedy), each cut at the task's answer line.

    Generation goes through ``rlvr eval``'s batched backend (shared prompt prefix run once, rows leave
    the batch when they stop).
    """
    from tqdm.auto import tqdm

    from rlvr.evaluation.backends import HFBackend, Sampling, render_prompts

    sampling = Sampling(1, 0.0, 1.0, max_new_tokens, seed) if temperature <= 0 else \
        Sampling(samples, temperature, top_p, max_new_tokens, seed)
    backend = HFBackend(model, tokenizer, stop_patterns, batch_size, stop_strings=stop_strings)
    texts = render_prompts(prompts, tokenizer)
    with tqdm(total=len(texts), desc="sampling", unit="prompt", file=sys.stderr, disable=not progress) as bar:
        generations = backend.generate(texts, sampling, bar)
    return [[g.text for g in row] for row in generations]


def apply_filter(dataset: Any, path: str | Path) -> Any:
    """The rows of ``dataset`` whose ``id`` a filter file marks as kept."""
    path = Path(path)
    if not path.is_file():
        raise RlvrError(f"run.difficulty_filter: file not found: {path} (write it with `rlvr filter`).")
    kept = {record["id"] for record in read_jsonl(path, required=("id", "kept")) if record["kept"]}
    if "id" not in dataset.column_names:
        raise RlvrError("run.difficulty_filter needs a task whose rows have an 'id' column.")
    filtered = dataset.filter(lambda row: row["id"] in kept)
    if len(filtered) == 0:
        raise RlvrError(f"run.difficulty_filter: no training prompt of this task is kept by {path}; widen the band.")
    return filtered
