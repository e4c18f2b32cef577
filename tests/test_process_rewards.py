"""The reasoning-required penalty and partial credit for GSM8K's intermediate steps."""

import pytest

from rlvr.errors import RlvrError
from rlvr.rewards.base import build_reward, reward_weights
from rlvr.rewards.process import step_credit, step_results

REFERENCE = (
    "She sold 48/2 = <<48/2=24>>24 muffins on Tuesday.\n"
    "She sold 48+24 = <<48+24=72>>72 muffins on the two days.\n#### 72"
)


def test_reasoning_required_scores_minus_one_for_an_answer_line_with_nothing_before_it():
    reward = build_reward("reasoning_required")
    completions = ["#### The final answer is 72", "24 + 48 = 72\n#### The final answer is 72", "72 muffins"]
    assert reward(completions) == [-1.0, 0.0, 0.0]


def test_reasoning_required_minimum_length_is_configurable():
    reward = build_reward("reasoning_required", {"min_chars": 10})
    assert reward(["72\n#### The final answer is 72"]) == [-1.0]


def test_reasoning_required_costs_half_a_point_by_default():
    assert reward_weights([{"name": "reasoning_required"}]) == [0.5]


def test_reasoning_required_has_no_penalty_parameter_any_more():
    with pytest.raises(RlvrError, match="no parameter 'penalty'"):
        build_reward("reasoning_required", {"penalty": -0.5})


def test_step_results_reads_the_calculator_annotations():
    assert step_results(REFERENCE) == [24.0, 72.0]
    assert step_results("no annotations\n#### 3") == []


def test_intermediate_steps_rewards_the_share_of_reference_results_in_the_reasoning():
    reward = build_reward("intermediate_steps")
    completions = [
        "In May 48 / 2 = 24. Total 48 + 24 = 72.\n#### The final answer is 72",
        "In May 48 / 2 = 24. Total 48 + 24 = 70.\n#### The final answer is 70",
        "She sold 50.\n#### The final answer is 72",
    ]
    scores = reward(completions, reference_solution=[REFERENCE] * 3)
    assert scores == pytest.approx([1.0, 0.5, 0.0])
    assert reward_weights([{"name": "intermediate_steps"}]) == [0.3]


def test_intermediate_steps_ignores_numbers_after_the_answer_line():
    assert step_credit("Hmm.\n#### The final answer is 70\n24 72", REFERENCE) == 0.0


def test_number_spam_earns_no_step_credit():
    spam = " ".join(str(n) for n in range(100))
    assert step_credit(f"{spam}\n#### The final answer is 72", REFERENCE) == 0.0


def test_rows_without_annotations_earn_no_step_credit():
    reward = build_reward("intermediate_steps")
    assert reward(["24 72\n#### The final answer is 72"], reference_solution=["#### 72"]) == [0.0]
