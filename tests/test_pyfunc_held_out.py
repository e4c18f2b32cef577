"""pyfunc split by template (test_templates): the test split holds only templates train and validation never see."""

from __future__ import annotations

import hashlib
import json

import pytest

from rlvr.errors import RlvrError
from rlvr.tasks import get_task
from rlvr.tasks.pyfunc_held_out import KINDS, held_out_templates, template_groups
from rlvr.tasks.pyfunc_templates import TEMPLATES

SMALL = {"train_size": 60, "validation_size": 20, "test_size": 30}
RECIPE = "code-functions-unseen-cpu-smollm2"
KIND = {t.name: KINDS[t.params] for t in TEMPLATES}


def templates_by_split(options):
    task = get_task("pyfunc", options)
    return task, {split: set(task.load(split)["template"]) for split in ("train", "validation", "test")}


def digest(task, split):
    rows = task.load(split)
    text = json.dumps([list(rows["question"]), list(rows["test_list"])])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.mark.parametrize("chosen", [8, ["add_n", "subtract_n", "add_two", "count_letter", "count_value", "item_at"]],
                         ids=["count", "names"])
def test_no_template_is_shared_between_test_and_train_or_validation(chosen):
    task, used = templates_by_split({**SMALL, "test_templates": chosen})
    assert used["test"] <= set(task.held_out)
    assert not used["test"] & (used["train"] | used["validation"])
    assert not set(task.held_out) & (used["train"] | used["validation"])


def test_the_default_splits_are_unchanged():
    # The splits code-functions-cpu-smollm2 trains and is judged on (and its BENCHMARKS numbers), pinned.
    task = get_task("pyfunc", {})
    assert task.held_out == []
    assert {split: digest(task, split) for split in ("train", "validation", "test")} == {
        "train": "62e73283d06c9e15", "validation": "9c3ef37c283e6722", "test": "d8e0463b8303740c"}


def test_the_held_out_set_is_deterministic_for_a_seed():
    assert held_out_templates(8, 42) == held_out_templates(8, 42)
    assert held_out_templates(8, 42) != held_out_templates(8, 43)
    assert get_task("pyfunc", {"test_templates": 8}).held_out == held_out_templates(8, 42)  # the data seed
    assert get_task("pyfunc", {"test_templates": 8, "test_templates_seed": 21}).held_out == held_out_templates(8, 21)


@pytest.mark.parametrize("seed", range(30))
def test_a_count_holds_out_near_duplicates_together_across_every_kind(seed):
    chosen = set(held_out_templates(8, seed))
    assert len(chosen) == 8
    assert all(set(group) <= chosen or not set(group) & chosen for group in template_groups())
    assert {KIND[name] for name in chosen} == set(KINDS.values())


def test_the_unseen_recipe_judges_200_test_problems_of_its_held_out_templates():
    from rlvr.config import load_recipe

    recipe = load_recipe(RECIPE)
    task = get_task(recipe.task_name, recipe.task_options)
    test = task.load("test")
    assert recipe.run.test_items == 200 and len(test) == 200
    assert set(test["template"]) == set(task.held_out) == {
        "larger_of", "smaller_of", "repeat_text", "remove_letter", "replace_letter", "add_to_each", "scale_each",
        "append_value"}
    assert task.held_out == held_out_templates(8, 21)  # the seeded draw the recipe's comment names
    assert all(set(group) <= set(task.held_out) or not set(group) & set(task.held_out) for group in template_groups())
    assert len(task.load("train")) == 600 and len(task.load("validation")) == 100


@pytest.mark.parametrize("options, message", [
    ({"test_templates": 0}, "between 1 and 33"),
    ({"test_templates": 34}, "between 1 and 33"),
    ({"test_templates": []}, "between 1 and 33"),
    ({"test_templates": ["add_n", "is_grater"]}, "unknown template 'is_grater'; did you mean 'is_greater'"),
    ({"test_templates": ["add_n", "add_n"]}, "names add_n more than once"),
    ({"test_templates": True}, "a number of templates to hold out or a list of template names"),
    ({"test_templates": ["add_n"], "test_templates_seed": 3}, "drop test_templates_seed or give test_templates: K"),
    ({"test_templates_seed": 3}, "give test_templates: K with it"),
], ids=["zero", "all", "empty", "unknown", "twice", "bool", "seed-with-names", "seed-alone"])
def test_bad_test_templates_fail_in_one_line(options, message):
    with pytest.raises(RlvrError, match=message) as error:
        get_task("pyfunc", options)
    assert "\n" not in str(error.value)


def test_too_few_held_out_problems_for_the_test_size_fail_in_one_line():
    with pytest.raises(RlvrError, match=r"held-out templates \(1\) hold about 39 distinct problems: lower test_size"):
        get_task("pyfunc", {"test_templates": "add_n", "test_size": 100}).load("test")


def test_names_may_be_one_comma_separated_string():
    assert get_task("pyfunc", {"test_templates": "item_at, add_n"}).held_out == ["add_n", "item_at"]


def test_the_unseen_recipe_passes_the_reward_audit_with_the_code_probes(capsys):
    from rlvr.cli import main
    from rlvr.rewards import REWARDS

    if "code_execution" not in REWARDS:
        pytest.skip("the code reward is not installed")
    assert main(["reward", "audit", "--recipe", RECIPE]) == 0
    assert "reward audit: pyfunc (code_execution), code's probes" in capsys.readouterr().out
