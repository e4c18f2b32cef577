"""The answer-line rules, one row per rule (see rlvr.verifiers.math)."""

import time

import pytest

from rlvr.verifiers.math import find_answer_line, parse_gold, parse_number, read_answer

REASONING = "She has 3 + 2 = 5 apples.\n"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("#### The final answer is 18", 18),
        ("#### 18", 18),
        ("   #### The final answer is 18", 18),
        ("#### The final answer is -7", -7),
        ("#### The final answer is +7", 7),
        ("#### The final answer is 3.25", 3.25),
        ("#### The final answer is -0.5", -0.5),
        ("#### The final answer is .5", 0.5),
        ("#### The final answer is 1,000", 1000),
        ("#### The final answer is 1,234,567.89", 1234567.89),
        ("#### The final answer is $18", 18),
        ("#### The final answer is -$18.50", -18.5),
        ("#### The final answer is $-18.50", -18.5),
        ("#### The final answer is €12", 12),
        ("#### The final answer is £12", 12),
        ("#### The final answer is 3/4", 0.75),
        ("#### The final answer is -3/4", -0.75),
        ("#### The final answer is 50%", 50),
        ("#### The final answer is 18 dollars.", 18),
        ("#### The final answer is 18 apples per day", 18),
        ("#### The final answer is 18.", 18),
        ("#### The final answer is: 18", 18),
        ("#### the final answer is 18", 18),
        ("#### The final answer is \u22127", -7),
        ("#### The final answer is **18**", 18),
        ("#### **The final answer is 18**", 18),
        ("#### The final answer is `18`", 18),
        ("#### The final answer is \\boxed{18}", 18),
        ("#### The final answer is \\(\\boxed{-3/4}\\)", -0.75),
        ("#### The final answer is \\$18", 18),
    ],
)
def test_one_number_on_the_answer_line_is_the_answer(line, expected):
    answer = read_answer(REASONING + line)
    assert answer is not None and answer.value == pytest.approx(expected)


@pytest.mark.parametrize(
    "line",
    [
        "#### The final answer is 5 or 6",
        "#### The final answer is 3 + 2 = 5",
        "#### The final answer is 5, 7, 9",
        "#### The final answer is 1 1/2",
        "#### The final answer is x = 5",
        "#### The final answer is five",
        "#### The final answer is",
        "####",
        "#### The final answer is 1,00",
        "#### The final answer is 12,34",
        "#### The final answer is 3.14.15",
        "#### The final answer is 5-6",
        "#### The final answer is 10^3",
        "#### The final answer is 1/0",
        "#### The final answer is **5** or **6**",
        "#### The final answer is \\boxed{5} \\boxed{6}",
    ],
)
def test_zero_or_several_numbers_give_no_answer(line):
    answer = read_answer(REASONING + line)
    assert answer is not None and answer.value is None


def test_the_first_answer_line_counts_and_the_rest_is_ignored():
    answer = read_answer("Reasoning.\n#### The final answer is 4\n#### The final answer is 5\n")
    assert answer.value == 4


def test_a_hash_mark_inside_a_line_is_not_an_answer_line():
    assert read_answer("The total is #### 5") is None


def test_no_answer_line_means_no_answer():
    assert read_answer("The answer is 5.") is None


def test_the_phrase_is_recorded_for_the_format_reward():
    assert read_answer("x\n#### The final answer is 5").has_phrase
    assert not read_answer("x\n#### 5").has_phrase


def test_reasoning_must_precede_the_answer_line():
    assert read_answer("We add.\n#### The final answer is 5").has_reasoning_before
    assert not read_answer("#### The final answer is 5").has_reasoning_before
    assert not read_answer("   \n\n#### The final answer is 5").has_reasoning_before


@pytest.mark.parametrize(
    ("gold", "expected"),
    [("18", 18), ("1,000", 1000), ("-3", -3), (" 42 ", 42), ("#### 72", 72), ("Some work.\n#### 1,250", 1250), (7, 7), (2.5, 2.5)],
)
def test_ground_truth_is_parsed_with_the_same_grammar(gold, expected):
    assert parse_gold(gold) == pytest.approx(expected)


@pytest.mark.parametrize("gold", [None, "", "n/a", True, [], {"a": 1}, float("nan")])
def test_unreadable_ground_truth_is_none(gold):
    assert parse_gold(gold) is None


@pytest.mark.parametrize("text", [None, 12, b"#### 5", ["#### 5"]])
def test_non_text_input_never_raises(text):
    assert read_answer(text) is None
    assert parse_number(text) is None


def test_huge_numbers_are_rejected_not_raised():
    assert parse_number("9" * 5000) is None or parse_number("9" * 5000) > 0


@pytest.mark.parametrize(
    "text",
    [
        "a" * 1_000_000,
        "\n" * 1_000_000,
        " " * 1_000_000 + "#",
        "x\n#### " + " " * 1_000_000 + "#",
        "x\n#### " + "1 " * 500_000,
        "x\n#### " + "1" * 1_000_000,
        "x\n#### " + "1," * 500_000,
        "#" * 1_000_000,
        "x\n####" + "-$" * 500_000,
        "x\n#### " + "a" * 1_000_000,
    ],
    ids=lambda text: f"{len(text)}-chars-{text[:8]!r}",
)
def test_a_megabyte_of_hostile_output_never_hangs(text):
    # A hang guard, not a speed measurement (benchmarks/verifier_speed.py measures speed): catastrophic
    # regex backtracking on these inputs would take hours, a linear scan takes milliseconds.
    start = time.perf_counter()
    answer = read_answer(text)
    assert answer is None or answer.value is None or isinstance(answer.value, float)
    assert time.perf_counter() - start < 30


def test_find_answer_line_splits_reasoning_from_the_line():
    before, line = find_answer_line("a\nb\n  #### 5  \nc")
    assert before == "a\nb\n" and line == "#### 5"


def test_markup_around_the_phrase_still_counts_as_the_published_format():
    answer = read_answer(REASONING + "#### **The final answer is** 18")
    assert answer is not None and answer.has_phrase and answer.value == 18
