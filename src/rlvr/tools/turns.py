"""Evaluation with tools: each conversation decoded turn by turn, tools run between turns, as training runs them.

TRL's tool loop runs inside training's rollouts only; the verdict, ``rlvr eval`` and the validation diagnostics
decode with rlvr's backends. :class:`ToolBackend` wraps one (:class:`rlvr.evaluation.backends.HFBackend`) and
repeats what TRL's ``_tool_call_loop`` does: parse the turn with TRL's ``parse_response``; run each call with
:func:`rlvr.tools.calls.run_tool_call` (TRL's semantics: an unknown tool or a raised error becomes the reply's
text); append the reply in the template's own tool-response format (TRL's ``_get_tool_suffix_ids``, in text);
decode again, at most ``max_turns`` times, within one completion budget. The text scored is the last assistant
turn's content: an answer written only inside a tool call or read only in a tool's reply is no answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlvr.evaluation.backends import Generation, Sampling


@dataclass
class Conversation:
    prompt: str  # the rendered prompt so far: the question, then every turn and tool reply
    used: int = 0  # completion tokens spent: the model's turns and the tools' replies, as TRL counts its budget
    calls: int = 0
    errors: int = 0
    turns: int = 0
    cut_by_turn_limit: bool = False
    final: Generation | None = None
    transcript: list[str] = field(default_factory=list)


class ToolBackend:
    """Decode with tools: ``generate`` returns, per prompt, the final turn of each conversation."""

    def __init__(self, inner: Any, tools: Sequence[Callable[..., Any]], max_turns: int, opener: str = ""):
        self.inner = inner
        self.opener = opener  # written at the start of the first turn (task.tool_choice: required)
        self.tokenizer = inner.tokenizer
        self.tools = list(tools)
        self.by_name = {tool.__name__: tool for tool in self.tools}
        self.max_turns = max(0, int(max_turns))
        self.name = f"{inner.name}+tools"

    def render(self, prompts: Sequence[Any]) -> list[str]:
        """Chat prompts rendered with the tools listed (as TRL renders training prompts)."""
        return [self.tokenizer.apply_chat_template(list(p), tools=self.tools, tokenize=False, add_generation_prompt=True)
                + self.opener for p in prompts]

    def generate(self, prompts: Sequence[str], sampling: Sampling, progress: Any = None) -> list[list[Generation]]:
        first = self.inner.generate(prompts, sampling, progress)
        conversations = [[Conversation(prompt) for _ in outs] for prompt, outs in zip(prompts, first, strict=True)]
        flat = [(c, g) for row, outs in zip(conversations, first, strict=True) for c, g in zip(row, outs, strict=True)]
        pending = [c for c, g in flat if self._take_turn(c, g, sampling.max_new_tokens)]
        one = Sampling(1, sampling.temperature, sampling.top_p, sampling.max_new_tokens, sampling.seed)
        while pending:
            one.max_new_tokens = max(sampling.max_new_tokens - c.used for c in pending)
            outs = self.inner.generate([c.prompt for c in pending], one)
            outs = [self._within(out[0], sampling.max_new_tokens - c.used) for c, out in zip(pending, outs, strict=True)]
            pending = [c for c, out in zip(pending, outs, strict=True) if self._take_turn(c, out, sampling.max_new_tokens)]
        return [[self._result(c) for c in row] for row in conversations]

    def _within(self, generation: Generation, room: int) -> Generation:
        """A turn cut to the room left in the completion budget (TRL truncates the turn after a tool reply so)."""
        ids = self.tokenizer.encode(generation.text, add_special_tokens=False)
        if len(ids) <= room:
            return generation
        return Generation(self.tokenizer.decode(ids[:room]), room, False)

    def _take_turn(self, conversation: Conversation, generation: Generation, budget: int) -> bool:
        """Record one model turn; run its tool calls and return True when the conversation goes on."""
        from trl.chat_template_utils import parse_response

        from rlvr.tools.calls import run_tool_call

        tokenizer = self.tokenizer
        if generation.text.rstrip().endswith("</tool_call>"):  # stopped at the call (TOOL_CALL_STOP): the tokens
            generation = Generation(generation.text, generation.tokens, True, generation.extra)  # end as TRL's do
        conversation.used += generation.tokens
        conversation.transcript.append(generation.text)
        ids = tokenizer.encode(generation.text + tokenizer.eos_token, add_special_tokens=False)
        prefix = tokenizer.encode(conversation.prompt, add_special_tokens=False)
        parsed = parse_response(tokenizer, ids, prefix=prefix, tools=self.tools)
        calls = parsed.get("tool_calls") or []
        final_text = str(parsed.get("content") or "") if calls else generation.text
        conversation.final = Generation(final_text, generation.tokens, generation.stopped)
        if not calls:
            return False
        conversation.turns += 1
        if conversation.turns > self.max_turns:
            conversation.cut_by_turn_limit = True
            return False
        replies = []
        for call in calls:
            outcome = run_tool_call(self.by_name, call)
            conversation.calls += 1
            conversation.errors += int(outcome.failed)
            replies.append({"role": "tool", "name": outcome.name, "content": outcome.content})
        suffix = tool_suffix(tokenizer, replies)
        conversation.used += len(tokenizer.encode(suffix, add_special_tokens=False))
        if conversation.used >= budget:  # TRL drops a reply that would pass the budget, and the conversation ends
            return False
        conversation.transcript.append(suffix)
        conversation.prompt += generation.text + tokenizer.eos_token + suffix
        return True

    def _result(self, conversation: Conversation) -> Generation:
        final = conversation.final or Generation("", 0, False)
        extra = {"tool_calls": conversation.calls, "tool_errors": conversation.errors,
                 "tool_turns": conversation.turns, "cut_by_turn_limit": conversation.cut_by_turn_limit,
                 "transcript": "".join(conversation.transcript)}
        return Generation(final.text, conversation.used, final.stopped, extra)


def with_tools(backend: Any, tools: Sequence[Callable[..., Any]], max_turns: int, opener: str = "",
               template: str = "auto") -> ToolBackend:
    """``backend`` decoding conversations with ``tools``, its tokenizer given a template that renders them."""
    from rlvr.tool_template import fit_tool_template

    fit_tool_template(backend.tokenizer, template)
    return ToolBackend(backend, tools, max_turns, opener)


def tool_suffix(tokenizer: Any, replies: list[dict[str, Any]]) -> str:
    """The text after a tool-calling turn's EOS up to the next assistant turn: TRL's ``_get_tool_suffix_ids``."""
    call = [{"type": "function", "function": {"name": replies[0]["name"], "arguments": {}}}]
    dummy = [{"role": "user", "content": "dummy"}, {"role": "assistant", "content": "", "tool_calls": call}]
    before = tokenizer.apply_chat_template(dummy, tokenize=False)
    after = tokenizer.apply_chat_template(dummy + replies, tokenize=False, add_generation_prompt=True)
    cut = before.rfind(tokenizer.eos_token)
    before = before[: cut + len(tokenizer.eos_token)] if cut >= 0 else before
    if not after.startswith(before):
        raise ValueError("the chat template does not render a tool reply after the call it answers")
    return after[len(before):]
