"""A reasoning-gym dataset's own curriculum, cut at the configuration a recipe names (the target).

reasoning-gym gives most datasets a curriculum: attributes (``RangeAttributeDefinition``: a ``min_*``/``max_*``
pair of config fields, ``ScalarAttributeDefinition``: one field), each with a list of levels. The target config
reaches some level of each attribute: a range attribute the highest level whose upper value the target's upper
field reaches (``ensure_interval`` attributes read level k's upper value at k + 1, as reasoning-gym does), a scalar
the first level holding the target's value (or, for numbers that grow or shrink level by level, the last level
not past it). A target beyond the last defined level is the top. An attribute whose target lies below its first
level, or which cannot be placed, is held at the target's value throughout. A level the dataset's own config
check rejects is left out.

Level k sets every attribute to ``min(k, its target level)``; the last level is the target config itself. Level k
below an attribute's target level gives the range's upper field the curriculum's value at k and its lower field
the smaller of the target's lower value and that upper value (so the target's own lower bound is kept where it can
be). Other options (operators, seeds, ...) are the target's throughout.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

MODES = ("auto", "on", "off")


@dataclass
class LevelPlan:
    """One dataset's levels up to its target: ``configs[k]`` is level k's config, the last is the target's."""

    dataset: str
    configs: list[dict[str, Any]]
    reached: dict[str, int] = field(default_factory=dict)  # attribute: the target's level of it
    held: list[str] = field(default_factory=list)  # attributes held at the target's value

    @property
    def top(self) -> int:
        return len(self.configs) - 1


def _upper(value: Any) -> Any:
    return max(value) if isinstance(value, Iterable) and not isinstance(value, str) else value


def _lower(value: Any) -> Any:
    return min(value) if isinstance(value, Iterable) and not isinstance(value, str) else value


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _range_levels(attr: Any) -> list[tuple[Any, Any]]:
    """(lower, upper) of each of a range attribute's levels as reasoning-gym's inclusive context gives them."""
    levels, last = list(attr.levels), len(attr.levels) - 1
    spans = []
    for k in range(len(levels) - (1 if attr.ensure_interval and last > 0 else 0)):
        value = levels[k]
        if isinstance(value, Iterable) and not isinstance(value, str):
            spans.append((_lower(value), _upper(value)))
            continue
        high = levels[min(k + 1, last)] if attr.ensure_interval else value
        spans.append((_lower(levels[0]), high))
    return spans


def _range_target(attr: Any, target: Any) -> int | None:
    """The highest level whose upper value ``target`` (the target's upper field) reaches; None: below the first."""
    spans = _range_levels(attr)
    uppers = [high for _, high in spans]
    if not _number(target) or not all(_number(u) for u in uppers) or uppers != sorted(uppers):
        return None
    reached = [k for k, high in enumerate(uppers) if high <= target]
    if not reached:
        return None
    return uppers.index(uppers[reached[-1]])  # the first of equal upper values


def _scalar_target(attr: Any, target: Any) -> int | None:
    levels = list(attr.levels)
    for k, value in enumerate(levels):
        if value == target and type(value) is type(target):
            return k
    if not _number(target) or not all(_number(v) for v in levels) or len(levels) < 2:
        return None
    rising = levels == sorted(levels)
    if not rising and levels != sorted(levels, reverse=True):
        return None
    reached = [k for k, v in enumerate(levels) if (v <= target if rising else v >= target)]
    return reached[-1] if reached else None


def plan_levels(dataset: str, options: dict[str, Any]) -> LevelPlan | str:
    """``dataset``'s levels up to the target ``options``, or the reason it has none (one sentence)."""
    from reasoning_gym.coaching.attributes import RangeAttributeDefinition
    from reasoning_gym.factory import create_curriculum, has_curriculum

    if not has_curriculum(dataset):
        return f"{dataset} has no curriculum in reasoning-gym"
    curriculum = create_curriculum(dataset)
    try:
        target = vars(curriculum._config_cls(**options))
    except Exception as error:  # noqa: BLE001 (the dataset's own config check; the task reports it when generating)
        return f"{dataset} rejected its options: {error}"
    reached: dict[str, int] = {}
    held: list[str] = []
    for name, attr in curriculum.attributes.items():
        if isinstance(attr, RangeAttributeDefinition):
            level = _range_target(attr, target.get(attr.upper_field_name))
        else:
            level = _scalar_target(attr, target.get(attr.field_name))
        if level is None:
            held.append(name)
        else:
            reached[name] = level
    top = max(reached.values(), default=0)
    if top == 0:
        return (f"the target config of {dataset} is at or below its curriculum's first level "
                f"({_describe(curriculum)}): there is nothing easier to start from")
    configs = [_level_config(curriculum, options, target, reached, k) for k in range(top)]
    configs = [config for config in configs if _valid(curriculum._config_cls, config)]  # its own checks first
    if not configs:
        return f"{dataset} rejects every easier level of its curriculum under this config"
    return LevelPlan(dataset, [*configs, dict(options)], reached, held)


def _valid(config_cls: Any, config: dict[str, Any]) -> bool:
    """Whether the dataset takes ``config`` (a level can break a rule of the dataset: knight_swap's first level has
    fewer nodes than it allows): such a level is left out."""
    try:
        made = config_cls(**config)
        if hasattr(made, "validate"):
            made.validate()
    except Exception:  # noqa: BLE001 (whatever the dataset's own check raises)
        return False
    return True


def _level_config(curriculum: Any, options: dict[str, Any], target: dict[str, Any], reached: dict[str, int],
                  k: int) -> dict[str, Any]:
    from reasoning_gym.coaching.attributes import RangeAttributeDefinition

    config = dict(options)
    for name, level in reached.items():
        if k >= level:
            continue  # at its target: the target's own values
        attr = curriculum.attributes[name]
        if isinstance(attr, RangeAttributeDefinition):
            low, high = _range_levels(attr)[k]
            lower = target.get(attr.lower_field_name)
            config[attr.upper_field_name] = high
            config[attr.lower_field_name] = min(lower, high) if _number(lower) else low
        else:
            config[attr.field_name] = attr.levels[k]
    return config


def _describe(curriculum: Any) -> str:
    from reasoning_gym.coaching.attributes import RangeAttributeDefinition

    parts = []
    for attr in curriculum.attributes.values():
        if isinstance(attr, RangeAttributeDefinition):
            parts.append(f"{attr.upper_field_name} {_range_levels(attr)[0][1]}")
        else:
            parts.append(f"{attr.field_name} {attr.levels[0]}")
    return ", ".join(parts)


def check_settings(mode: Any, threshold: Any, window: Any) -> None:
    """The task's ``curriculum``, ``curriculum_threshold`` and ``curriculum_window``, each in one line."""
    from rlvr.errors import RlvrError

    if mode not in MODES:
        raise RlvrError(f"reasoning-gym curriculum must be auto, on or off, got {mode!r}.")
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.0 < threshold <= 1.0:
        raise RlvrError(f"reasoning-gym curriculum_threshold must be a pass rate in (0, 1], got {threshold!r}.")
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise RlvrError(f"reasoning-gym curriculum_window must be a positive number of groups, got {window!r}.")


def resolve(mode: str, components: list[tuple[str, dict[str, Any]]], threshold: float,
            window: int) -> tuple[dict[str, LevelPlan] | None, str | None]:
    """The plan of each component (``(dataset, target config)``) under ``mode``, and the line that says so at start
    (None for ``off``). ``auto``: on where every component has a curriculum and one target lies above its first
    level; ``on`` where that does not hold is an error naming why."""
    from rlvr.errors import RlvrError

    if mode == "off":
        return None, None
    plans = {name: plan_levels(name, config) for name, config in components}
    missing = [reason for reason in plans.values() if isinstance(reason, str) and "no curriculum" in reason]
    climbing = [plan for plan in plans.values() if isinstance(plan, LevelPlan)]
    if missing or not climbing:
        reason = (missing or [p for p in plans.values() if isinstance(p, str)])[0]
        if mode == "on":
            raise RlvrError(f"reasoning-gym curriculum: on, but {reason}; set curriculum: off.")
        return None, f"rlvr: curriculum: off (auto): {reason}."
    full = {name: plan if isinstance(plan, LevelPlan) else LevelPlan(name, [dict(config)])
            for (name, config), plan in zip(components, plans.values(), strict=True)}
    levels = ", ".join(f"{p.dataset} levels 0-{p.top}" if p.top else f"{p.dataset} at its target" for p in full.values())
    return full, (f"rlvr: curriculum: on ({mode}): {levels} (the last is the target config), each raised when its "
                  f"last {window} groups at the level pass {threshold:.0%}; validation and test stay on the target.")
