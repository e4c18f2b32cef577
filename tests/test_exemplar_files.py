"""Exemplars from a JSONL file, in file order, and one fixed exemplar order for every row (the published prompt)."""

import json
import re
from pathlib import Path

import pytest

from rlvr.errors import RlvrError
from rlvr.tasks import get_task
from rlvr.tasks.exemplars import load_exemplars

EXEMPLARS = Path(__file__).parent / "data" / "published_format_exemplars.jsonl"
#: The published prompt: one exemplar order for every row, rendered as the published code rendered it.
PUBLISHED = {"exemplar_order": "fixed", "prompt_format": "published"}


def published_example(question, solution, answer):
    """The published recipe's ``GSM8K.format_example`` with ``cot=True``, restated: reasoning lines joined with
    '. ', calculator annotations removed, a period appended, every '..' collapsed, then the answer line."""
    text = f"Question: {question}\nSolution: Let's think step by step. "
    if solution is not None:
        solution = re.sub(r"<<.*?>>", "", ". ".join(solution.split("\n")))
        text += f"{solution}.\n"
    text = text.replace("..", ".")
    if answer is not None:
        text += f"#### The final answer is {answer}\n\n"
    return text


def published_prompt(question, exemplars):
    """The published prompt: the few-shot prefix built once (in the order the exemplars were drawn), then the
    test question without reasoning or answer."""
    prefix = "".join(published_example(e["question"], e["reasoning"], e["answer"]) for e in exemplars)
    return prefix + published_example(question, None, None)


def file_rows():
    return [json.loads(line) for line in EXEMPLARS.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("shots", [0, 2, 4, 8])
def test_a_fixed_order_exemplar_file_renders_the_published_prompt_byte_for_byte(gsm8k_dir, shots):
    options = {"data": str(gsm8k_dir), "shots": shots, "exemplars": str(EXEMPLARS), **PUBLISHED}
    rows = get_task("gsm8k", options).load("test")
    for row in rows:
        assert row["prompt"] == published_prompt(row["question"], file_rows()[:shots])


def test_the_published_two_shot_prompt_written_out(gsm8k_dir):
    options = {"data": str(gsm8k_dir), "shots": 2, "exemplars": str(EXEMPLARS), **PUBLISHED}
    prompt = get_task("gsm8k", options).load("test")[0]["prompt"]
    assert prompt == (
        "Question: A baker fills 6 trays with 9 rolls each. How many rolls does he bake?\n"
        "Solution: Let's think step by step. Each tray holds 9 rolls and there are 6 trays, so he bakes 6 * 9 = 54 rolls.\n"
        "#### The final answer is 54\n"
        "\n"
        "Question: A garden has 72 tulips and daisies. If 27 are tulips, how many are daisies?\n"
        "Solution: Let's think step by step. We subtract the tulips from the total flowers, so the number of daisies "
        "is 72 - 27 = 45.\n"
        "#### The final answer is 45\n"
        "\n"
        "Question: A garden has 3 beds with 8 roses in each. How many roses are there?\n"
        "Solution: Let's think step by step. "
    )


def test_multi_line_reasoning_is_rendered_as_the_published_code_rendered_it(tmp_path, gsm8k_dir):
    path = tmp_path / "ex.jsonl"
    reasoning = "She has 3 * 4 = <<3*4=12>>12 apples.\nShe eats 2, so 12 - 2 = <<12-2=10>>10 are left."
    path.write_text(json.dumps({"question": "Q?", "reasoning": reasoning, "answer": "10"}) + "\n")
    options = {"data": str(gsm8k_dir), "shots": 1, "exemplars": str(path), **PUBLISHED}
    row = get_task("gsm8k", options).load("test")[0]
    assert row["prompt"] == published_prompt(row["question"], [{"question": "Q?", "reasoning": reasoning, "answer": "10"}])
    assert row["prompt"].startswith(
        "Question: Q?\nSolution: Let's think step by step. She has 3 * 4 = 12 apples. She eats 2, so 12 - 2 = 10 are left.\n"
    )


def test_the_published_prompt_format_is_plain_text_only(gsm8k_dir):
    with pytest.raises(RlvrError, match="cannot be combined with chat"):
        get_task("gsm8k", {"data": str(gsm8k_dir), "prompt_format": "published", "chat": True})


def test_fixed_order_gives_every_row_the_same_exemplars(gsm8k_dir):
    options = {"data": str(gsm8k_dir), "shots": 3, "exemplars": str(EXEMPLARS), "exemplar_order": "fixed"}
    prompts = get_task("gsm8k", options).load("train")["prompt"]
    assert len({p[: p.rindex("Question: ")] for p in prompts}) == 1


def test_per_row_order_draws_different_exemplars_for_different_rows(gsm8k_dir):
    options = {"data": str(gsm8k_dir), "shots": 3, "exemplars": str(EXEMPLARS)}
    prompts = get_task("gsm8k", options).load("train")["prompt"]
    assert len({p[: p.rindex("Question: ")] for p in prompts}) > 1


def test_a_file_keeps_its_order_and_its_texts():
    exemplars = load_exemplars(EXEMPLARS)
    assert [e.answer for e in exemplars] == ["54", "45", "52", "70", "33", "8", "9", "18"]
    assert exemplars[7].reasoning == "She started with $80 and spent $62. So, $80 - $62 = $18."


def test_numeric_answers_in_a_file_are_read_as_text(tmp_path):
    path = tmp_path / "ex.jsonl"
    path.write_text(json.dumps({"question": "Q?", "reasoning": "R.", "answer": 12}) + "\n")
    assert load_exemplars(path)[0].answer == "12"


def test_a_missing_exemplar_file_is_one_clear_error(gsm8k_dir):
    with pytest.raises(RlvrError, match="no such file: 'nowhere.jsonl'"):
        get_task("gsm8k", {"data": str(gsm8k_dir), "exemplars": "nowhere.jsonl"})


def test_a_line_without_reasoning_is_named(tmp_path, gsm8k_dir):
    path = tmp_path / "ex.jsonl"
    path.write_text(json.dumps({"question": "Q?", "answer": "1"}) + "\n")
    with pytest.raises(RlvrError, match=r"ex.jsonl:1: missing field 'reasoning'"):
        get_task("gsm8k", {"data": str(gsm8k_dir), "shots": 1, "exemplars": str(path)}).load("test")


def test_an_empty_reasoning_is_refused(tmp_path):
    path = tmp_path / "ex.jsonl"
    path.write_text(json.dumps({"question": "Q?", "reasoning": " ", "answer": "1"}) + "\n")
    with pytest.raises(RlvrError, match="exemplar 1: 'reasoning' must be non-empty"):
        load_exemplars(path)


def test_more_shots_than_the_file_holds_is_refused(tmp_path, gsm8k_dir):
    path = tmp_path / "ex.jsonl"
    path.write_text(json.dumps({"question": "Q?", "reasoning": "R.", "answer": "1"}) + "\n")
    with pytest.raises(RlvrError, match="asks for 2 exemplars but .* holds 1"):
        get_task("gsm8k", {"data": str(gsm8k_dir), "shots": 2, "exemplars": str(path)}).load("test")


@pytest.mark.parametrize("task", ["gsm8k", "arithmetic"])
def test_an_unknown_exemplar_order_is_refused(task):
    with pytest.raises(RlvrError, match="exemplar_order must be one of per_row, fixed"):
        get_task(task, {"exemplar_order": "random"})
