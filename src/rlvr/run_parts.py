"""A run's parts, resolved once from a recipe: the one place `train`, `probe`, `filter`, `experiment` and `eval`
take them from, so that a recipe means the same thing to all five.

What a recipe decides beyond its own fields is decided here and nowhere else: the model reference and its
precision on this machine, the chat format put on the tokenizer, the task with its options, the reward
functions with TRL's weights, the time limits on the user's code, the sandbox policy for code rewards, the
seed and the generation settings where the recipe leaves them to TRL (read from ``GRPOConfig``'s own
defaults, never copied as literals). :meth:`RunParts.apply_policies` puts the process-wide ones (limits,
sandbox opt-in) in force; :meth:`RunParts.line` says them in one line, printed the same by every command.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rlvr.config import Recipe
    from rlvr.precision import Precision

#: Generation settings a probe or filter must sample as training does; TRL's default where a recipe is silent.
SAMPLING_FIELDS = ("seed", "num_generations", "temperature", "top_p", "max_completion_length")
#: Tool turns a conversation may take when the recipe leaves ``grpo.max_tool_calling_iterations`` to TRL (no limit).
DEFAULT_TOOL_TURNS = 2


@functools.cache
def trl_defaults() -> dict[str, Any]:
    """``GRPOConfig``'s default for each field (the installed TRL's, so they cannot drift from training's)."""
    import dataclasses

    from trl import GRPOConfig

    return {f.name: f.default for f in dataclasses.fields(GRPOConfig) if f.default is not dataclasses.MISSING}


def grpo_value(grpo: Mapping[str, Any], name: str) -> Any:
    """A recipe's ``grpo.<name>``, else the installed TRL's default for it (what training gets)."""
    return grpo.get(name, trl_defaults().get(name))


def tool_turns(grpo: Mapping[str, Any]) -> int:
    """``grpo.max_tool_calling_iterations`` (TRL's turn limit), else :data:`DEFAULT_TOOL_TURNS` (TRL's is none)."""
    value = grpo.get("max_tool_calling_iterations")
    return DEFAULT_TOOL_TURNS if value is None else int(value)


@dataclass(frozen=True)
class RunParts:
    """Everything a command needs from ``recipe`` beyond the recipe itself (build with :func:`build_parts`)."""

    recipe: Recipe
    chat_format: str | None
    user_code_timeout: float | None
    task_load_timeout: float | None
    sandbox_allow_weaker: bool
    sampling: dict[str, Any]  # SAMPLING_FIELDS: the recipe's grpo value, else TRL's default
    tool_specs: list[Any]  # task.tools, checked (rlvr.tools.specs.ToolSpec); built by :attr:`tools` when asked

    @property
    def seed(self) -> int:
        return int(self.sampling["seed"])

    @property
    def max_completion_length(self) -> int:
        return int(self.sampling["max_completion_length"])

    # ------------------------------------------------------------------ policies in force for the process

    def apply_policies(self) -> None:
        """Put the recipe's limits on the user's code and its sandbox opt-in in force (the user's environment
        wins over the recipe for the opt-in)."""
        from rlvr import timeouts

        timeouts.configure(self.recipe.run)
        if self.sandbox_allow_weaker:
            from rlvr.sandbox import ALLOW_WEAKER_ENV

            set_env(ALLOW_WEAKER_ENV, "1")

    def line(self) -> str:
        """One line: template, limits and sandbox policy, the same in every command that uses this recipe."""
        template = (f"{self.chat_format} (model.chat_format)" if self.chat_format
                    else "the model's own")
        limits = f"user code {_seconds(self.user_code_timeout)}, task load {_seconds(self.task_load_timeout)}"
        sandbox = ("weaker isolation allowed (run.sandbox_allow_weaker)" if self.sandbox_allow_weaker
                   else "full isolation or stop")
        line = f"rlvr: recipe {self.recipe.name}: chat template {template}; limits: {limits}; sandbox: {sandbox}"
        if self.tool_names:
            line += (f"; tools: {', '.join(self.tool_names)} (template: model.tool_template "
                     f"{self.recipe.model.tool_template}; tool_choice {self.recipe.tool_choice}; "
                     f"at most {self.max_tool_turns} tool turns)")
        return line

    # ------------------------------------------------------------------ tools (task.tools)

    @property
    def tool_names(self) -> list[str]:
        return [spec.name for spec in self.tool_specs]

    @property
    def max_tool_turns(self) -> int:
        """``grpo.max_tool_calling_iterations`` (TRL's turn limit), else rlvr's default (TRL's is no limit)."""
        return tool_turns(self.recipe.grpo)

    @functools.cached_property
    def tools(self) -> list[Any]:
        """The callables TRL's tool loop and rlvr's evaluation run ([] without task.tools)."""
        from rlvr.tools.specs import build_tools

        return build_tools(self.tool_specs) if self.tool_specs else []

    # ------------------------------------------------------------------ task and rewards

    def task(self) -> Any:
        from rlvr.tasks import get_task

        task = get_task(self.recipe.task_name, self.recipe.task_options)
        if not self.tools:
            return task
        from rlvr.tools.task_tools import TaskWithTools

        return TaskWithTools(task, self.tools, self.recipe.tool_choice)

    def rewards(self, task: Any) -> tuple[list[Any], list[float] | None]:
        """The task's reward functions (raw scores) and the weights TRL applies once."""
        recipe = self.recipe
        return (task.reward_functions(recipe.rewards),
                task.reward_weights(recipe.rewards, recipe.grpo.get("reward_weights")))

    # ------------------------------------------------------------------ model

    @functools.cached_property
    def model_path(self) -> str:
        from rlvr.model_sources import resolve_model

        return resolve_model(self.recipe.model.name_or_path)

    @functools.cached_property
    def precision(self) -> Precision:
        """The precision the recipe trains in on this machine (the probe and filter predict training with it)."""
        from rlvr.models import model_precision

        return model_precision(self.recipe.model)

    def tokenizer(self) -> Any:
        from rlvr.models import load_tokenizer

        return load_tokenizer(self.model_path)

    def model_and_tokenizer(self, tokenizer: Any = None) -> tuple[Any, Any]:
        """The base model (no adapter) in :attr:`precision` and its tokenizer, with the chat format put on both."""
        from rlvr.models import load_model

        tokenizer = tokenizer if tokenizer is not None else self.tokenizer()
        model = load_model(self.model_path, self.recipe, self.precision)
        self.put_chat_format(model, tokenizer)
        return model, tokenizer

    def put_chat_format(self, model: Any, tokenizer: Any) -> None:
        if self.chat_format:
            from rlvr.chat_format import apply_chat_format

            apply_chat_format(model, tokenizer, self.chat_format)
        if self.tool_names:
            from rlvr.tool_template import fit_tool_template

            fit_tool_template(tokenizer, self.recipe.model.tool_template)


def build_parts(recipe: Recipe) -> RunParts:
    """The parts of ``recipe``, resolved (cheap: nothing is loaded until asked for)."""
    run = recipe.run
    from rlvr.tools.specs import parse_tool_specs
    from rlvr.tools.task_tools import check_tool_choice

    sampling = {name: grpo_value(recipe.grpo, name) for name in SAMPLING_FIELDS}
    check_tool_choice(recipe.tool_choice, bool(recipe.tools))
    return RunParts(
        recipe=recipe,
        chat_format=recipe.model.chat_format or None,
        user_code_timeout=run.user_code_timeout or None,
        task_load_timeout=run.task_load_timeout or None,
        sandbox_allow_weaker=bool(run.sandbox_allow_weaker),
        sampling=sampling,
        tool_specs=parse_tool_specs(recipe.tools) if recipe.tools else [],
    )


def _seconds(limit: float | None) -> str:
    return f"{limit:g} s" if limit else "no limit"


_SET_BY_RLVR: dict[str, str] = {}


def set_env(name: str, value: str) -> None:
    """Set ``name`` for this process unless the user set it: their environment wins over the recipe (a value rlvr
    set for an earlier run in the same process is not the user's)."""
    current = os.environ.get(name)
    if current is not None and _SET_BY_RLVR.get(name) != current:
        return
    os.environ[name] = value
    _SET_BY_RLVR[name] = value
