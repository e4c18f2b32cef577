"""The pyfunc task: generated one-line functions, held out by description, judged by hidden asserts."""

from __future__ import annotations

import ast
import random
import re

import pytest

from rlvr.errors import RlvrError
from rlvr.tasks import get_task
from rlvr.tasks.pyfunc_templates import TEMPLATES, TESTS_PER_PROBLEM, make_problem

SMALL = {"train_size": 60, "validation_size": 20, "test_size": 30, "timeout": 2.0}


@pytest.fixture(scope="module")
def task():
    instance = get_task("pyfunc", SMALL)
    yield instance
    instance.close()


def expected_values(tests: list[str]) -> list[object]:
    return [ast.literal_eval(test.split(" == ", 1)[1]) for test in tests]


def test_splits_share_no_description(task):
    report = task.overlap()
    assert report["questions"] == {"test": 30, "validation": 20, "train": 60}
    assert set(report["shared"].values()) == {0}


def test_same_seed_same_problems_other_seed_others():
    first = get_task("pyfunc", SMALL).load("test")["question"]
    assert get_task("pyfunc", SMALL).load("test")["question"] == first
    assert get_task("pyfunc", {**SMALL, "seed": 7}).load("test")["question"] != first


def test_prompt_shows_the_first_assert_and_hides_the_rest(task):
    row = task.load("test")[0]
    content = row["prompt"][0]["content"]
    assert row["question"] in content and row["test_list"][0] in content
    assert len(row["test_list"]) == TESTS_PER_PROBLEM
    assert not any(test in content for test in row["test_list"][1:])


def test_completion_prompt_without_chat():
    row = get_task("pyfunc", {**SMALL, "chat": False}).load("test")[0]
    assert row["prompt"] == f'"""\n{row["question"]}\n{row["test_list"][0]}\n"""\n'


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t.name)
def test_hidden_asserts_tell_a_constant_answer_from_the_right_one(template):
    for seed in range(15):
        values = expected_values(make_problem(template, random.Random(seed))["test_list"])
        assert len({repr(v) for v in values}) > 1, (template.name, seed)


def test_a_correct_program_passes_and_one_fitted_to_the_shown_assert_does_not(task):
    add_n = next(t for t in TEMPLATES if t.name == "add_n")
    problem = make_problem(add_n, random.Random(3))
    k = int(re.search(r"plus (\d+)", problem["question"]).group(1))
    shown = problem["test_list"][0]
    fitted = f"```python\ndef add_n(x):\n    return {expected_values([shown])[0]}\n```"
    honest = f"```python\ndef add_n(x):\n    return x + {k}\n```"
    outcomes = task.judge([honest, fitted], [{"test_list": problem["test_list"]}] * 2)
    assert outcomes[0].correct and outcomes[0].score == 1.0
    assert not outcomes[1].correct and outcomes[1].score == 1 / TESTS_PER_PROBLEM


def test_string_and_list_problems_are_judged_by_their_asserts(task):
    rows = task.load("test")
    by_template = {row["template"]: row for row in rows}
    programs = {
        "starts_with": "def starts_with(s):\n    return s.startswith({c!r})",
        "keep_above": "def keep_above(xs):\n    return [x for x in xs if x > {c}]",
    }
    patterns = {"starts_with": r'starts with "(\w)"', "keep_above": r"greater than (\d+)"}
    assert set(programs) <= set(by_template)  # both are among the 30 test problems of seed 42
    for name, code in programs.items():
        row = by_template[name]
        constant = re.search(patterns[name], row["question"]).group(1)
        program = code.format(c=constant if name == "starts_with" else int(constant))
        assert task.judge([f"```python\n{program}\n```"], [row])[0].correct, row["question"]


def test_split_sizes_beyond_the_templates_fail_in_one_line():
    with pytest.raises(RlvrError, match="lower train_size"):
        get_task("pyfunc", {"train_size": 5000}).load("train")


def test_dataset_options_are_refused():
    with pytest.raises(RlvrError, match="no dataset or data option"):
        get_task("pyfunc", {"data": "some.jsonl"})


def test_the_pyfunc_recipe_trains_and_is_judged_on_test_problems(tiny_model_dir, tmp_path):
    import json

    from rlvr.config import load_recipe
    from rlvr.training.run import train

    recipe = load_recipe("code-functions-cpu-smollm2", [
        f"model.name_or_path={tiny_model_dir}", "task.chat=false", "task.train_size=8", "task.validation_size=4",
        "task.test_size=4", "grpo.max_steps=1", "grpo.per_device_train_batch_size=4", "grpo.num_generations=2",
        "grpo.max_completion_length=8", "grpo.report_to=[]", "run.test_items=4", "run.eval_max_new_tokens=8",
        "rewards=[{name: code_execution, timeout: 2.0, workers: 1}]", f"run.output_dir={tmp_path / 'out'}"])
    result = train(recipe, quiet=True)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert result.steps == 1 and "rewards/code_execution/mean" in str(result.log_history)
    assert summary["test"]["items"] == 4
