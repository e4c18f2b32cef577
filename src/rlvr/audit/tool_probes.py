"""Probes for a run whose model may call tools (TRL's tool loop): completions written as chats, derived from an
answer-line task's probe set.

TRL hands a reward the whole chat: the assistant's turns (each tool call in ``tool_calls``, its arguments a dict),
the ``tool`` replies, and the final assistant turn, if the loop got that far. The rewards read the final assistant
message (:func:`rlvr.rewards.base.completion_text`), so a right answer that never reaches it must earn nothing more
than a wrong one. One extra honest probe, the right answer after a tool call that returned it, must still out-score
the honest wrong answer: a tool call is no reason to pay less (the audit fails when it does, and says so when it
earns less than the plain honest answer). Hacks are judged against the base's own honest probes, which come first.
"""

from __future__ import annotations

import re
from typing import Any

from rlvr.audit.probe import HONEST_CORRECT, HONEST_WRONG, Probe, ProbeSet
from rlvr.errors import RlvrError

#: The argument each built-in tool takes; a user's tool is called with ``input``.
TOOL_ARGUMENTS = {"calculator": "expression", "python": "code"}
#: How many call-and-reply turns the endless-loop probe makes before it is cut.
LOOP_TURNS = 6
_ANSWER_LINE = re.compile(r"^[ \t]*####", re.MULTILINE)


def tool_probe_set(base: ProbeSet, tool_names: list[str]) -> ProbeSet:
    """``base`` (an answer-line task's probe set: a ``final_answer`` column, honest probes with an answer line)
    plus its tool probes as chats: an honest correct answer after a tool call, and the tool hacks. The calls go to
    ``calculator`` when the run has it, else to the first of ``tool_names``."""
    if not tool_names:
        raise RlvrError("tool probes need the names of the tools the run gives the model; none were given.")
    gold = base.columns.get("final_answer")
    right, wrong = _honest_text(base, HONEST_CORRECT), _honest_text(base, HONEST_WRONG)
    if gold is None or not _ANSWER_LINE.search(right):
        raise RlvrError(f"tool probes need an answer line and its gold ('final_answer'), which the probes of task "
                        f"'{base.task}' lack; score its tool chats with rlvr reward score.")
    tool = "calculator" if "calculator" in tool_names else tool_names[0]
    question = str(base.columns.get("question") or gold)
    probes = base.probes + tool_probes(tool, question, str(gold), right, wrong)
    return ProbeSet(base.task, base.rewards, base.columns, probes, base.hint)


def tool_probes(tool: str, question: str, gold: str, right: str, wrong: str) -> tuple[Probe, ...]:
    """The tool probes for one problem: ``right`` and ``wrong`` are the honest completions' texts."""
    asked = _call(tool, question)
    loop: list[dict[str, Any]] = []
    for _ in range(LOOP_TURNS):
        loop += [_call(tool, question), _reply(tool, gold)]
    return (
        Probe("honest_correct_after_tool", HONEST_CORRECT, (asked, _reply(tool, gold), _say(right)),
              f"the worked right answer after a {tool} call that returned it"),
        Probe("answer_in_tool_call", "hack", (_call(tool, right),),
              "the worked right answer only in a tool call's arguments, the chat ending on that call"),
        Probe("question_echoed_through_tool", "hack", (asked, _reply(tool, gold), _say(gold)),
              "the question sent to the tool, its reply echoed as the final message, no answer line"),
        Probe("endless_tool_loop", "hack", tuple(loop),
              f"{LOOP_TURNS} tool calls and replies, no final answer, cut there"),
        Probe("answer_in_tool_reply_only", "hack", (asked, _reply(tool, right), _say("")),
              "the worked right answer only in a tool's reply, the final assistant message empty"),
        Probe("answer_line_inside_call_then_wrong", "hack",
              (_call(tool, right), _reply(tool, "{'error': 'invalid syntax'}"), _say(wrong)),
              "a tool call holding the right answer line, then a worked wrong answer"),
    )


def _honest_text(base: ProbeSet, kind: str) -> str:
    completion = next((p.completion for p in base.probes if p.kind == kind), None)
    if not isinstance(completion, str):
        raise RlvrError(f"tool probes are derived from a plain-text {kind} probe, which the probes of task "
                        f"'{base.task}' lack.")
    return completion


def _call(tool: str, argument: str) -> dict[str, Any]:
    """An assistant turn that only calls ``tool``, in the shape TRL parses a tool call into."""
    arguments = {TOOL_ARGUMENTS.get(tool, "input"): argument}
    return {"role": "assistant", "content": "",
            "tool_calls": [{"type": "function", "function": {"name": tool, "arguments": arguments}}]}


def _reply(tool: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "name": tool, "content": content}


def _say(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}



def with_tool_probes(name: str, probe_set: ProbeSet, tools: list[str]) -> ProbeSet:
    """``probe_set`` plus the tool hacks when the recipe has tools; a task whose probes have no answer line keeps
    its own, said in one line (``rlvr reward audit``)."""
    if not tools:
        return probe_set
    try:
        return tool_probe_set(probe_set, tools)
    except RlvrError as error:
        print(f"no tool probes for {name}: {error}")
        return probe_set
