"""Recipes: one YAML file per experiment, validated into a :class:`Recipe`.

A recipe has five sections (see ``docs/recipes.md`` for every field)::

    name: cpu-default            # used for the output directory and the MLflow run
    model:  ...                  # ModelConfig (rlvr.recipe_sections): which model, LoRA / QLoRA
    task:   {name: arithmetic, ...}   # the task and its options (validated by the task)
    rewards: [{name: format, weight: 0.5}, ...]   # reward functions by name (default: the task's)
    grpo:   {learning_rate: ..., ...}  # any field of TRL's GRPOConfig, type-checked (rlvr.recipe_sections)
    run:    ...                  # RunConfig: output, tracking, merge, threads

``base: NAME`` (a built-in recipe) or ``base: PATH`` (a recipe file) at the top builds on another recipe, key by
key (:mod:`rlvr.recipe_base`, which also gives a recipe with no ``grpo`` section the CPU default's).
``--set section.key=value`` overrides any field; values are parsed as YAML.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlvr.config_utils import build_dataclass, check_keys
from rlvr.errors import RlvrError
from rlvr.recipe_base import (  # noqa: F401 (DEFAULT_RECIPE, builtin_recipes, read_yaml: imported from here too)
    DEFAULT_RECIPE,
    RECIPES_DIR,
    SECTIONS,
    Resolved,
    builtin_recipes,
    read_yaml,
    resolve,
)
from rlvr.recipe_sections import ModelConfig, check_grpo_types, check_run_section, grpo_fields
from rlvr.registry import closest


@dataclass
class RunConfig:
    #: Where checkpoints, the adapter and the summary go; '{name}' is the recipe name.
    output_dir: str = "outputs/{name}"
    #: MLflow tracking URI; a path ending in .db is a local SQLite store (created on first use).
    tracking_uri: str = "mlflow.db"
    #: MLflow experiment name.
    experiment: str = "rlvr"
    #: Also save the base model with the LoRA adapter merged in (output_dir/merged).
    merge_adapter: bool = False
    #: CPU threads for torch (None: torch's default).
    threads: int | None = None
    #: The run's verdict: the first N TEST items, evaluated greedily with the training prompt before and after
    #: training; the gain, its 95% interval and McNemar p head the summary (0: no test evaluation).
    test_items: int = 0
    #: Validation items evaluated (greedy, same scoring as `rlvr eval`) before training and at the end; 0: none.
    eval_items: int = 0
    #: Also evaluate every N steps (0: only before and after training).
    eval_every_steps: int = 0
    #: Split the evaluation items come from: validation (held out from training) or test.
    eval_split: str = "validation"
    #: Keep the best weights by validation accuracy: restored after the last step, before the test verdict and
    #: saving (rlvr.training.best). Needs eval_items and eval_every_steps; step 0 (the base model) counts.
    keep_best: bool = False
    #: New-token limit for evaluation completions.
    eval_max_new_tokens: int = 32
    #: Completions generated together during evaluation.
    eval_batch_size: int = 16

    #: Health: write an advantage histogram (health/advantages.jsonl, MLflow artifact) every N steps (0: never).
    health_histogram_steps: int = 5
    #: Health: print a warning when a run looks unhealthy for this many logged steps in a row (0: no warnings).
    health_patience: int = 3
    #: Samples: write the latest batch (prompts, completions, answers, rewards, advantages) every N steps (0: never).
    sample_steps: int = 5
    #: Samples: completions written per sampled step (None: the whole batch).
    sample_rows: int | None = 16
    #: Groups whose completions all earn the same reward: keep (TRL), drop (out of the loss), resample (DAPO).
    zero_variance_groups: str = "keep"
    #: With zero_variance_groups=resample: extra rollouts per step at most to replace such groups.
    resample_attempts: int = 2
    #: Clamp advantages to [-x, x] (None: no clipping), bounding the pull of one lucky sample in a group.
    advantage_clip: float | None = None
    #: JSONL of prompt ids to train on (from `rlvr filter`); other training rows are left out (None: all).
    difficulty_filter: str | None = None
    #: Which training prompts each step draws: uniform (TRL's seeded shuffle) or online (by per-prompt pass estimates
    #: from the rollouts: prompts likely to give groups with some right and some wrong completions first;
    #: rlvr.training.prompt_selection). One process only.
    prompt_selection: str = "uniform"
    #: Online: the drawing weight, relative to a prompt likely to give signal (1), below which a prompt always right
    #: or always wrong never falls, so it is revisited and its estimate stays honest; in (0, 1].
    prompt_selection_revisit: float = 0.05
    #: Online: seed the estimates from a `rlvr filter` JSONL (pass_rate per id) or a `rlvr probe` probe.json
    #: (None: run.difficulty_filter's file where set, else no prior counts).
    prompt_selection_prior: str | None = None
    #: Before training (fresh runs), probe the base model on the first N training prompts as `rlvr probe` does and
    #: print one line with the verdict (too long, format-bound, at chance, too hard, too easy, constant-prone,
    #: learnable), also in summary.json under probe (0: no probe).
    probe_items: int = 0
    #: Training rollouts stop at the task's answer line; false: only at EOS or grpo.max_completion_length (plain TRL).
    stop_at_answer: bool = True
    #: Keep only the last N tokens of each training prompt (cut from the left, as trl 0.18's max_prompt_length,
    #: default 512, did); None: whole prompts.
    max_prompt_tokens: int | None = None
    #: Most completions per piece of the loss (rlvr.training.chunked_loss): a prompt group with more is split, each
    #: piece back-propagated on its own, its prompt run once for all pieces on the shared-prompt path (exact; less
    #: memory). 0: whole groups. auto: 2 with float32 weights, 4 with bf16 or float16 ones (their activations are
    #: half the size: the same memory, half the passes; rlvr.precision).
    loss_chunk_rows: int | str = 0
    #: Seconds one call of the user's code may take (rlvr.timeouts): a reward by import path or plug-in (one call
    #: scores a whole batch of completions: the run stops with one line naming it) or a checker (one completion: that
    #: item is judged wrong and counted). 0 or null: no limit.
    user_code_timeout: float | None = 60.0
    #: Seconds a plug-in task's load(split) may take (the run stops with one line naming it). 0 or null: no limit.
    task_load_timeout: float | None = 600.0
    #: Code tasks: accept weaker sandbox isolation where this machine allows no more (no minimal root, a missing
    #: namespace, seccomp filter or memory cgroup); false: such a run stops with one line naming what is missing
    #: and how to allow it. True sets RLVR_SANDBOX_ALLOW_WEAKER=1 for the run (docs/code-rewards.md).
    sandbox_allow_weaker: bool = False
    #: `rlvr experiment`: shot counts evaluated for the base and the trained model.
    sweep_shots: list[int] = dataclasses.field(default_factory=lambda: [0, 2, 4, 8])
    #: `rlvr experiment`: first N test items evaluated at every shot count (the same items for both models).
    sweep_items: int = 200
    #: `rlvr experiment`: held-out variants of the task, never trained on, each evaluated base vs trained at the
    #: recipe's shot count: [{name: ..., task_options: {...}, items: N, max_new_tokens: N}] (task_options merged
    #: over the task's; items and max_new_tokens default to the sweep's: longer answers may need more tokens).
    sweep_variants: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        check_run_section(self)


@dataclass
class Recipe:
    name: str
    model: ModelConfig
    task: dict[str, Any]
    rewards: list[dict[str, Any]]
    grpo: dict[str, Any]
    run: RunConfig
    description: str = ""
    source: str = ""  # where it was loaded from
    #: Lines ``rlvr train`` and ``rlvr experiment`` print on loading (e.g. the CPU default's grpo taken).
    notes: list[str] = field(default_factory=list)

    @property
    def task_name(self) -> str:
        return self.task["name"]

    @property
    def task_options(self) -> dict[str, Any]:
        """The task's own options: everything in ``task`` but its name and the tools (:attr:`tools`)."""
        return {k: v for k, v in self.task.items() if k not in ("name", "tools", "tool_choice")}

    @property
    def tools(self) -> list[Any]:
        """``task.tools``: the tools the model may call (rlvr.tools.specs), [] when none."""
        return list(self.task.get("tools") or [])

    @property
    def tool_choice(self) -> str:
        """``task.tool_choice``: ``auto`` (the model decides) or ``required`` (its first turn opens a tool call)."""
        return str(self.task.get("tool_choice", "auto"))

    @property
    def output_dir(self) -> Path:
        return Path(self.run.output_dir.format(name=self.name))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "model": dataclasses.asdict(self.model),
            "task": copy.deepcopy(self.task),
            "rewards": copy.deepcopy(self.rewards),
            "grpo": copy.deepcopy(self.grpo),
            "run": dataclasses.asdict(self.run),
        }


def find_recipe(reference: str | None) -> Path:
    """A recipe path from a file path or a built-in recipe name (None: the CPU default)."""
    reference = reference or DEFAULT_RECIPE
    path = Path(reference).expanduser()
    if path.is_file():
        return path
    builtin = RECIPES_DIR / f"{reference.removesuffix('.yaml')}.yaml"
    if builtin.is_file() and "/" not in reference:
        return builtin
    names = builtin_recipes()
    kept = Path("benchmarks", "recipes", f"{reference.removesuffix('.yaml')}.yaml")  # a source checkout's benchmarks
    if kept.is_file():  # a recipe a benchmark keeps as its input, not one a user starts from
        raise RlvrError(f"recipe not found: {reference} is not built in; the benchmarks keep it: give its path, {kept}.")
    hint = closest(Path(reference).stem, names)
    suggestion = f" Did you mean '{hint}'?" if hint else ""
    raise RlvrError(f"recipe not found: {reference}.{suggestion} Built-in recipes: {', '.join(names)}.")


def load_recipe(reference: str | None = None, overrides: list[str] | None = None) -> Recipe:
    """Load (with its ``base`` chain), override (``section.key=value``) and validate a recipe."""
    return resolve_recipe(reference, overrides)[0]


def resolve_recipe(reference: str | None = None, overrides: list[str] | None = None) -> tuple[Recipe, Resolved]:
    """The validated recipe, and its raw resolved sections with where each value came from (``rlvr recipe show``)."""
    resolved = recipe_data(reference, overrides)
    recipe = recipe_from_dict(resolved.data, where=str(resolved.path))
    recipe.source = str(resolved.path)
    recipe.notes = list(resolved.notes)
    return recipe, resolved


def recipe_data(reference: str | None = None, overrides: list[str] | None = None) -> Resolved:
    """A recipe's raw sections, bases merged and overrides applied, not validated (no TRL import)."""
    resolved = resolve(find_recipe(reference))
    for override in overrides or []:
        resolved.set_value(apply_override(resolved.data, override), "--set")
    return resolved


def apply_override(data: dict[str, Any], override: str) -> tuple[str, ...]:
    """Set ``section.key=value`` (value parsed as YAML) in raw recipe data; returns the key's path."""
    if "=" not in override:
        raise RlvrError(f"--set expects section.key=value, got '{override}'.")
    key, raw = override.split("=", 1)
    parts = [p for p in key.strip().split(".") if p]
    if not parts:
        raise RlvrError(f"--set expects section.key=value, got '{override}'.")
    if parts[0] == "base":
        raise RlvrError("--set cannot change base (the recipe a recipe builds on is read before any --set): write "
                        "base: in the recipe file, or --set the fields themselves.")
    if parts[0] not in SECTIONS:
        check_keys({parts[0]: None}, SECTIONS, "the recipe (--set)")
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        value = raw
    node = data
    for part in parts[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise RlvrError(f"--set {key}: '{part}' is not a section.")
        node = child
    node[parts[-1]] = value
    return tuple(parts)


def recipe_from_dict(data: dict[str, Any], where: str = "recipe") -> Recipe:
    check_keys(data, SECTIONS, where)
    task = data.get("task")
    if isinstance(task, str):
        task = {"name": task}
    if not isinstance(task, dict) or "name" not in task:
        raise RlvrError(f"{where}: 'task' needs a name, e.g. task: {{name: gsm8k}}.")
    rewards = data.get("rewards") or []
    if not isinstance(rewards, list):
        raise RlvrError(f"{where}: 'rewards' must be a list like [{{name: format, weight: 0.5}}].")
    rewards = [{"name": r} if isinstance(r, str) else r for r in rewards]
    for reward in rewards:
        if not isinstance(reward, dict) or "name" not in reward:
            raise RlvrError(f"{where}: each reward needs a name, e.g. {{name: correctness, weight: 1.0}}.")
        weight = reward.get("weight")
        if weight is not None and (isinstance(weight, bool) or not isinstance(weight, (int, float))):
            raise RlvrError(f"{where}: reward '{reward['name']}' weight must be a number, got {weight!r}.")
    grpo = data.get("grpo") or {}
    if not isinstance(grpo, dict):
        raise RlvrError(f"{where}: 'grpo' must be a mapping of GRPOConfig fields.")
    check_keys(grpo, grpo_fields(), f"{where}: grpo (TRL GRPOConfig)")
    grpo = check_grpo_types(grpo, where)
    from rlvr.rewards import fill_grpo_defaults

    rewards = fill_grpo_defaults(rewards, grpo)  # e.g. overlong's token limit is generation's (max_completion_length)
    if rewards and grpo.get("reward_weights") is not None:
        from rlvr.rewards.base import reward_weights

        try:  # weights in both places, or a count that does not match the rewards
            reward_weights(rewards, grpo["reward_weights"])
        except RlvrError as error:
            raise RlvrError(f"{where}: {error}") from None
    return Recipe(
        name=str(data.get("name") or Path(where).stem),
        description=str(data.get("description") or ""),
        model=build_dataclass(ModelConfig, data.get("model") or {}, f"{where}: model"),
        task=dict(task),
        rewards=rewards,
        grpo=dict(grpo),
        run=build_dataclass(RunConfig, data.get("run") or {}, f"{where}: run"),
    )
