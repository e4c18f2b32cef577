"""The items an evaluation runs on: a task's split, its first N items, the same for every configuration."""

from __future__ import annotations

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


def task_for(task_name: str, options: dict[str, Any], shots: int | None = None) -> Any:
    """The task with ``options``, and ``shots`` exemplars where the task takes them (tasks without: 0 only)."""
    from rlvr.tasks import get_task, task_class

    if task_class(task_name).takes_shots:
        return get_task(task_name, options if shots is None else {**options, "shots": shots})
    if shots:
        raise RlvrError(f"task '{task_name}' takes no exemplars: drop --shots (or give --shots 0).")
    return get_task(task_name, options)


def shot_counts(task_name: str, options: dict[str, Any], shots: list[int] | None) -> list[int]:
    """The shot counts to evaluate: as given, else the task's own (0 for tasks without exemplars)."""
    if shots is not None and not shots:
        raise RlvrError("give at least one shot count, e.g. --shots 0,8.")
    if shots is None:
        return [getattr(task_for(task_name, options), "shots", 0)]
    for count in shots:
        task_for(task_name, options, count)  # a count the task refuses fails before any item loads
    return list(shots)


def load_items(task_name: str, options: dict[str, Any], split: str, shots: list[int] | None, limit: int | None,
               wrap: Any = None) -> dict[int, Any]:
    """{shots: dataset of the first ``limit`` items of ``split`` rendered with that many shots}; ``wrap``: what the
    task becomes first (e.g. the task with tools, whose exemplars call them)."""
    if limit is not None and limit < 1:
        raise RlvrError(f"--limit must be a positive integer, got {limit}.")
    items: dict[int, Any] = {}
    for count in shot_counts(task_name, options, shots):
        task = task_for(task_name, options, count)
        dataset = (wrap(task) if wrap else task).load(split)
        if len(dataset) == 0:
            raise RlvrError(f"{task_name} split '{split}' is empty: check --data.")
        if limit is not None and limit < len(dataset):
            dataset = dataset.select(range(limit))
        items[count] = dataset
    return items
