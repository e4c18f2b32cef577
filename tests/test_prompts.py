"""The published prompt format, byte for byte, and exemplar sampling."""

import pytest

from rlvr.errors import RlvrError
from rlvr.tasks.exemplars import BUILTIN_EXEMPLARS
from rlvr.tasks.prompts import Exemplar, choose_exemplars, render_chat, render_prompt


def test_zero_shot_prompt_is_the_question_and_the_cot_lead():
    assert render_prompt("What is 2+2?", []) == "Question: What is 2+2?\nSolution: Let's think step by step."


def test_exemplars_render_in_the_published_format():
    shot = Exemplar("Q1?", "R1.", "7")
    expected = (
        "Question: Q1?\nSolution: Let's think step by step. R1.\n#### The final answer is 7\n\n"
        "Question: T?\nSolution: Let's think step by step."
    )
    assert render_prompt("T?", [shot]) == expected


def test_the_eight_builtin_exemplars_have_the_published_answers():
    assert [e.answer for e in BUILTIN_EXEMPLARS] == ["45", "50", "39", "12", "28", "8", "6", "15"]


def test_eight_shots_use_every_exemplar_in_order():
    assert choose_exemplars(BUILTIN_EXEMPLARS, 8, seed=1, index=5) == BUILTIN_EXEMPLARS


def test_exemplar_sampling_is_reproducible_from_the_seed():
    first = choose_exemplars(BUILTIN_EXEMPLARS, 3, seed=7, index=11)
    assert first == choose_exemplars(BUILTIN_EXEMPLARS, 3, seed=7, index=11)
    others = {tuple(e.answer for e in choose_exemplars(BUILTIN_EXEMPLARS, 3, seed=s, index=11)) for s in range(20)}
    assert len(others) > 1


@pytest.mark.parametrize("shots", [-1, 9, 2.5, "4", True])
def test_shots_outside_zero_to_eight_are_refused(shots):
    with pytest.raises(RlvrError, match="shots must be an integer from 0 to 8"):
        choose_exemplars(BUILTIN_EXEMPLARS, shots, seed=0, index=0)


def test_chat_prompts_end_with_the_question_as_a_user_turn():
    messages = render_chat("T?", [Exemplar("Q1?", "R1.", "7")])
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"].endswith("#### The final answer is 7")
    assert messages[-1]["content"].endswith("Question: T?")
