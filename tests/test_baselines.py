"""The constant-answer baseline: always giving the train split's most common answer."""

from rlvr.verifiers.answer_keys import constant_answer_accuracy, most_common_answer


def test_most_common_answer_compares_numbers_as_numbers():
    assert most_common_answer(["1,000", "1000", "7"]) == "1000"


def test_constant_answer_accuracy_is_the_share_of_items_with_that_answer():
    result = constant_answer_accuracy(["1", "1", "2"], ["1", "3", "1.0", "2"])
    assert result["answer"] == "1" and result["accuracy"] == 0.5 and result["n"] == 4


def test_no_train_answers_gives_no_constant_answer():
    assert constant_answer_accuracy([], ["1"])["answer"] is None
