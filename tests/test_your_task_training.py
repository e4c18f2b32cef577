"""GRPO on the user's own file task, checker and reward (tiny model built in the test): rlvr's source untouched."""

import json

import pytest

from rlvr.config import load_recipe
from rlvr.errors import RlvrError
from rlvr.training.run import train


def setup_files(tmp_path):
    rows = [{"q": f"What is {i} + {i + 1}?", "a": 2 * i + 1} for i in range(40)]
    (tmp_path / "my.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "check.py").write_text("def check(completion, row):\n    return str(row['a']) in completion\n")
    (tmp_path / "rewards.py").write_text(
        "def short(completions, **columns):\n    return [1.0 if len(c) < 20 else 0.0 for c in completions]\n"
        "def nan_reward(completions, **columns):\n    return [float('nan')] * len(completions)\n")


def recipe(model_dir, tmp_path, reward):
    task = (f"{{name: jsonl, path: '{tmp_path / 'my.jsonl'}', question: q, answer: a, "
            f"verifier: '{tmp_path / 'check.py'}:check', shots: 1}}")
    rewards = f"[{{name: format}}, {{name: correctness}}, {{name: '{tmp_path / 'rewards.py'}:{reward}', weight: 0.2}}]"
    return load_recipe(None, [
        f"model.name_or_path={model_dir}", f"task={task}", f"rewards={rewards}",
        "grpo.max_steps=1", "grpo.per_device_train_batch_size=8", "grpo.num_generations=4",
        "grpo.max_completion_length=8", "grpo.save_strategy=no", "grpo.report_to=[]",
        "run.eval_items=0", "run.keep_best=false", "run.test_items=2", "run.eval_max_new_tokens=8",
        f"run.output_dir={tmp_path / 'out'}",
    ])


def test_file_task_with_user_checker_and_reward_trains_and_reports_a_test_verdict(tiny_model_dir, tmp_path):
    setup_files(tmp_path)
    result = train(recipe(tiny_model_dir, tmp_path, "short"), quiet=True)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert result.steps == 1 and summary["test"]["items"] == 2 and "accuracy" in summary["test"]["constant_answer"]
    constant = summary["test"]["constant_answer"]  # a checker: one fixed completion, judged by the task
    assert constant["kind"] == "constant completion" and constant["accuracy"] is not None
    assert any(c["source"].startswith("training rollout step 1") for c in constant["candidates"])
    assert summary["test"]["overlap"]["shared"] == {"train/validation": 0, "train/test": 0, "validation/test": 0}
    assert any("rewards/short/mean" in entry for entry in result.log_history)


def test_user_reward_returning_nan_stops_training_with_one_line(tiny_model_dir, tmp_path):
    setup_files(tmp_path)
    with pytest.raises(RlvrError, match=r"reward '.*rewards.py:nan_reward' returned nan for item 0 of 8 \(id my-"):
        train(recipe(tiny_model_dir, tmp_path, "nan_reward"), quiet=True)
