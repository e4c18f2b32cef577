"""The reward-function contract and the registry recipes name rewards from.

A reward function follows TRL's contract: ``reward(completions, **columns) ->
list[float]``. ``completions`` holds plain strings or chat message lists;
dataset columns (``final_answer``, ``test_list``, ...) arrive by name, one value
per completion. Reward functions are pure and never raise on model output: a
completion they cannot read scores 0.

Recipes name rewards through :data:`REWARDS`, whose entries are *factories*:
``REWARDS.get("correctness")(tolerance=1e-3)`` returns the reward function.
Factories take keyword parameters from the recipe, so options are data.
A name that is not built in may be the user's own reward: an import path (``my_rewards.py:brevity``,
``mypkg.rewards:brevity``) or a plug-in's entry point (group ``rlvr.rewards``); see
:mod:`rlvr.rewards.checked`, which checks every value such a reward returns.

**Weights live in one place.** Reward functions return raw scores (format 0/1,
correctness 0/1, code 0..1, keywords 0..1); the recipe's weights
(``rewards[].weight``, else the factory's :func:`default_weight`, or
``grpo.reward_weights``, never both) become TRL's ``GRPOConfig.reward_weights``,
applied once by TRL. So ``rewards/<name>/mean`` in the logs is raw and
``reward`` is the weighted total.
"""

from __future__ import annotations

import contextlib
import inspect
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

from rlvr.errors import RlvrError
from rlvr.registry import Registry

RewardFunc = Callable[..., list[float]]
RewardFactory = Callable[..., RewardFunc]

REWARDS: Registry[RewardFactory] = Registry("reward")


def completion_text(completion: Any) -> str:
    """The text a model produced: a plain string, or the last assistant message of a chat.

    Anything unreadable becomes the empty string, so rewards never raise on output.
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return _content_text(completion.get("content"))
    if isinstance(completion, Sequence):
        messages = [m for m in completion if isinstance(m, dict)]
        assistant = [m for m in messages if m.get("role") == "assistant"]
        chosen = assistant or messages
        return _content_text(chosen[-1].get("content")) if chosen else ""
    return ""


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal style: [{"type": "text", "text": ...}, ...]
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "".join(p for p in parts if isinstance(p, str))
    return ""


def column(values: Any, count: int) -> list[Any]:
    """A dataset column as a list of ``count`` values (a scalar is repeated)."""
    if isinstance(values, (list, tuple)):
        values = list(values)
        return values + [None] * (count - len(values)) if len(values) < count else values[:count]
    return [values] * count


def named(name: str, func: RewardFunc) -> RewardFunc:
    """Give a closure the name TRL logs it under (``rewards/<name>/mean``)."""
    func.__name__ = name
    func.__qualname__ = name
    return func


def default_weight(weight: float) -> Callable[[RewardFactory], RewardFactory]:
    """Declare the weight a reward gets when a recipe names it without one (TRL's default is 1.0)."""

    def mark(factory: RewardFactory) -> RewardFactory:
        factory.default_weight = weight  # type: ignore[attr-defined]
        return factory

    return mark


def grpo_defaults(**fields: str) -> Callable[[RewardFactory], RewardFactory]:
    """Declare parameters a recipe fills from its own GRPOConfig fields when it leaves them unset
    (``max_tokens="max_completion_length"``), so the reward judges by the settings generation runs under."""

    def mark(factory: RewardFactory) -> RewardFactory:
        factory.grpo_defaults = dict(fields)  # type: ignore[attr-defined]
        return factory

    return mark


def fill_grpo_defaults(specs: Sequence[dict[str, Any]], grpo: dict[str, Any]) -> list[dict[str, Any]]:
    """``specs`` with each built-in reward's :func:`grpo_defaults` parameters it leaves unset taken from ``grpo``,
    else from TRL's GRPOConfig defaults (a user's own reward is not imported for this)."""
    filled = []
    for spec in specs:
        spec = dict(spec)
        fields = getattr(REWARDS.get(spec["name"]), "grpo_defaults", {}) if spec.get("name") in REWARDS else {}
        for param, field_name in fields.items():
            if spec.get(param) is None:
                spec[param] = grpo[field_name] if field_name in grpo else _grpo_config_default(field_name)
        filled.append(spec)
    return filled


def _grpo_config_default(field_name: str) -> Any:
    import dataclasses

    from trl import GRPOConfig

    return next(f.default for f in dataclasses.fields(GRPOConfig) if f.name == field_name)


def reward_weight(spec: dict[str, Any]) -> float:
    """The weight of one recipe reward spec: its ``weight``, else the reward's default weight."""
    if spec.get("weight") is None:
        return float(getattr(reward_factory(spec["name"]), "default_weight", 1.0))
    weight = spec["weight"]
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise RlvrError(f"reward '{spec['name']}' weight must be a number, got {weight!r}.")
    return float(weight)


def reward_weights(specs: Sequence[dict[str, Any]], grpo_weights: Sequence[float] | None = None) -> list[float]:
    """The weights TRL applies to ``specs``' rewards: per-spec weights, or ``grpo.reward_weights`` (never both)."""
    if grpo_weights is None:
        return [reward_weight(spec) for spec in specs]
    own = [spec["name"] for spec in specs if spec.get("weight") is not None]
    if own:
        raise RlvrError(
            f"reward weights are set twice: rewards[].weight ({', '.join(own)}) and grpo.reward_weights; "
            "keep one (rewards[].weight reads better)."
        )
    weights = list(grpo_weights)
    if len(weights) != len(specs):
        raise RlvrError(f"grpo.reward_weights has {len(weights)} values for {len(specs)} rewards "
                        f"({', '.join(spec['name'] for spec in specs)}).")
    return [float(w) for w in weights]


def reward_factory(name: str) -> RewardFactory:
    """The factory for reward ``name``: built in, else a plug-in's entry point or an import path (checked)."""
    if not isinstance(name, str):
        raise RlvrError(f"a reward is named by a string such as 'keywords', got {type(name).__name__} {name!r}; "
                        "its parameters go beside it: build_reward('keywords', {'per_item': True}).")
    if name in REWARDS:
        return REWARDS.get(name)
    from rlvr.rewards.checked import plugin_factory, plugin_reward

    func = plugin_reward(name)
    if func is None:
        try:
            REWARDS.get(name)
        except RlvrError as error:
            raise RlvrError(f"{error} Your own reward: 'path/to/file.py:function' or 'module:function'.") from None
    return plugin_factory(name, func)


def build_reward(name: str, params: dict[str, Any] | None = None) -> RewardFunc:
    """Build the reward called ``name`` with recipe parameters, checking them. It returns raw scores."""
    factory = reward_factory(name)
    params = dict(params or {})
    if "weight" in params:
        raise RlvrError(
            f"reward '{name}' returns raw scores: its weight goes to GRPOConfig.reward_weights "
            "(see reward_weights(); a recipe's rewards[].weight does that), not to the reward function."
        )
    accepted = inspect.signature(factory).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
    unknown = [key for key in params if key not in accepted and not takes_any]
    if unknown:
        valid = ", ".join(k for k in accepted) or "none"
        raise RlvrError(f"reward '{name}' has no parameter '{unknown[0]}'; its parameters: {valid}.")
    wrong = _wrong_type(name, factory, params)
    if wrong is None:
        return factory(**params)
    with contextlib.suppress(TypeError, ValueError):
        factory(**params)  # a reward that checks its own values raises its own, more precise, line here
    raise RlvrError(wrong)


def _wrong_type(name: str, factory: RewardFactory, params: dict[str, Any]) -> str | None:
    """The line naming the first parameter whose value does not fit the factory's bool/int/float/str annotation
    (a YAML ``with_finding: maybe`` would otherwise run as a truthy string), else None; a factory whose hints
    cannot be read (a plug-in's) is taken as given."""
    try:
        hints = typing.get_type_hints(factory)
    except Exception:  # noqa: BLE001 - unresolvable annotations of a user's factory: nothing to check against
        return None
    for key, value in params.items():
        hint = hints.get(key, Any)
        if not _fits(value, hint):
            return f"reward '{name}': '{key}' must be {_kind(hint)}, got {value!r}."
    return None


_KINDS = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}


def _fits(value: Any, hint: Any) -> bool:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return (value is None and len(options) < len(typing.get_args(hint))) or any(_fits(value, a) for a in options)
    if hint is bool:
        return isinstance(value, bool)
    if hint in (int, float):
        return isinstance(value, (int, float) if hint is float else int) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    return True


def _kind(hint: Any) -> str:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(_kind(a) for a in typing.get_args(hint) if a is not type(None))
    return _KINDS.get(hint, getattr(hint, "__name__", str(hint)))
