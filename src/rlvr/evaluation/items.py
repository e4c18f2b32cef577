"""The items an evaluation runs on: a task's split, its first N items, the same for every configuration."""

from __future__ import annotations

import hashlib
from typing import Any

from rlvr.errors import RlvrError


def check_split(split: str, allow_train_split: bool) -> None:
    from rlvr.tasks.base import check_split as known_split

    known_split(split)
    if split == "train" and not allow_train_split:
        raise RlvrError(
            "refusing to evaluate on the train split (it measures memorisation, not skill); "
            "use the test split, or pass --allow-train-split to do it anyway."
        )


def load_items(task_name: str, options: dict[str, Any], split: str, shots: list[int] | None, limit: int | None) -> dict[int, Any]:
    """{shots: dataset of the first ``limit`` items of ``split`` rendered with that many shots}."""
    from rlvr.tasks import get_task

    if limit is not None and limit < 1:
        raise RlvrError(f"--limit must be a positive integer, got {limit}.")
    if shots is None:
        shots = [get_task(task_name, options).shots]
    if not shots:
        raise RlvrError("give at least one shot count, e.g. --shots 0,8.")
    items: dict[int, Any] = {}
    for count in shots:
        task = get_task(task_name, {**options, "shots": count})
        dataset = task.load(split)
        if len(dataset) == 0:
            raise RlvrError(f"{task_name} split '{split}' is empty: check --data.")
        if limit is not None and limit < len(dataset):
            dataset = dataset.select(range(limit))
        items[count] = dataset
    return items


def prompt_hash(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:12]
