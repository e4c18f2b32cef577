"""What a finished run leaves (:class:`TrainResult`) and writes in its output directory: the adapter (or model) saved whole or not at all, the merged
model when asked, ``recipe.yaml``, and ``summary.json`` last, its presence saying the run finished."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr import atomic, faults, runlock
from rlvr.config import Recipe
from rlvr.errors import RlvrError


@dataclass
class TrainResult:
    output_dir: Path
    adapter_dir: Path | None
    merged_dir: Path | None
    steps: int
    seconds: float
    rewards: list[float] = field(default_factory=list)  # mean reward per logged step
    log_history: list[dict[str, Any]] = field(default_factory=list)
    evaluations: list[dict[str, Any]] = field(default_factory=list)  # validation diagnostics (run.eval_items)
    shared_prompt: dict[str, str] = field(default_factory=dict)  # path of rollouts and loss (shared prompt or TRL's)
    test: dict[str, Any] | None = None  # the verdict on held-out test items (run.test_items): rlvr.training.verdict
    overlap: dict[str, Any] | None = None  # questions shared between the task's splits (tasks.splits.overlap_report)
    kept_best: Any = None  # rlvr.training.best.KeepBest when run.keep_best chose the weights kept
    probe: dict[str, Any] | None = None  # the base model probed before training (run.probe_items): rlvr.training.probe
    precision: dict[str, Any] | None = None  # the weights' dtype and why (rlvr.precision.Precision.summary)
    prompt_selection: dict[str, Any] | None = None  # which prompts were drawn and what they gave (prompt_selection.py)
    curriculum: dict[str, Any] | None = None  # levels, the level reached, each promotion (training/curriculum.py)

    @property
    def reward_start(self) -> float | None:
        return _mean(self.rewards[: _window(self.rewards)])

    @property
    def reward_end(self) -> float | None:
        return _mean(self.rewards[-_window(self.rewards) :])


def _window(values: list[float]) -> int:
    return max(1, len(values) // 4)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def retire_summary(output_dir: Path) -> None:
    """An earlier run's summary.json would claim this run finished: renamed until this one writes its own."""
    summary = output_dir / "summary.json"
    if summary.is_file() and runlock.main_rank():
        os.replace(summary, output_dir / "summary.previous.json")
        print(f"rlvr: {output_dir} held a finished run: its summary is now summary.previous.json.",
              file=sys.stderr, flush=True)


def save_outputs(trainer: Any, recipe: Recipe) -> tuple[Path | None, Path | None]:
    output_dir = recipe.output_dir
    adapter_dir = output_dir / ("adapter" if recipe.model.lora else "model")
    _save_aside(trainer, adapter_dir)
    merged_dir = None
    if recipe.run.merge_adapter and recipe.model.lora and trainer.accelerator.is_main_process:
        from rlvr.lora_merge import merge_adapter

        # Into a fresh full-precision base, never the trained model (4-bit under QLoRA, sharded under ZeRO-3).
        model = recipe.model
        merged_dir = merge_adapter(adapter_dir, model.name_or_path, model.dtype, output_dir / "merged", model.chat_format)
    trainer.accelerator.wait_for_everyone()
    return adapter_dir, merged_dir


def _save_aside(trainer: Any, directory: Path) -> None:
    """Save the adapter (or model) beside ``directory`` and rename it into place: complete or absent.

    Every process calls ``save_model`` (ZeRO-3 gathers); the main one writes and swaps. All processes
    save into the same path, named without a process id so the ranks agree on it.
    """
    main = trainer.accelerator.is_main_process
    building = directory.with_name(directory.name + ".partial")
    if main:
        shutil.rmtree(building, ignore_errors=True)
    trainer.accelerator.wait_for_everyone()
    try:
        trainer.save_model(str(building))
        if main:
            trainer.processing_class.save_pretrained(str(building))
            faults.point("adapter-save")
            atomic.swap_in(building, directory)
    except Exception as error:
        if not atomic.out_of_space(error, directory.parent):
            raise
        shutil.rmtree(building, ignore_errors=True)
        raise RlvrError(f"disk full while saving {directory}: nothing was replaced (an earlier one, if any, is "
                        "intact) and the checkpoints are kept; free space, then rerun with --resume.") from None


def write_summary(result: TrainResult, recipe: Recipe, resumed_from: Path | None = None) -> None:
    summary = {
        "recipe": recipe.name,
        "headline": "test" if result.test else "reward (no run.test_items: no held-out verdict)",
        "steps": result.steps,
        "seconds": round(result.seconds, 1),
        "reward_start": result.reward_start,
        "reward_end": result.reward_end,
        "rewards": result.rewards,
        "adapter_dir": str(result.adapter_dir) if result.adapter_dir else None,
        "merged_dir": str(result.merged_dir) if result.merged_dir else None,
        "test": result.test,
        "overlap": result.overlap,
        "kept_best": result.kept_best.summary() if result.kept_best else None,
        "evaluations": [{k: v for k, v in e.items() if k != "verdicts"} for e in result.evaluations],
        "shared_prompt": result.shared_prompt,
        "precision": result.precision,
    }
    if resumed_from:
        summary["resumed_from"] = str(resumed_from)
    if result.probe:
        summary["probe"] = result.probe
    if result.prompt_selection:
        summary["prompt_selection"] = result.prompt_selection
    if result.curriculum:
        summary["curriculum"] = result.curriculum
    from rlvr.sandbox import isolation_used

    if isolation_used() is not None:  # code tasks: the sandbox isolation the programs ran under (the weakest)
        summary["sandbox"] = isolation_used()
    result.output_dir.mkdir(parents=True, exist_ok=True)
    atomic.write_text(result.output_dir / "recipe.yaml", _yaml(recipe.to_dict()))
    faults.point("summary-write")
    atomic.write_json(result.output_dir / "summary.json", summary)  # last: its presence says the run finished


def _yaml(data: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False)
