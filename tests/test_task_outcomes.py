"""Each task decides what "correct" means: Task.judge, the verdicts read off reward components, shown answers."""

from __future__ import annotations

import pytest

from rlvr.audit.keyword_probes import KEYWORD_PROBES
from rlvr.tasks import TASKS, get_task
from rlvr.tasks.base import Outcome

WORKED = "She has 3 + 4 = 7 apples.\n#### The final answer is 7"
ADD_TESTS = ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(0, 0) == 0"]
HONEST_ADD = "```python\ndef add(a, b):\n    return a + b\n```"


@pytest.fixture(scope="module")
def mbpp():
    task = get_task("mbpp", {"timeout": 2.0})
    yield task
    task.close()


# ------------------------------------------------------------------ math


@pytest.mark.parametrize("name", ["gsm8k", "arithmetic"])
def test_math_tasks_judge_by_the_answer_verifier(name):
    task = get_task(name)
    outcomes = task.judge([WORKED, "3 + 4 = 8.\n#### The final answer is 8", "7"], [{"final_answer": "7"}] * 3)
    assert [o.correct for o in outcomes] == [True, False, False]
    assert [o.score for o in outcomes] == [1.0, 0.0, 0.0]
    assert [o.answer for o in outcomes] == ["7", "8", None]
    assert {o.gold for o in outcomes} == {"7"}


def test_math_answer_without_reasoning_is_correct_but_not_well_formed():
    outcome = get_task("gsm8k").judge(["#### The final answer is 7"], [{"final_answer": "7"}])[0]
    assert outcome.correct and outcome.well_formed is False


def test_math_judge_reads_chat_completions_and_negative_golds():
    chat = [{"role": "assistant", "content": "It fell 9 degrees: 4 - 9 = -5.\n#### The final answer is -5"}]
    assert get_task("gsm8k").judge([chat], [{"final_answer": "-5"}])[0].correct


def test_math_judge_never_raises_on_unreadable_output():
    outcomes = get_task("gsm8k").judge([None, 12, {"content": None}], [{"final_answer": "7"}] * 3)
    assert not any(o.correct for o in outcomes)


def test_math_shown_answer_is_the_number_on_the_answer_line():
    task = get_task("gsm8k")
    assert task.shown_answer("x\n#### The final answer is 1,200.50") == "1200.5"
    assert task.shown_answer("x\n#### The final answer is 5 or 6") == "#### The final answer is 5 or 6"
    assert task.shown_answer("no answer line") is None


# ------------------------------------------------------------------ code


def test_code_is_correct_only_when_every_test_passes(mbpp):
    partial = "```python\ndef add(a, b):\n    return 4\n```"
    outcomes = mbpp.judge([HONEST_ADD, partial, "```python\ndef add(a, b)\n```"], [{"test_list": ADD_TESTS}] * 3)
    assert [o.correct for o in outcomes] == [True, False, False]
    assert outcomes[1].score == pytest.approx(1 / 3)
    assert outcomes[1].details["tests"] == [False, True, False]
    assert outcomes[2].details["status"] == "syntax_error" and outcomes[2].well_formed is False


def test_code_program_that_runs_but_fails_every_test_is_not_correct(mbpp):
    outcome = mbpp.judge(["```python\ndef add(a, b):\n    return None\n```"], [{"test_list": ADD_TESTS}])[0]
    assert not outcome.correct and outcome.well_formed and outcome.score == 0.0
    assert outcome.details["reward"] > 0  # the training reward's partial credit is not correctness


def test_code_outcome_shows_the_program_and_the_tests(mbpp):
    outcome = mbpp.judge([HONEST_ADD], [{"test_list": ADD_TESTS}])[0]
    assert "return a + b" in outcome.answer
    assert outcome.gold == "\n".join(ADD_TESTS)


def test_humaneval_judges_prompt_plus_completion(mbpp):
    row = {"prompt": "def add(a, b):\n", "code_prefix": "def add(a, b):\n", "entry_point": "add",
           "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(0, 0) == 0\n"}
    task = get_task("humaneval", {"timeout": 2.0})
    try:
        outcome = task.judge(["    return a + b\n"], [row])[0]
    finally:
        task.close()
    assert outcome.correct and outcome.answer.startswith("def add(a, b):")
    assert outcome.gold.startswith("def check")


def test_code_row_without_tests_is_not_correct(mbpp):
    outcome = mbpp.judge([HONEST_ADD], [{"test_list": []}])[0]
    assert not outcome.correct and outcome.details["status"] == "no_tests"


# ------------------------------------------------------------------ keywords


def test_keywords_correct_only_at_full_rubric_credit():
    task = get_task("keywords")
    probes = {p.name: p.completion for p in KEYWORD_PROBES}
    outcomes = task.judge([probes["honest_correct"], probes["honest_wrong"]], [{"rubric": ""}] * 2)
    assert [o.correct for o in outcomes] == [True, False]
    assert outcomes[0].score == 1.0 and 0 < outcomes[1].score < 1
    assert "missing" in outcomes[1].answer and outcomes[1].gold.startswith("rubric ")
    assert outcomes[1].details["groups"]


# ------------------------------------------------------------------ verdicts from reward components


@pytest.mark.parametrize(
    ("name", "rewards", "correct"),
    [
        ("gsm8k", {"format": 1.0, "correctness": 1.0}, True),
        ("gsm8k", {"format": 1.0, "correctness": 0.0}, False),
        ("mbpp", {"code_execution": 1.0}, True),
        ("mbpp", {"code_execution": 0.25}, False),  # runs, passes nothing: not correct
        ("mbpp", {"code_execution": 0.999}, False),
        ("keywords", {"keywords": 1.0}, True),
        ("keywords", {"keywords": 0.75}, False),
    ],
)
def test_verdict_read_off_raw_reward_components(name, rewards, correct):
    assert get_task(name).correct_from_rewards(rewards) is correct


def test_verdict_is_unknown_without_the_deciding_reward():
    assert get_task("gsm8k").correct_from_rewards({"format": 1.0, "intermediate_steps": 0.5}) is None
    assert get_task("gsm8k").correct_from_rewards({"correctness": None}) is False


def test_form_read_off_raw_reward_components():
    assert get_task("gsm8k").well_formed_from_rewards({"format": 1.0}) is True
    assert get_task("mbpp").well_formed_from_rewards({"code_execution": 0.25}) is True
    assert get_task("keywords").well_formed_from_rewards({"keywords": 1.0}) is None


# ------------------------------------------------------------------ declarations


def test_every_task_declares_how_it_is_judged():
    for name in TASKS.names():
        cls = TASKS.get(name)
        assert cls.accuracy_name and cls.judged_by, name
        assert cls.takes_shots == ("shots" in cls.__dataclass_fields__), name


def test_outcome_is_json_ready():
    assert Outcome(True, 1.0, "7", "7", True).to_json() == {
        "correct": True, "score": 1.0, "answer": "7", "gold": "7", "well_formed": True, "details": {}}


def test_the_next_question_marker_is_the_math_tasks_not_the_backends():
    from rlvr.evaluation.backends import drop_suffixes

    marker = get_task("gsm8k").stop_strings
    assert marker == ["\nQuestion:"] and get_task("mbpp").stop_strings == [] and get_task("keywords").stop_strings == []
    assert drop_suffixes("3 + 4 = 7.\n#### The final answer is 7\nQuestion:", marker) == "3 + 4 = 7.\n#### The final answer is 7"
    assert drop_suffixes("print('Question:')\nQuestion:", []) == "print('Question:')\nQuestion:"
