"""Held-out means held out: no question is shared between a task's train, validation and test splits."""

import pytest
from conftest import FIXTURE_PROBLEMS, FIXTURE_TEST_PROBLEMS, write_jsonl

from rlvr.config import builtin_recipes, load_recipe
from rlvr.errors import RlvrError
from rlvr.tasks import get_task
from rlvr.tasks.splits import disjoint_rows, normalize_question


def _gsm8k_with_overlaps(tmp_path):
    """Train repeats two test questions (one with other spacing and case) and one train question."""
    train = list(FIXTURE_PROBLEMS) + [FIXTURE_TEST_PROBLEMS[0], (FIXTURE_TEST_PROBLEMS[1][0].upper() + "  ", "x\n#### 45")]
    train.append(FIXTURE_PROBLEMS[0])
    write_jsonl(tmp_path / "train.jsonl", [{"question": q, "answer": a} for q, a in train])
    write_jsonl(tmp_path / "test.jsonl", [{"question": q, "answer": a} for q, a in FIXTURE_TEST_PROBLEMS])
    return str(tmp_path)


def _mbpp_with_overlaps(tmp_path):
    """Task ids in each MBPP split; the train and validation ones repeat a test problem's text."""
    def row(task_id, text):
        return {"task_id": task_id, "text": text, "test_list": [f"assert f({task_id}) == {task_id}"], "code": ""}

    rows = [row(11, "Write a function that returns its argument."), row(12, "Write a function that doubles a number."),
            row(511, "write a function that returns its argument. "), row(512, "Write a function that halves a number."),
            row(601, "Write a function that doubles a number."), row(602, "Write a function that squares a number.")]
    return str(write_jsonl(tmp_path / "mbpp.jsonl", rows))


def _local_task_options(recipe, tmp_path):
    """A built-in recipe's task settings, with hub data replaced by small local files that plant overlaps."""
    options = dict(recipe.task_options)
    if recipe.task_name == "gsm8k":
        options["data"] = _gsm8k_with_overlaps(tmp_path)
    if recipe.task_name in ("mbpp", "code"):
        options["data"] = _mbpp_with_overlaps(tmp_path)
    return options


@pytest.mark.parametrize("name", builtin_recipes())
def test_no_builtin_recipe_shares_a_question_between_splits(name, tmp_path):
    recipe = load_recipe(name)
    task = get_task(recipe.task_name, _local_task_options(recipe, tmp_path))
    report = task.overlap()
    assert set(report["shared"]) == {"train/validation", "train/test", "validation/test"}
    assert all(count == 0 for count in report["shared"].values()), report


def test_gsm8k_keeps_test_whole_and_reports_the_rows_it_dropped(tmp_path):
    task = get_task("gsm8k", {"data": _gsm8k_with_overlaps(tmp_path), "shots": 0})
    report = task.overlap()
    assert report["questions"]["test"] == len(FIXTURE_TEST_PROBLEMS)
    assert report["dropped"]["test"] == 0 and report["dropped"]["train"] >= 2
    assert report["shared"] == {"train/validation": 0, "train/test": 0, "validation/test": 0}


def test_mbpp_drops_a_validation_and_a_train_row_repeating_test_problems(tmp_path):
    task = get_task("mbpp", {"data": _mbpp_with_overlaps(tmp_path)})
    report = task.overlap()
    assert report["dropped"] == {"test": 0, "validation": 1, "train": 1}
    assert len(task.load("validation")) == 1 and len(task.load("train")) == 1


def test_humaneval_reports_its_missing_train_split_instead_of_failing():
    report = get_task("humaneval").overlap()
    assert "train" in report["missing"] and report["shared"] == {}


def test_generated_splits_are_disjoint_even_where_the_problem_space_is_small():
    options = {"generator_config": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}, "shots": 1,
               "train_size": 1000, "validation_size": 100, "test_size": 200}
    task = get_task("arithmetic", options)
    assert task.overlap()["shared"] == {"train/validation": 0, "train/test": 0, "validation/test": 0}
    exemplars = {normalize_question(e.question) for e in task.exemplar_pool()}
    assert not exemplars & {normalize_question(q) for q in task.load("test")["question"]}


def test_a_generator_too_small_for_the_sizes_asked_is_a_clear_error():
    options = {"generator_config": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1,
                                    "operators": ["+"], "allow_negation": False, "allow_parentheses": False},
               "train_size": 500, "validation_size": 10, "test_size": 10}
    with pytest.raises(RlvrError, match="too small for disjoint splits"):
        get_task("arithmetic", options).load("train")


def test_splits_claim_questions_in_order_test_validation_train():
    kept, dropped = disjoint_rows({"train": ["a", "b", "C "], "validation": ["b", "d"], "test": ["c"]}, str)
    assert kept == {"test": ["c"], "validation": ["b", "d"], "train": ["a"]}
    assert dropped == {"test": 0, "validation": 0, "train": 2}
