"""Tools a model calls during GRPO training (TRL's ``GRPOTrainer(tools=[...])``) and in evaluation.

Built in: ``calculator`` (exact arithmetic) and ``python`` (a snippet run in the code sandbox); the user's
own by import path. A recipe lists them (:func:`parse_tool_specs`), :func:`build_tools` makes the callables,
and :func:`run_tool_call` runs one call the way TRL's tool loop does.
"""

from __future__ import annotations

from rlvr.tools.calculator import calculator
from rlvr.tools.calls import ToolOutcome, run_tool_call, tool_table
from rlvr.tools.python_tool import make_python_tool
from rlvr.tools.specs import TOOLS, BuiltinTool, ToolSpec, build_tools, parse_tool_specs
from rlvr.tools.user_tools import load_user_tool, tool_schema

__all__ = ["TOOLS", "BuiltinTool", "ToolOutcome", "ToolSpec", "build_tools", "calculator", "load_user_tool",
           "make_python_tool", "parse_tool_specs", "run_tool_call", "tool_schema", "tool_table"]
