"""Exemplars that call the tool: a task's worked example rewritten as the tool exchange it stands for.

A chat task's exemplar is a user turn (the question) and an assistant turn (the reasoning, ending in the answer
line). With a tool, the same exemplar becomes four turns: the question; the assistant calling the tool on the
computation its reasoning wrote (``515 + 177`` for "515 + 177 = 692"); the tool's reply, produced by running the
tool itself; and the original answer turn. The call is found, never invented: an exemplar whose reasoning holds
no computation the tool returns the same answer for stays as it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

#: ``<expression> = <number>`` inside an exemplar's reasoning; the expression is re-checked by the calculator.
_COMPUTATION = re.compile(r"([0-9(][0-9+\-*/%(). ]*[0-9)])\s*=\s*(-?[0-9][0-9,]*(?:\.[0-9]+)?)")


def computation_in(text: str, answer: str) -> str | None:
    """The last arithmetic expression in ``text`` that the calculator evaluates to ``answer``, else None."""
    from rlvr.tools.calculator import calculator

    for match in reversed(list(_COMPUTATION.finditer(text))):
        expression = match.group(1).strip()
        try:
            value = calculator(expression)
        except ValueError:
            continue
        if _same_number(value, answer):
            return expression
    return None


def exemplar_arguments(tool_name: str, question: str, text: str, answer: str) -> dict[str, str] | None:
    """The arguments a built-in tool would be called with for an exemplar: the computation its worked answer
    wrote, else the one its question names (:mod:`rlvr.tools.exemplar_code`); None: no call."""
    from rlvr.tools.exemplar_code import question_program

    expression = computation_in(text, answer)
    if expression is None:
        return question_program(question.removeprefix("Question:").strip(), tool_name)
    if tool_name == "calculator":
        return {"expression": expression}
    if tool_name == "python":
        return {"code": f"print({expression})"}
    return None


def with_tool_exemplars(messages: list[dict[str, Any]], tool: Callable[..., Any]) -> list[dict[str, Any]]:
    """``messages`` with each (question, worked answer) exemplar pair before the last turn rewritten as a call of
    ``tool`` and its reply, where the answer's computation can be found; the last turn (the question) untouched."""
    out: list[dict[str, Any]] = []
    body, last = messages[:-1], messages[-1:]
    index = 0
    while index < len(body):
        turn = body[index]
        reply = body[index + 1] if index + 1 < len(body) else None
        exchange = _exchange(turn, reply, tool) if reply is not None else None
        if exchange is None:
            out.append(turn)
            index += 1
            continue
        out += exchange
        index += 2
    return out + last


def _exchange(question: dict[str, Any], reply: dict[str, Any], tool: Callable[..., Any]) -> list[dict[str, Any]] | None:
    if question.get("role") != "user" or reply.get("role") != "assistant":
        return None
    content = str(reply.get("content") or "")
    answer = _answer_of(content)
    if answer is None:
        return None
    arguments = exemplar_arguments(tool.__name__, str(question.get("content") or ""), content, answer)
    if arguments is None:
        return None
    result = _run(tool, arguments)
    if result is None or result.strip() != answer.strip():  # the tool must give the exemplar's own answer
        return None
    call = {"type": "function", "function": {"name": tool.__name__, "arguments": arguments}}
    return [question, {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "name": tool.__name__, "content": result}, reply]


def _run(tool: Callable[..., Any], arguments: dict[str, str]) -> str | None:
    """The tool's reply (memoised: a task's exemplars come from a small pool and the python tool runs a sandbox)."""
    key = (tool.__name__, id(tool), tuple(sorted(arguments.items())))
    if key not in _REPLIES:
        try:
            _REPLIES[key] = str(tool(**arguments))
        except Exception:  # noqa: BLE001 - an exemplar the tool cannot run stays a plain exemplar
            _REPLIES[key] = None
    return _REPLIES[key]


_REPLIES: dict[tuple[Any, ...], str | None] = {}


def _answer_of(content: str) -> str | None:
    match = re.search(r"####\s*The final answer is\s*(.+?)\s*$", content)
    return match.group(1) if match else None


def _same_number(value: str, answer: str) -> bool:
    from fractions import Fraction

    try:
        return Fraction(value.replace(",", "")) == Fraction(answer.replace(",", ""))
    except (ValueError, ZeroDivisionError):
        return False
