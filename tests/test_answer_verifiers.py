"""The file task's verifiers: each reads the first '####' line and judges it against the gold."""

import pytest

from rlvr.errors import RlvrError
from rlvr.verifiers.answers import answer_text, choice_letter, normalize_answer
from rlvr.verifiers.select import build_verifier


def line(answer: str) -> str:
    return f"Some reasoning.\n#### The final answer is {answer}\n"


def test_math_verifier_accepts_a_number_within_tolerance():
    verifier = build_verifier("math")
    assert verifier.verify(line("1,000"), "1000", {}).score == 1.0
    assert verifier.verify(line("999"), "1000", {}).score == 0.0
    assert verifier.verify(line("5 or 6"), "5", {}).score == 0.0


def test_exact_verifier_normalises_case_space_markup_and_final_period():
    verifier = build_verifier("exact")
    assert verifier.verify(line("**New  York**."), "new york", {}).score == 1.0
    assert verifier.verify(line('"Paris"'), "Paris", {}).score == 1.0
    assert verifier.verify(line("Paris, France"), "Paris", {}).score == 0.0


def test_exact_verifier_reads_only_the_first_answer_line():
    verifier = build_verifier("exact")
    hedged = "#### The final answer is Rome\n#### The final answer is Paris\n"
    assert verifier.verify(hedged, "Paris", {}).score == 0.0


def test_choice_verifier_reads_one_option_letter_in_its_usual_forms():
    verifier = build_verifier("choice")
    for written in ("B", "(B)", "B.", "B) the second option", "Option B", "b"):
        assert verifier.verify(line(written), "B", {}).score == 1.0, written
    assert verifier.verify(line("A or B"), "B", {}).score == 0.0
    assert verifier.verify(line("a cat"), "A", {}).well_formed is False


def test_choice_letter_rejects_words():
    assert choice_letter("Because") is None and choice_letter("C") == "C"


def test_regex_verifier_compares_the_first_match_or_its_group():
    verifier = build_verifier(r"regex:([A-Z]{3})\b")
    assert verifier.verify(line("The code is LAX today"), "lax", {}).score == 1.0
    assert verifier.verify(line("no code here"), "LAX", {}).well_formed is False


def test_invalid_regex_is_one_line_error():
    with pytest.raises(RlvrError, match="not a valid regular expression"):
        build_verifier("regex:(unclosed")


def test_unknown_verifier_names_the_closest():
    with pytest.raises(RlvrError, match="Did you mean 'exact'"):
        build_verifier("exakt")


def test_answer_text_without_answer_line_is_none():
    assert answer_text("just words") == (None, False)
    assert answer_text("#### 42.") == ("42", False)


def test_normalize_answer_folds_unicode_and_case():
    assert normalize_answer("  ＡＢＣ  def ") == normalize_answer("abc DEF")


def test_user_checker_verdicts_bool_and_partial_credit(tmp_path):
    checker = tmp_path / "check.py"
    checker.write_text(
        "def exact(completion, row):\n    return row['a'] in completion\n"
        "def half(completion, row):\n    return 0.5\n"
        "def boom(completion, row):\n    raise ValueError('cannot read')\n"
        "def bad(completion, row):\n    return 'yes'\n"
    )
    assert build_verifier(f"{checker}:exact").verify(line("7"), "7", {"a": "7"}).score == 1.0
    assert build_verifier(f"{checker}:half").verify(line("7"), "7", {}).score == 0.5
    raised = build_verifier(f"{checker}:boom").verify(line("7"), "7", {})
    assert raised.score == 0.0 and "ValueError: cannot read" in raised.error
    wrong_type = build_verifier(f"{checker}:bad").verify(line("7"), "7", {})
    assert wrong_type.score == 0.0 and "True/False or a number" in wrong_type.error
