"""The user's own tools, named by import path (``my_tools.py:lookup``, ``pkg.mod:func``).

TRL offers a tool to the model through the JSON schema ``transformers.utils.get_json_schema`` builds from
the function (type hints, a Google-style docstring with an ``Args:`` line per parameter) and calls it by
its ``__name__``; both are checked here, when the recipe's tools are built, not at the first call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rlvr.errors import RlvrError
from rlvr.plugins import load_callable

_FIX = ("give every parameter a type hint and write a Google-style docstring: a description, then an Args: "
        "section with one 'name: what it is' line per parameter")


def load_user_tool(reference: str) -> Callable[..., Any]:
    """The function ``reference`` names, checked to be a tool TRL can offer to the model (RlvrError otherwise)."""
    func = load_callable(reference, "tool")
    name = getattr(func, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise RlvrError(f"tool '{reference}' has no usable __name__ (the model calls a tool by it): make it a "
                        "plain function.")
    tool_schema(func, f"tool '{reference}'")
    return func


def tool_schema(func: Callable[..., Any], label: str) -> dict[str, Any]:
    """The schema TRL renders for ``func``; one RlvrError line naming ``label`` and what to fix if none can be built."""
    from transformers.utils import get_json_schema

    try:
        return get_json_schema(func)
    except Exception as error:  # noqa: BLE001 - transformers' own exceptions, whatever they are in this version
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise RlvrError(f"{label} cannot be offered to the model ({reason}): {_FIX}.") from None
