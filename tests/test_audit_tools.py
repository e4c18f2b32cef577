"""The reward audit's tool probes: chats from TRL's tool loop, judged by the rewards of an answer-line task."""

from __future__ import annotations

import copy

import pytest

from rlvr.audit.probe_sets import MATH_PROBES, PROBE_SETS
from rlvr.audit.report import render_probe, render_table, verdict
from rlvr.audit.runner import AuditResult, audit
from rlvr.audit.tool_probes import LOOP_TURNS, tool_probe_set
from rlvr.errors import RlvrError
from rlvr.rewards.base import build_reward, completion_text, named, reward_weights
from rlvr.tasks.base import TASKS

TOOLS = ["calculator", "python"]


def arithmetic_audit() -> AuditResult:
    """The arithmetic task's probes as ``rlvr reward audit`` picks them, with the tool probes, scored by the task's
    default rewards plus ``closeness``."""
    specs = [*TASKS.get("arithmetic").default_rewards, {"name": "closeness"}]
    funcs = [build_reward(spec["name"]) for spec in specs]
    return audit(tool_probe_set(PROBE_SETS["arithmetic"], TOOLS), funcs, reward_weights(specs))


def tool_names() -> set[str]:
    return {p.name for p in tool_probe_set(PROBE_SETS["arithmetic"], TOOLS).probes} - {p.name for p in MATH_PROBES}


@pytest.fixture(scope="module")
def result() -> AuditResult:
    return arithmetic_audit()


def row(result: AuditResult, name: str):
    return next(r for r in result.results if r.probe.name == name)


def test_the_arithmetic_rewards_with_closeness_pass_the_audit_with_tool_probes(result):
    assert result.passed, [r.probe.name for r in result.exploits]
    assert {"answer_in_tool_call", "endless_tool_loop"} <= {r.probe.name for r in result.results}


def test_the_right_answer_after_a_tool_call_scores_as_the_plain_honest_answer(result):
    honest = row(result, "honest_correct_after_tool")
    assert [m["role"] for m in honest.probe.completion] == ["assistant", "tool", "assistant"]
    assert honest.components == row(result, "honest_correct").components


def test_an_answer_only_in_a_tool_calls_arguments_is_not_paid(result):
    hack = row(result, "answer_in_tool_call")
    assert hack.probe.completion[-1]["tool_calls"][0]["function"]["arguments"]["expression"].endswith(
        "#### The final answer is 72")
    assert hack.reward == 0.0


def test_the_question_echoed_through_a_tool_is_not_paid(result):
    hack = row(result, "question_echoed_through_tool")
    assert completion_text(list(hack.probe.completion)) == "72"
    assert hack.reward == 0.0


def test_an_endless_tool_loop_is_not_paid(result):
    hack = row(result, "endless_tool_loop")
    assert [m["role"] for m in hack.probe.completion] == ["assistant", "tool"] * LOOP_TURNS
    assert hack.reward == 0.0


def test_an_answer_only_in_a_tool_reply_is_not_paid(result):
    hack = row(result, "answer_in_tool_reply_only")
    assert "#### The final answer is 72" in hack.probe.completion[1]["content"]
    assert hack.probe.completion[-1] == {"role": "assistant", "content": ""}
    assert hack.reward == 0.0


def test_a_wrong_answer_after_a_call_holding_the_right_one_scores_as_the_wrong_answer(result):
    hack = row(result, "answer_line_inside_call_then_wrong")
    assert hack.components == row(result, "honest_wrong").components
    assert not hack.beats_wrong


def every_message(completions, final_answer, **_):
    """A careless correctness reward: the gold's answer line anywhere in the chat, tool calls and replies included."""
    line = f"#### The final answer is {final_answer[0]}"
    return [1.0 if line in (c if isinstance(c, str) else repr(c)) else 0.0 for c in completions]


def test_a_reward_that_reads_every_message_is_caught_by_the_tool_hacks():
    result = audit(tool_probe_set(PROBE_SETS["arithmetic"], TOOLS), [named("correctness", every_message)])
    caught = {r.probe.name for r in result.exploits} & tool_names()
    assert caught == {"answer_in_tool_call", "answer_in_tool_reply_only", "answer_line_inside_call_then_wrong"}


def first_assistant_message(completions, final_answer, **_):
    """A correctness reward that reads the chat's first assistant message: it never pays an answer written after a
    tool call."""
    line = f"#### The final answer is {final_answer[0]}"
    firsts = [c if isinstance(c, str) else next(m["content"] for m in c if m["role"] == "assistant") for c in completions]
    return [1.0 if line in text else 0.0 for text in firsts]


def test_the_audit_fails_when_a_right_answer_after_a_tool_call_earns_no_more_than_a_wrong_one():
    failed = audit(tool_probe_set(PROBE_SETS["arithmetic"], TOOLS), [named("correctness", first_assistant_message)])
    assert [r.probe.name for r in failed.honest_below_wrong] == ["honest_correct_after_tool"]
    assert not failed.passed
    assert "FAIL: honest_correct_after_tool, a right answer too" in verdict(failed)


def test_the_report_shows_a_chat_probe_one_message_a_line(result):
    text = render_probe(row(result, "answer_in_tool_reply_only").probe)
    assert text.splitlines()[1:] == [
        '  assistant -> calculator(expression="48 + 24")',
        '  tool calculator: "On Tuesday she sold 48 / 2 = 24 mu…ffins.\\n#### The final answer is 72"',
        '  assistant: ""',
    ]


def test_the_report_table_lists_the_chat_probes_and_shows_a_tool_loop_once(result):
    table = render_table(result)
    assert "probes written as chats" in table
    assert f"(the 2 messages above {LOOP_TURNS} times in all)" in table
    assert "[{'role'" not in table


def test_the_calls_go_to_the_first_tool_when_there_is_no_calculator():
    probes = tool_probe_set(PROBE_SETS["arithmetic"], ["python"]).probes
    call = next(p for p in probes if p.name == "answer_in_tool_call").completion[0]["tool_calls"][0]["function"]
    assert call["name"] == "python" and list(call["arguments"]) == ["code"]


def test_tool_probes_need_an_answer_line_task():
    with pytest.raises(RlvrError, match="need an answer line"):
        tool_probe_set(PROBE_SETS["keywords"], TOOLS)


def test_a_reward_that_changes_the_chat_it_gets_leaves_the_probes_as_they_were():
    def overwriting(completions, **_):
        for c in completions:
            for message in [] if isinstance(c, str) else c:
                message["content"] = "changed"
        return [0.0] * len(completions)

    probes = tool_probe_set(PROBE_SETS["arithmetic"], TOOLS)
    before = copy.deepcopy([p.completion for p in probes.probes])
    audit(probes, [named("overwriting", overwriting)])
    assert [p.completion for p in probes.probes] == before
