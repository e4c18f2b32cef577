"""A task whose model may call tools: the same items and rewards, prompts whose exemplars show the call.

:class:`TaskWithTools` wraps any chat task without touching it: every attribute is the task's own, except
``load``, which rewrites each prompt's exemplars as a call of the run's first tool (:mod:`rlvr.tools.exemplars`),
and :attr:`tools`, the callables TRL's tool loop and rlvr's evaluation run. ``without_tools`` is the task as it
was, for the verdict's comparison with the base model that has no tool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rlvr.errors import RlvrError

TOOL_CHOICES = ("auto", "required")
#: A tool-calling turn's opening under the Hermes format (and Qwen's): what ``tool_choice: required`` writes for the
#: model at the start of its first turn, as OpenAI's and Anthropic's APIs force a call.
TOOL_CALL_OPENER = "<tool_call>\n"
#: A turn that wrote a call ends there: the model's own ``<|im_end|>`` often comes late or never at 135M, and what it
#: writes after the call (an imagined reply) is not a turn the tool loop can use.
TOOL_CALL_STOP = r"</tool_call>"


def check_tool_choice(choice: str, has_tools: bool) -> None:
    if choice not in TOOL_CHOICES:
        raise RlvrError(f"task.tool_choice must be one of {', '.join(TOOL_CHOICES)}, got {choice!r}.")
    if choice != "auto" and not has_tools:
        raise RlvrError("task.tool_choice: required needs task.tools (the tools the model may call).")


class TaskWithTools:
    def __init__(self, task: Any, tools: list[Callable[..., Any]], tool_choice: str = "auto"):
        if not tools:
            raise ValueError("TaskWithTools needs at least one tool")
        check_tool_choice(tool_choice, True)
        self.without_tools = task
        self.tools = list(tools)
        self.tool_choice = tool_choice

    @property
    def opener(self) -> str:
        """What the model's first turn starts with, written for it: a tool call's opening under ``required``."""
        return TOOL_CALL_OPENER if self.tool_choice == "required" else ""

    @property
    def stop_patterns(self) -> list[str]:
        return [*self.without_tools.stop_patterns, TOOL_CALL_STOP]

    def __getattr__(self, name: str) -> Any:  # everything but load and tools is the task's own
        return getattr(self.__dict__["without_tools"], name)

    @property
    def tool_names(self) -> list[str]:
        return [tool.__name__ for tool in self.tools]

    def load(self, split: str) -> Any:
        dataset = self.without_tools.load(split)
        if "prompt" not in dataset.column_names or not dataset.num_rows:
            return dataset
        if isinstance(dataset[0]["prompt"], str):
            raise RlvrError("task.tools needs chat prompts (a tool call is a chat turn): set task.chat: true.")
        from rlvr.tools.exemplars import with_tool_exemplars

        tool = self.tools[0]  # one tool's exemplars per run: rows then share one message shape
        prompts = [with_tool_exemplars(list(prompt), tool) for prompt in dataset["prompt"]]
        return dataset.remove_columns("prompt").add_column("prompt", _uniform(prompts))


def _uniform(prompts: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """Every message with the same keys (Arrow stores a column with one struct type): missing ones as None."""
    keys = sorted({key for prompt in prompts for message in prompt for key in message})
    return [[{key: message.get(key) for key in keys} for message in prompt] for prompt in prompts]
