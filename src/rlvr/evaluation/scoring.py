"""Scoring completions into evaluation records: the task judges, the training rewards are shown beside.

Whether a completion is correct, its score, the answer extracted from it and the gold are the task's
verdict (:meth:`rlvr.tasks.base.Task.judge`: math the answer verifier, code every test passing in the
sandbox, keywords full rubric credit). The task's reward functions run too, so each record also shows
what training would have paid for it: the raw components and their weighted total. Only the completion is scored, never
the prompt.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from rlvr.rewards.base import completion_text


def prompt_hash(prompt: Any) -> str:
    """The first 12 hex digits of the prompt's sha256 (chat prompts: of their text)."""
    text = prompt if isinstance(prompt, str) else repr(prompt)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def question_of(row: Mapping[str, Any]) -> str:
    """The item's question or problem statement: its ``question`` column, else the prompt's (last user) text."""
    question = row.get("question")
    if isinstance(question, str) and question:
        return question
    prompt = row.get("prompt")
    if isinstance(prompt, list):
        users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        return completion_text(users[-1:] or prompt)
    return prompt if isinstance(prompt, str) else ""


#: What a conversation with tools adds to its record (rlvr.tools.turns): calls, failed calls, tool turns, whether the
#: turn limit cut it, and the whole conversation after the prompt (the ``completion`` is its last turn).
TOOL_FIELDS = ("tool_calls", "tool_errors", "tool_turns", "cut_by_turn_limit", "transcript")


def score(task: Any, rows: Sequence[Mapping[str, Any]], completions: Sequence[Any], meta: Sequence[Mapping[str, Any]],
          prompts: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """One record per completion: ``rows[i]`` is the item completion ``i`` answers, ``meta[i]`` its
    ``model``, ``shots``, ``sample`` (None: greedy or as given), ``completion_tokens`` and ``stopped``;
    ``prompts[i]`` the prompt as the model saw it (default: the row's prompt)."""
    if not completions:
        return []
    outcomes = task.judge(list(completions), list(rows))
    components = reward_components(task, rows, completions)
    weights = dict(zip(components, task.reward_weights(), strict=True))
    records = []
    for index, (row, completion, outcome) in enumerate(zip(rows, completions, outcomes, strict=True)):
        parts = {name: values[index] for name, values in components.items()}
        info = meta[index]
        records.append({
            "id": str(row.get("id", index)),
            "shots": info.get("shots"),
            "model": info.get("model", ""),
            "sample": info.get("sample"),
            "prompt_hash": prompt_hash(prompts[index] if prompts is not None else row.get("prompt", "")),
            "question": question_of(row),
            "completion": completion_text(completion),
            "extracted_answer": outcome.answer,
            "ground_truth": outcome.gold,
            "correct": bool(outcome.correct),
            "score": float(outcome.score),
            "well_formed": outcome.well_formed,
            "rewards": parts,
            "reward": sum(weights[name] * value for name, value in parts.items()),  # weighted as in training
            "details": outcome.details,
            "completion_tokens": info.get("completion_tokens"),
            "stopped": info.get("stopped"),
            **{key: value for key, value in info.items() if key in TOOL_FIELDS},  # a conversation with tools
        })
    return records


def reward_components(task: Any, rows: Sequence[Mapping[str, Any]], completions: Sequence[Any]) -> dict[str, list[float]]:
    """{reward name: raw score per completion} from the task's own reward functions."""
    columns = {name: [row.get(name) for row in rows] for name in {k for row in rows for k in row} if name != "prompt"}
    components = {}
    for func in task.reward_functions():
        try:
            components[func.__name__] = [float(v) for v in func(list(completions), **columns)]
        finally:
            scorer = getattr(func, "scorer", None)  # a code reward's sandbox workers: not left running
            if scorer is not None:
                scorer.close()
    return components
