"""A recipe's tool list: which tools the model may call during training, and their options.

Each item is a name (``calculator``, ``python``, or an import path ``my_tools.py:lookup`` / ``pkg.mod:func``)
or a mapping ``{name: python, timeout: 5, max_output_chars: 1000}`` with only the options that tool takes.
:func:`parse_tool_specs` checks the list without importing or starting anything; :func:`build_tools` makes
the callables TRL's ``GRPOTrainer(tools=...)`` takes, each named (``__name__``) as the model calls it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rlvr.errors import RlvrError
from rlvr.plugins import is_reference
from rlvr.registry import Registry, closest
from rlvr.sandbox import Limits
from rlvr.tools import python_tool
from rlvr.tools.calculator import calculator
from rlvr.tools.user_tools import load_user_tool


@dataclass(frozen=True)
class BuiltinTool:
    """A built-in tool: ``build(limits, **options)`` makes it; ``check(**options)`` refuses bad option values."""

    build: Callable[..., Callable[..., Any]]
    options: tuple[str, ...] = ()
    check: Callable[..., None] | None = None


TOOLS: Registry[BuiltinTool] = Registry("tool")
TOOLS.register("calculator")(BuiltinTool(lambda limits: calculator))
TOOLS.register("python")(BuiltinTool(
    lambda limits, **options: python_tool.make_python_tool(limits, **options),
    ("timeout", "memory_mb", "max_output_chars"), python_tool.check_options))


@dataclass(frozen=True)
class ToolSpec:
    """One tool of the recipe: a built-in name or an import path, and its options."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def builtin(self) -> bool:
        return self.name in TOOLS


def valid_names() -> str:
    return f"Valid tools: {', '.join(TOOLS.names())}, or an import path (my_tools.py:func, pkg.mod:func)."


def parse_tool_specs(value: Any) -> list[ToolSpec]:
    """The recipe's ``tools`` list as specs; one RlvrError line for the first problem (None: no tools)."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        _refuse(f"expected a list of tool names or mappings, got {type(value).__name__}")
    specs: list[ToolSpec] = []
    for item in value:
        spec = _parse_item(item)
        if any(spec.name == earlier.name for earlier in specs):
            _refuse(f"tool '{spec.name}' is listed twice")
        specs.append(spec)
    return specs


def build_tools(specs: list[ToolSpec], limits: Limits | None = None) -> list[Callable[..., Any]]:
    """The callables for TRL's ``tools=``; ``limits`` are the sandbox limits of tools that run code."""
    tools: list[Callable[..., Any]] = []
    for spec in specs:
        tool = TOOLS.get(spec.name).build(limits, **spec.options) if spec.builtin else load_user_tool(spec.name)
        clash = next((t for t in tools if t.__name__ == tool.__name__), None)
        if clash is not None:
            raise RlvrError(f"tools: two tools are named '{tool.__name__}' (the model calls a tool by its name): "
                            f"rename the function '{spec.name}' names.")
        tools.append(tool)
    return tools


def _parse_item(item: Any) -> ToolSpec:
    if isinstance(item, str):
        name, options = item.strip(), {}
    elif isinstance(item, Mapping):
        name, options = item.get("name"), {k: v for k, v in item.items() if k != "name"}
        if not isinstance(name, str):
            _refuse(f"a tool given as a mapping needs a 'name' (got keys {', '.join(map(str, item)) or 'none'})")
        name = name.strip()
    else:
        _refuse(f"a tool is a name or a mapping with a 'name', got {type(item).__name__} {item!r}")
    if name in TOOLS:
        builtin = TOOLS.get(name)
        unknown = [str(k) for k in options if k not in builtin.options]
        if unknown:
            takes = f"it takes {', '.join(builtin.options)}" if builtin.options else "it takes no options"
            _refuse(f"tool '{name}' has no option {', '.join(repr(k) for k in unknown)} ({takes})")
        if builtin.check is not None:
            builtin.check(**options)
    elif is_reference(name):
        if options:
            _refuse(f"tool '{name}' is your own function and takes no options (got {', '.join(map(str, options))})")
    else:
        hint = closest(name, TOOLS.names())
        _refuse(f"unknown tool '{name}'." + (f" Did you mean '{hint}'?" if hint else ""), stop="")
    return ToolSpec(name, dict(options))


def _refuse(problem: str, stop: str = ".") -> None:
    raise RlvrError(f"tools: {problem}{stop} {valid_names()}")
