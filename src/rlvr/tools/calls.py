"""One tool call run exactly as TRL 1.16's ``GRPOTrainer._tool_call_loop`` runs it, for rlvr's evaluation.

TRL: a call of type ``function`` looks its name up among the tools and calls ``tool(**arguments)``; an unknown
name raises ``ValueError("Tool X not found.")`` inside the same ``try``, so it and any exception the tool raises
become ``{"error": str(e)}`` and count as a failure; another call type is a failure
``{"error": "Unsupported tool call type: T"}``; a result becomes the tool message's content as ``str(result)``.
Here the content is always that string (TRL passes a list of content blocks through unchanged, for images),
and a malformed call that would crash TRL's loop (no name, no function) is a failure too: this never raises.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolOutcome:
    """What one call gave the model: the tool's name, the tool message's content, and whether TRL counts it failed."""

    name: str
    content: str
    failed: bool


def tool_table(tools: Iterable[Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """TRL's lookup table: each tool under its ``__name__``."""
    return {tool.__name__: tool for tool in tools}


def run_tool_call(tools_by_name: dict[str, Callable[..., Any]], call: Any) -> ToolOutcome:
    """Run ``call`` (``{"type": "function", "function": {"name": ..., "arguments": {...}}}``); never raises."""
    if not isinstance(call, dict) or call.get("type") != "function":
        kind = call.get("type") if isinstance(call, dict) else type(call).__name__
        name = call.get("name", "unknown") if isinstance(call, dict) else "unknown"
        return _failed(str(name), f"Unsupported tool call type: {kind}")
    function = call.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str):
        return _failed(str(name), "Tool call has no function name.")
    try:
        if name not in tools_by_name:
            raise ValueError(f"Tool {name} not found.")
        result = tools_by_name[name](**function["arguments"])
        if inspect.isawaitable(result):  # TRL awaits an async tool's coroutine on its loop
            result = asyncio.run(_awaited(result))
        return ToolOutcome(name, str(result), False)
    except Exception as error:  # noqa: BLE001 - as TRL: any exception of the tool is the model's to read
        return _failed(name, str(error))


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _failed(name: str, message: str) -> ToolOutcome:
    return ToolOutcome(name, str({"error": message}), True)
