"""Held-out variants of the task (``run.sweep_variants``): items of another difficulty the model never trained
on, each evaluated base vs trained at the recipe's own shot count, on the same test items for both (paired).

A variant's ``task_options`` replace the recipe's task options key by key (a shallow merge: a nested mapping
such as ``generator_config`` is replaced whole, not merged). Everything else is the shot sweep's: split,
decoding, backend, batch size, and (unless the variant gives its own ``items`` or ``max_new_tokens``, for
answers longer than the training task's) the item count and new-token limit. Each (variant, model) is one stage writing
``eval/<label>-variant-<slug>.jsonl``, records tagged ``"variant": name``; they never enter ``samples.jsonl``,
the sweep or its baselines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlvr.config import Recipe
from rlvr.errors import RlvrError
from rlvr.recipe_sections import variant_slug


def variant_settings(recipe: Recipe, sweep: dict[str, Any], training_only: tuple[str, ...]) -> list[dict[str, Any]]:
    """Each variant's evaluation settings: the sweep's, with the merged task options, the task's own shot
    count under them and the variant's items. The merged options are checked by the task here, so a wrong
    option fails before training, as the task's own options fail."""
    from rlvr.evaluation.items import task_for

    settings = []
    for variant in recipe.run.sweep_variants:
        name, own = variant["name"], dict(variant["task_options"])
        where = f"run.sweep_variants '{name}'"
        for key in own:
            if key in training_only:
                raise RlvrError(f"{where}: task option '{key}' shapes the training data only; give the variant "
                                "'items' to choose how many test items it evaluates.")
        options = {**sweep["task_options"], **own}
        try:
            task = task_for(sweep["task"], options)
        except RlvrError as error:
            raise RlvrError(f"{where}: {error}") from None
        settings.append({
            **sweep,
            "variant": name,
            "variant_options": own,
            "task_options": options,
            "shots": [int(getattr(task, "shots", 0) or 0)],
            "items": variant.get("items") or sweep["items"],
            "max_new_tokens": variant.get("max_new_tokens") or sweep["max_new_tokens"],
        })
    return settings


def variant_stage(out: Path, label: str, settings: dict[str, Any]) -> tuple[str, Path]:
    """(stage name, records path) of one model on one variant."""
    stem = f"{label}-variant-{variant_slug(settings['variant'])}"
    return f"eval-{stem}", out / "eval" / f"{stem}.jsonl"


def describe(settings: dict[str, Any]) -> dict[str, Any]:
    """What a variant is, for the plan and the summary: its name, the options it changes, the options
    evaluated (merged), its shot count and items."""
    return {"name": settings["variant"], "task_options": settings["variant_options"],
            "evaluated_task_options": settings["task_options"], "shots": settings["shots"][0],
            "items": settings["items"], "max_new_tokens": settings["max_new_tokens"]}
