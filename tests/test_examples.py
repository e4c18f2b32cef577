"""The shipped examples work as the walk-through (docs/your-task.md) says."""

from pathlib import Path

import pytest

from rlvr.config import load_recipe
from rlvr.tasks import get_task

YOUR_TASK = Path(__file__).resolve().parents[1] / "examples" / "your-task"


@pytest.fixture
def your_task(monkeypatch):
    monkeypatch.chdir(YOUR_TASK)  # the walk-through runs rlvr from the example's directory
    recipe = load_recipe("recipe.yaml")
    return recipe, get_task(recipe.task_name, recipe.task_options)


def test_your_task_example_has_1000_lines_carved_into_disjoint_splits_with_200_test_items(your_task):
    _, task = your_task
    sizes = [len(task.load(split)) for split in ("train", "validation", "test")]
    assert sum(sizes) == 1000 - 1 and sizes[2] == 200  # one line is the exemplar; 200 test items for a verdict
    assert set(task.overlap()["shared"].values()) == {0}


def test_your_task_example_checker_and_reward_judge_a_completion(your_task):
    recipe, task = your_task
    row = task.load("test")[0]
    right = f"{row['a']} + {row['b']} = {row['a'] + row['b']}.\n#### The final answer is {row['a'] + row['b']}"
    hedged = f"Maybe.\n#### The final answer is {row['a'] + row['b'] + 1} or {row['a'] + row['b']}"
    assert [o.correct for o in task.judge([right, hedged], [row, row])] == [True, False]
    columns = {k: [row[k]] * 2 for k in row}
    scores = [f([right, hedged], **columns) for f in task.reward_functions(recipe.rewards)]
    assert scores == [[1.0, 1.0], [1.0, 0.0], [1.0, 0.0]]


def test_your_task_example_passes_the_reward_audit(your_task, capsys):
    from rlvr.cli import main

    assert main(["reward", "audit", "--recipe", "recipe.yaml"]) == 0
    assert "PASS" in capsys.readouterr().out
