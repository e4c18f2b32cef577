"""Training through a task's curriculum levels (reasoning-gym's ``curriculum``: :mod:`rlvr.tasks.curriculum_levels`).

The train split holds every level's rows (a ``level`` column; a mixture's rows name their dataset in
``source_dataset``). Only the rows at each dataset's current level are drawn: the levels below were passed (their
groups would mostly be all right, no signal) and the ones above are not yet reached. Each judged group of a row at
its dataset's current level adds its pass rate to that dataset's window; when the window holds
``curriculum_window`` groups and their mean pass rate reaches ``curriculum_threshold``, the dataset moves up one
level (never past its target, the last level) and the window starts again. The sampler
(:class:`rlvr.training.prompt_selection.OnlineSampler`, TRL's layout) draws each generation batch as the loader
reaches it, one batch ahead of the rollouts, so a promotion shows from the batch after next. Online selection
weighs within the eligible rows.

Per step: ``curriculum/level`` (a mixture: the mean of its datasets' levels), ``curriculum/top`` and
``curriculum/pass_rate`` (the current window's), per dataset of a mixture ``curriculum/<dataset>/level`` and
``/pass_rate``; in the step line as ``level 1/4 58%``. ``summary.json`` → ``curriculum``: the levels, the target
level and the level reached per dataset, each promotion's step, and the validation accuracy (``run.eval_items``) of
the evaluation nearest each promotion. The levels are not kept in checkpoints: a resumed run starts again at level 0.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Sequence
from typing import Any

import torch
from transformers import TrainerCallback

from rlvr.errors import RlvrError
from rlvr.training.prompt_estimates import group_passes


class Curriculum:
    """Each dataset's current level, its window of recent pass rates, and which rows may be drawn now."""

    def __init__(self, levels: Sequence[int], datasets: Sequence[str], tops: dict[str, int], threshold: float,
                 window: int, group_size: int):
        self.levels = torch.tensor(list(levels), dtype=torch.long)
        self.names = sorted(set(datasets) | set(tops))
        index = {name: i for i, name in enumerate(self.names)}
        self.datasets = torch.tensor([index[name] for name in datasets], dtype=torch.long)
        self.tops, self.threshold, self.group_size = dict(tops), threshold, group_size
        self.present = {name: sorted(set(self.levels[self.datasets == index[name]].tolist())) for name in self.names}
        self.current = {name: (self.present[name] or [0])[0] for name in self.names}
        self.recent = {name: deque(maxlen=window) for name in self.names}
        self.promotions: list[dict[str, Any]] = []
        self.step = 0  # the optimizer step whose rollouts are being observed (set by the trainer's hook)
        self._mask: torch.Tensor | None = None

    def eligible(self) -> torch.Tensor:
        """Rows at their dataset's current level (a float mask, the sampler's weights)."""
        if self._mask is None:
            current = torch.tensor([self.current[name] for name in self.names], dtype=torch.long)
            self._mask = (self.levels == current[self.datasets]).double()
        return self._mask

    def observe(self, inputs: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]], task: Any) -> None:
        """One rollout's groups (``rows`` judged, in the order of ``inputs``) into their dataset's window."""
        for group, (right, total) in enumerate(group_passes(rows, task, self.group_size)):
            row = inputs[group * self.group_size]
            name = str(row.get("source_dataset", self.names[0])) if len(self.names) > 1 else self.names[0]
            if name in self.current and row.get("level") == self.current[name] and total:
                self.recent[name].append(right / total)
                self._maybe_promote(name)

    def _maybe_promote(self, name: str) -> None:
        window = self.recent[name]
        above = [level for level in self.present[name] if level > self.current[name]]
        if not above or len(window) < (window.maxlen or 0) or sum(window) / len(window) < self.threshold:
            return
        passed = sum(window) / len(window)
        self.current[name] = above[0]
        window.clear()
        self._mask = None
        self.promotions.append({"dataset": name, "level": above[0], "step": self.step, "pass_rate": round(passed, 4)})

    def pass_rate(self, name: str) -> float | None:
        window = self.recent[name]
        return sum(window) / len(window) if window else None

    def metrics(self) -> dict[str, float]:
        """This step's ``curriculum/*`` values (pass rates only where the window holds a group)."""
        values = {"curriculum/level": sum(self.current.values()) / len(self.names),
                  "curriculum/top": sum(self.tops.values()) / len(self.names)}
        rates = [r for r in (self.pass_rate(name) for name in self.names) if r is not None]
        if rates:
            values["curriculum/pass_rate"] = sum(rates) / len(rates)
        if len(self.names) > 1:
            for name in self.names:
                values[f"curriculum/{name}/level"] = float(self.current[name])
                if self.pass_rate(name) is not None:
                    values[f"curriculum/{name}/pass_rate"] = self.pass_rate(name)
        return values

    def summary(self, evaluations: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
        """``summary.json`` → ``curriculum``."""
        promotions = []
        for promotion in self.promotions:
            nearest = min(evaluations, key=lambda e: abs(e["step"] - promotion["step"]), default=None)
            validation = ({"step": nearest["step"], "accuracy": nearest.get("accuracy")} if nearest
                          else "not measured (run.eval_items: 0)")
            promotions.append({**promotion, "validation": validation})
        return {
            "threshold": self.threshold,
            "window": self.recent[self.names[0]].maxlen,
            "datasets": {name: {"levels": self.tops[name] + 1, "target_level": self.tops[name],
                                "level_reached": self.current[name]} for name in self.names},
            "promotions": promotions,
        }


def install(trainer: Any, selection: Any, quiet: bool = False) -> Curriculum | None:
    """The task's curriculum for ``trainer`` on ``selection`` (its prompt selection), with its callback; the task's
    one line (on, or off and why) at start."""
    task = trainer.task
    plans = task.level_plans() if hasattr(task, "level_plans") else None
    note = getattr(task, "curriculum_note", None)
    if note and not quiet and trainer.accelerator.is_main_process:
        print(note, flush=True)
    if not plans:
        return None
    dataset = trainer.train_dataset
    if selection is None or "level" not in getattr(dataset, "column_names", ()):
        raise RlvrError("the task's curriculum needs a single process and its train split as a datasets.Dataset "
                        "with a level column; set the task's curriculum: off.")
    names = dataset["source_dataset"] if len(plans) > 1 else [next(iter(plans))] * len(dataset)
    curriculum = Curriculum(dataset["level"], names, {name: plan.top for name, plan in plans.items()},
                            task.curriculum_threshold, task.curriculum_window, trainer.num_generations)
    trainer.add_callback(CurriculumCallback(trainer, curriculum))
    return curriculum


def first_level(dataset: Any) -> Any:
    """The rows of ``dataset`` (a train split with a ``level`` column) at each dataset's lowest level: those a
    curriculum run draws first (what ``rlvr probe`` measures)."""
    names = dataset["source_dataset"] if "source_dataset" in dataset.column_names else [""] * len(dataset)
    lowest: dict[str, int] = {}
    for name, level in zip(names, dataset["level"], strict=True):
        lowest[name] = min(level, lowest.get(name, level))
    return dataset.select([i for i, (name, level) in enumerate(zip(names, dataset["level"], strict=True))
                           if level == lowest[name]])


class CurriculumCallback(TrainerCallback):
    """The step being rolled out, and at each step's end the ``curriculum/*`` metrics in TRL's lists; a promotion
    is said in one line."""

    def __init__(self, trainer: Any, curriculum: Curriculum):
        self.trainer, self.curriculum = trainer, curriculum
        self._said = 0

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.curriculum.step = state.global_step + 1

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        metrics = self.trainer.metric_lists["train"]
        for key, value in self.curriculum.metrics().items():
            metrics[key].append(value)
        for promotion in self.curriculum.promotions[self._said:]:
            if state.is_world_process_zero:
                print(f"rlvr: curriculum: {promotion['dataset']} up to level {promotion['level']} at step "
                      f"{promotion['step']} ({promotion['pass_rate']:.0%} over the last groups).", file=sys.stderr,
                      flush=True)
        self._said = len(self.curriculum.promotions)
