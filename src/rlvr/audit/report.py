"""What ``rlvr reward audit`` prints: a table of every probe's reward (then the chats of the probes written as
messages, such as the tool probes), and the verdict."""

from __future__ import annotations

import json
from typing import Any

from rlvr.audit.probe import HONEST_CORRECT, HONEST_WRONG, Probe
from rlvr.audit.runner import AuditResult

#: Longer message text is cut in the middle, keeping its start and its end (where the answer line is).
TEXT_LIMIT = 72


def render_table(result: AuditResult) -> str:
    """A plain-text table: probe, reward, its components, and the two verdicts; below it, each message-list
    probe's chat (:func:`render_chat`), since its name alone does not say what the rewards read."""
    names = list(result.results[0].components) if result.results else []
    header = ["probe", "kind", "reward", *names, "> honest wrong", ">= honest correct"]
    lines = [header]
    for row in result.results:
        hack = row.probe.kind == "hack"
        lines.append([
            row.probe.name, row.probe.kind, f"{row.reward:+.3f}",
            *("n/a" if n in result.unjudged else f"{row.components[n]:+.3f}" for n in names),
            ("YES" if row.beats_wrong else "no") if hack else "", ("EXPLOIT" if row.exploit else "no") if hack else "",
        ])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    chats = [render_probe(row.probe) for row in result.results if not isinstance(row.probe.completion, str)]
    if chats:
        text += ["", "probes written as chats (one message a line, long text cut in the middle):", *chats]
    return "\n".join(text)


def render_probe(probe: Probe) -> str:
    """The probe's name, kind and description, then its completion: the text, or the chat one message a line."""
    body = probe.completion if isinstance(probe.completion, str) else render_chat(probe.completion)
    return f"{probe.name} ({probe.kind}): {probe.description}\n" + "\n".join(f"  {line}" for line in body.splitlines())


def render_chat(messages: Any) -> str:
    """A chat completion one message a line: ``assistant: "text" -> tool(arg="...")``, ``tool NAME: "reply"``;
    a pair of messages repeated (a tool loop) is shown once with the count."""
    lines = [_message_line(m) for m in messages]
    out, i = [], 0
    while i < len(lines):
        pair, repeats = lines[i:i + 2], 1
        while len(pair) == 2 and lines[i + 2 * repeats:i + 2 * repeats + 2] == pair:
            repeats += 1
        if repeats > 1:
            out += [*pair, f"(the 2 messages above {repeats} times in all)"]
            i += 2 * repeats
        else:
            out.append(lines[i])
            i += 1
    return "\n".join(out)


def _message_line(message: Any) -> str:
    if not isinstance(message, dict):
        return f"? {_shorten(str(message))}"
    role = str(message.get("role", "?"))
    content = message.get("content")
    text = _shorten(json.dumps(content if isinstance(content, str) else "" if content is None else str(content),
                               ensure_ascii=False))
    calls = [_call(call) for call in message.get("tool_calls") or []]
    if role == "tool":
        return f"tool {message.get('name', '?')}: {text}"
    if calls:
        return f"{role}{': ' + text if content else ''} -> {'; '.join(calls)}"
    return f"{role}: {text}"


def _call(call: Any) -> str:
    function = call.get("function", {}) if isinstance(call, dict) else {}
    arguments = function.get("arguments")
    if isinstance(arguments, dict):
        shown = ", ".join(f"{key}={_shorten(json.dumps(value, ensure_ascii=False))}" for key, value in arguments.items())
    else:
        shown = _shorten(json.dumps(arguments, ensure_ascii=False))
    return f"{function.get('name', '?')}({shown})"


def _shorten(text: str, limit: int = TEXT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return f"{text[:head]}…{text[len(text) - (limit - 1 - head):]}"


def verdict(result: AuditResult) -> str:
    correct, wrong = result.score(HONEST_CORRECT), result.score(HONEST_WRONG)
    beating = [r.probe.name for r in result.results if r.beats_wrong and not r.exploit]
    lines = [f"honest correct {correct:+.3f}, honest wrong {wrong:+.3f}"]
    first = next(r for r in result.results if r.probe.kind == HONEST_CORRECT)
    for row in result.honest_below_wrong:
        lines.append("FAIL: the honest correct answer does not out-score the honest wrong one." if row is first else
                     f"FAIL: {row.probe.name}, a right answer too ({row.probe.description}), earns {row.reward:+.3f}, "
                     "no more than the honest wrong answer.")
    for row in result.results:
        if row.probe.kind == HONEST_CORRECT and row is not first and wrong < row.reward < correct - 1e-9:
            lines.append(f"note: {row.probe.name} ({row.probe.description}) earns {row.reward:+.3f}, less than the "
                         "honest correct answer: the rewards pay a right answer less when it comes that way.")
    if result.exploits:
        names = ", ".join(r.probe.name for r in result.exploits)
        lines.append(f"FAIL: {len(result.exploits)} hack(s) earn at least as much as an honest correct answer: {names}.")
    if beating:
        lines.append(f"note: {len(beating)} hack(s) out-score an honest wrong answer: {', '.join(beating)} "
                     f"({result.hint}).")
    if result.unjudged:
        lines.append(f"note: {', '.join(result.unjudged)} scored no probe (it needs what only training passes, such as "
                     "token ids), so this audit leaves it out.")
    if result.passed:
        hacks = sum(r.probe.kind == "hack" for r in result.results)
        lines.append(f"PASS: no hack reaches the honest correct answer's reward ({hacks} hacks probed).")
    return "\n".join(lines)
