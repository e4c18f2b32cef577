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

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError
from rlvr.jsonl import read_jsonl
from rlvr.training.health import ACCURACY_REWARDS


@dataclass
class Band:
    low: float = 0.1
    high: float = 0.9

    def __post_init__(self) -> None:
        if not 0.0 <= self.low <= self.high <= 1.0:
            raise RlvrError(f"difficulty band must satisfy 0 <= low <= high <= 1, got [{self.low}, {self.high}].")

    def keeps(self, rate: float) -> bool:
        return self.low <= rate <= self.high


def pass_rates(
    rows: list[dict[str, Any]], completions: list[list[str]], reward_funcs: list[Callable[..., list[float]]]
) -> list[float]:
    """Share of each row's completions that an accuracy reward (correctness, ...) scores above 0."""
    judges = [f for f in reward_funcs if f.__name__ in ACCURACY_REWARDS]
    if not judges:
        names = ", ".join(f.__name__ for f in reward_funcs)
        raise RlvrError(f"difficulty filtering needs an accuracy reward ({', '.join(ACCURACY_REWARDS)}); the recipe has: {names}.")
    rates = []
    for row, texts in zip(rows, completions, strict=False):
        columns = {k: [v] * len(texts) for k, v in row.items() if k != "prompt"}
        passed = [False] * len(texts)
        for judge in judges:
            passed = [p or (s or 0) > 0 for p, s in zip(passed, judge(texts, **columns), strict=False)]
        rates.append(sum(passed) / max(1, len(texts)))
    return rates


def sample_completions(
    model: Any, tokenizer: Any, prompts: list[Any], samples: int, max_new_tokens: int, temperature: float,
    stop_patterns: list[str] | None = None, greedy: bool = False,
) -> list[list[str]]:
    """``samples`` sampled completions per prompt (greedy: one), each cut at the task's answer line."""
    import torch

    from rlvr.evaluation.stopping import AnswerStop

    stop = AnswerStop(tokenizer, stop_patterns) if stop_patterns else None
    results = []
    for prompt in prompts:
        text = prompt if isinstance(prompt, str) else tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
        inputs = tokenizer(text, return_tensors="pt")
        kwargs: dict[str, Any] = dict(max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id)
        if greedy:
            kwargs.update(do_sample=False, num_return_sequences=1)
        else:
            kwargs.update(do_sample=True, temperature=temperature, num_return_sequences=samples)
        with torch.no_grad():
            if stop is not None:
                with stop.installed(model):
                    output = model.generate(**inputs, **kwargs)
            else:
                output = model.generate(**inputs, **kwargs)
        generated = output[:, inputs["input_ids"].shape[1] :].tolist()
        cut = [stop.cut(ids)[0] for ids in generated] if stop is not None else generated
        results.append([tokenizer.decode(ids, skip_special_tokens=True) for ids in cut])
    return results


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
