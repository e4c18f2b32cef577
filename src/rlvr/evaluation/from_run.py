"""Evaluate a trained adapter the way its run was judged: settings read from the run's ``recipe.yaml``.

``rlvr train`` writes ``recipe.yaml`` beside ``adapter/``. When ``rlvr eval`` is
given ``--adapter RUN_DIR/adapter``, it takes from that recipe the task and its
options (shots, generator options, chat, ...), the base model and its chat format, the number of
test items (``run.test_items``), the generation limit and batch size of the
run's evaluation, the limits on the user's code and the sandbox policy (all resolved by :mod:`rlvr.run_parts`, as
training resolved them), and the precision it trained in (``summary.json``'s ``precision``: bf16 weights stay
bf16), so base vs trained shows the gain the run printed. Anything
given on the command line overrides the recipe, and the command says which
settings it took from where.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError

RECIPE_FILE = "recipe.yaml"


@dataclass
class RunSettings:
    """What ``rlvr eval`` takes from a run: each field None when the recipe does not say."""

    source: Path
    task: str
    task_options: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    limit: int | None = None
    max_new_tokens: int | None = None
    batch_size: int | None = None
    limits: dict[str, Any] = field(default_factory=dict)  # run.user_code_timeout / task_load_timeout, as the recipe says
    dtype: str | None = None  # the precision the run trained in (summary.json), else the recipe's model.dtype
    chat_format: str | None = None  # model.chat_format: put on every model evaluated without the run's tokenizer
    parts: Any = None  # rlvr.run_parts.RunParts of the run's recipe: its limits and sandbox policy are applied
    tools: dict[str, Any] = field(default_factory=dict)  # the run's task.tools, tool_choice, turn limit and template


def recipe_of(adapter: str) -> Path | None:
    """The ``recipe.yaml`` of the run an adapter directory belongs to (beside it or inside it), if any."""
    path = Path(adapter).expanduser()
    for candidate in (path.parent / RECIPE_FILE, path / RECIPE_FILE):
        if candidate.is_file():
            return candidate
    return None


def read_settings(recipe_path: Path) -> RunSettings:
    from rlvr.config import load_recipe
    from rlvr.run_parts import build_parts

    try:
        recipe = load_recipe(str(recipe_path))
    except RlvrError as error:
        raise RlvrError(f"{recipe_path} is not a recipe rlvr train wrote ({error}); give --task and options.") from None
    parts = build_parts(recipe)
    run = recipe.run
    return RunSettings(
        source=recipe_path,
        task=recipe.task_name,
        task_options=recipe.task_options,
        model=recipe.model.name_or_path,
        limit=run.test_items or None,
        max_new_tokens=run.eval_max_new_tokens,
        batch_size=run.eval_batch_size,
        limits={"user_code_timeout": parts.user_code_timeout, "task_load_timeout": parts.task_load_timeout},
        dtype=trained_dtype(recipe_path.parent) or recipe.model.dtype,
        chat_format=parts.chat_format,
        parts=parts,
        tools={"tools": recipe.tools, "tool_choice": recipe.tool_choice, "tool_turns": parts.max_tool_turns,
               "tool_template": recipe.model.tool_template} if recipe.tools else {},
    )


def trained_dtype(run_dir: Path) -> str | None:
    """The weights' dtype the run trained in, as its summary.json records it (``precision.dtype``)."""
    import json

    try:
        precision = json.loads((run_dir / "summary.json").read_text(encoding="utf-8")).get("precision") or {}
    except (OSError, ValueError, AttributeError):
        return None
    return precision.get("dtype") if isinstance(precision, dict) else None


def settings_from_runs(adapters: list[str]) -> RunSettings | None:
    """The settings of the runs behind ``adapters`` (None when none has a recipe.yaml); runs must agree on the task."""
    found = [read_settings(path) for path in (recipe_of(a) for a in adapters if a and a.lower() != "none") if path]
    if not found:
        return None
    first = found[0]
    for other in found[1:]:
        if (other.task, other.task_options) != (first.task, first.task_options):
            raise RlvrError(
                f"the adapters come from runs with different task settings ({first.source} vs {other.source}); "
                "give --task and its options explicitly."
            )
    return first


def describe(settings: RunSettings, taken: list[str]) -> str:
    """One line saying what was read from the run's recipe."""
    return f"rlvr eval: from {settings.source}: {', '.join(taken)} (command-line options override these)."


#: Defaults of `rlvr eval` where neither the command line nor a run's recipe says.
DEFAULTS = {"task": "gsm8k", "max_new_tokens": 256, "batch_size": 16, "dtype": "auto"}


def merge(settings: RunSettings | None, given: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Command-line values (``given``: task, task_options, models, limit, max_new_tokens, batch_size, dtype; None =
    not given) completed from the run's settings, then from ``DEFAULTS``. Returns the values and what came from the
    run.
    """
    values = dict(given)
    taken: list[str] = []
    if settings is None:
        for key, default in DEFAULTS.items():
            values[key] = values.get(key) or default
        return values, taken
    if values.get("task") in (None, settings.task):
        values["task"] = settings.task
        values["task_options"] = {**settings.task_options, **(values.get("task_options") or {})}
        shown = ", ".join(f"{k}={v}" for k, v in settings.task_options.items() if k not in (given.get("task_options") or {}))
        taken.append(f"task {settings.task} ({shown})")
    if settings.chat_format:
        values["chat_format"] = settings.chat_format
        taken.append(f"chat template {settings.chat_format}")
    if settings.tools and not given.get("no_tools"):
        values.update(settings.tools)
        taken.append(f"tools {', '.join(map(str, settings.tools['tools']))} (tool_choice {settings.tools['tool_choice']}, "
                     f"at most {settings.tools['tool_turns']} tool turns; --no-tools: without them)")
    for key, label in (("limit", "up to {} test items"), ("max_new_tokens", "at most {} new tokens"), ("batch_size", "batch {}"),
                       ("dtype", "{} weights")):
        if values.get(key) is None and getattr(settings, key) is not None:
            values[key] = getattr(settings, key)
            taken.append(label.format(values[key]))
    if not values.get("models") and settings.model:
        values["models"] = [settings.model]
        taken.append(f"model {settings.model}")
    for key, default in DEFAULTS.items():
        values[key] = values.get(key) or default
    return values, taken
