"""Build dataclasses from plain dicts, naming unknown keys and fixing simple types."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, TypeVar, Union

from rlvr.errors import RlvrError
from rlvr.registry import closest

T = TypeVar("T")


def check_keys(data: dict[str, Any], valid: list[str], where: str) -> None:
    for key in data:
        if key not in valid:
            hint = closest(str(key), valid)
            suggestion = f" Did you mean '{hint}'?" if hint else f" Valid keys: {', '.join(sorted(valid))}."
            raise RlvrError(f"unknown key '{key}' in {where}.{suggestion}")


def build_dataclass(cls: type[T], data: dict[str, Any], where: str) -> T:
    """``cls(**data)`` with unknown keys named and scalar types checked."""
    if not isinstance(data, dict):
        raise RlvrError(f"{where} must be a mapping of options, got {type(data).__name__}.")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    check_keys(data, list(fields), where)
    hints = typing.get_type_hints(cls)
    values = {k: coerce(v, hints.get(k, Any), f"{where}: '{k}'") for k, v in data.items()}
    try:
        return cls(**values)
    except (TypeError, ValueError) as error:
        raise RlvrError(f"{where}: {error}") from None


def coerce(value: Any, hint: Any, where: str) -> Any:
    """Accept ``value`` for a field typed ``hint`` (bool/int/float/str, optionally None)."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return coerce(value, options[0], where)
        return value
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "1", "0"):
            return value.lower() in ("true", "yes", "1")
        raise RlvrError(f"{where} must be true or false, got {value!r}.")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise RlvrError(f"{where} must be an integer, got {value!r}.")
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        try:
            return float(value)
        except (TypeError, ValueError):
            raise RlvrError(f"{where} must be a number, got {value!r}.") from None
    if hint is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        raise RlvrError(f"{where} must be a string, got {value!r}.")
    return value
