"""The experiment's training stage: the settings that key it, whether it already finished, and running it.

Training goes into ``DIR/train``; an interrupted run resumes from its latest checkpoint when it started with
the same settings, and a directory holding a run with other settings is refused rather than mixed.
"""

from __future__ import annotations

import time
from typing import Any

from rlvr.config import Recipe
from rlvr.errors import RlvrError
from rlvr.experiment.stages import StageLog


def recipe_settings(recipe: Recipe) -> dict[str, Any]:
    """The recipe's settings that make up the training stage's key."""
    data = recipe.to_dict()
    # Not training settings: where it goes, and the held-out variants (added to a finished experiment, they
    # must not make its training stale; the key is unchanged from before variants existed).
    data["run"] = {k: v for k, v in data["run"].items() if k not in ("output_dir", "sweep_variants")}
    return data


def train_done(log: StageLog, key: str, recipe: Recipe) -> bool:
    """Whether training finished before with these settings; an error when ``recipe.output_dir`` holds a run
    started with other settings (training again would mix the two)."""
    adapter = recipe.output_dir / ("adapter" if recipe.model.lora else "model")
    if log.done("train", key, [recipe.output_dir / "summary.json", adapter]):
        return True
    started = log.entries.get("train-started", {}).get("key")
    if started is not None and started != key and recipe.output_dir.exists() and any(recipe.output_dir.iterdir()):
        raise RlvrError(
            f"{recipe.output_dir} holds a training run with other settings; give another --output, "
            f"or delete {recipe.output_dir} to train again."
        )
    return False


def run_training(log: StageLog, key: str, recipe: Recipe) -> None:
    """Train (resuming from the latest checkpoint of a run started with the same settings) and log the stage."""
    from rlvr.checkpoints import latest_checkpoint
    from rlvr.training.run import train

    resume = latest_checkpoint(recipe.output_dir) is not None and log.recorded_key("train-started") == key
    log.finish("train-started", key, 0.0)
    began = time.time()
    result = train(recipe, resume=resume)
    log.finish("train", key, time.time() - began, steps=result.steps, resumed=bool(resume))
