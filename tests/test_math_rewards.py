"""format and correctness rewards: TRL's contract, raw scores (weights are TRL's), chat input, robustness."""

import pytest

from rlvr.errors import RlvrError
from rlvr.rewards import REWARDS, build_reward
from rlvr.tasks import get_task

GOOD = "Tom has 3 boxes of 15, so 3 * 15 = 45.\n#### The final answer is 45\n"


def test_format_scores_one_for_a_reasoned_answer_line():
    assert build_reward("format")([GOOD]) == [1.0]


def test_gsm8k_style_answer_line_earns_no_format_reward_but_can_be_correct():
    text = "3 * 15 = 45\n#### 45"
    assert build_reward("format")([text]) == [0.0]
    assert build_reward("correctness")([text], final_answer=["45"]) == [1.0]


def test_answer_without_reasoning_earns_no_format_reward():
    assert build_reward("format")(["#### The final answer is 45"]) == [0.0]


def test_correctness_pays_one_within_tolerance():
    reward = build_reward("correctness")
    assert reward(["x\n#### The final answer is 45.0004"], final_answer=["45"]) == [1.0]
    assert reward(["x\n#### The final answer is 45.01"], final_answer=["45"]) == [0.0]


def test_thousands_separators_and_negatives_in_gold_are_scored():
    reward = build_reward("correctness")
    texts = ["x\n#### The final answer is 1000", "x\n#### The final answer is -3"]
    assert reward(texts, final_answer=["1,000", "-3"]) == [1.0, 1.0]


def test_reward_functions_return_raw_scores_and_refuse_a_weight():
    with pytest.raises(RlvrError, match="reward_weights"):
        build_reward("format", {"weight": 2.0})


def test_default_weights_keep_the_published_scale():
    assert get_task("gsm8k").reward_weights() == [0.5, 1.0]
    assert get_task("gsm8k").reward_weights([{"name": "format"}, {"name": "correctness", "weight": 2.0}]) == [0.5, 2.0]


def test_chat_completions_use_the_last_assistant_message():
    chat = [{"role": "assistant", "content": "draft\n#### The final answer is 1"}, {"role": "assistant", "content": GOOD}]
    assert build_reward("correctness")([chat], final_answer=["45"]) == [1.0]
    assert build_reward("format")([chat]) == [1.0]


@pytest.mark.parametrize("bad", [None, "", 3, [], [{"role": "user"}], {"content": None}, [[1, 2]]])
def test_malformed_output_scores_zero_and_never_raises(bad):
    assert build_reward("format")([bad]) == [0.0]
    assert build_reward("correctness")([bad], final_answer=["1"]) == [0.0]


def test_reward_functions_carry_their_names_for_trl_logging():
    assert build_reward("format").__name__ == "format"
    assert build_reward("correctness").__name__ == "correctness"


def test_unknown_reward_lists_the_valid_ones():
    with pytest.raises(RlvrError, match="Did you mean 'correctness'"):
        build_reward("corectness")


def test_unknown_reward_parameter_is_named():
    with pytest.raises(RlvrError, match="no parameter 'wieght'"):
        build_reward("format", {"wieght": 1})


def test_a_reward_parameter_of_the_wrong_type_is_one_clear_error():
    with pytest.raises(RlvrError, match="reward 'correctness': 'tolerance' must be a number, got 'tight'"):
        build_reward("correctness", {"tolerance": "tight"})


def test_a_reward_spec_passed_as_its_name_says_where_the_parameters_go():
    with pytest.raises(RlvrError, match="named by a string .* parameters go beside it"):
        build_reward({"name": "correctness", "tolerance": 0.1})


def test_a_whole_number_is_a_number_for_a_reward_parameter():
    reward = build_reward("correctness", {"tolerance": 1})
    assert reward(["#### The final answer is 10.5"], final_answer=["10"]) == [1.0]


def test_registry_lists_the_math_rewards():
    assert {"format", "correctness"} <= set(REWARDS.names())


def test_closeness_pays_in_full_for_the_answer_and_less_with_distance():
    from rlvr.rewards import build_reward

    closeness = build_reward("closeness", {})
    texts = ["1 - 9 = -8.\n#### The final answer is -8", "#### The final answer is -6", "#### The final answer is 8",
             "no answer", "#### The final answer is 5 or 6"]
    assert closeness(texts, final_answer=["-8"] * 5) == [1.0, 0.75, 0.0, 0.0, 0.0]


def test_closeness_scales_by_the_gold_magnitude_and_treats_zero_as_one():
    from rlvr.rewards import build_reward

    closeness = build_reward("closeness", {})
    assert closeness(["#### The final answer is 90", "#### The final answer is 1"], final_answer=["100", "0"]) == [0.9, 0.0]
