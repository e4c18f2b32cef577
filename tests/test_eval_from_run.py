"""``rlvr eval --adapter RUN_DIR/adapter`` evaluates with the run's own settings, read from its recipe.yaml."""

import json

import pytest

from rlvr.cli import main
from rlvr.config import recipe_from_dict
from rlvr.evaluation.from_run import merge, read_settings
from rlvr.testing import build_tiny_model


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A tiny finished run: adapter/, recipe.yaml and summary.json with its test verdict."""
    from rlvr.training.run import train

    root = tmp_path_factory.mktemp("run")
    model = build_tiny_model(root / "tiny")
    recipe = recipe_from_dict({
        "name": "tiny-run",
        "model": {"name_or_path": str(model), "dtype": "float32", "lora": True, "lora_r": 2, "lora_alpha": 4},
        "task": {"name": "arithmetic", "shots": 1, "train_size": 8, "validation_size": 2, "test_size": 6,
                 "generator_config": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 2}},
        "grpo": {"max_steps": 2, "per_device_train_batch_size": 4, "num_generations": 2, "max_completion_length": 4,
                 "learning_rate": 1e-2, "logging_steps": 1, "save_strategy": "no", "report_to": [], "seed": 0},
        "run": {"output_dir": str(root / "out"), "test_items": 5, "eval_max_new_tokens": 4, "eval_batch_size": 3},
    })
    train(recipe, quiet=True)
    return root / "out"


def test_eval_takes_task_model_items_and_limits_from_the_run_and_says_so(run_dir, tmp_path, capsys):
    out = tmp_path / "eval"
    assert main(["eval", "--no-progress", "--adapter", "none", "--adapter", str(run_dir / "adapter"), "--output", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"from {run_dir / 'recipe.yaml'}" in said and "up to 5 test items" in said and "at most 4 new tokens" in said
    summary = json.loads((out / "summary.json").read_text())
    assert summary["task"] == "arithmetic" and summary["task_options"]["shots"] == 1
    assert summary["task_options"]["generator_config"]["max_digits"] == 2
    assert summary["items"] == 5 and summary["decoding"]["max_new_tokens"] == 4
    assert summary["settings_from"] == str(run_dir / "recipe.yaml")
    assert summary["overlap"]["shared"]["train/test"] == 0


def test_base_vs_trained_reproduces_the_run_test_evaluation_item_by_item(run_dir, tmp_path):
    out = tmp_path / "eval"
    assert main(["eval", "--no-progress", "--adapter", "none", "--adapter", str(run_dir / "adapter"), "--output", str(out)]) == 0
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    in_run = [json.loads(line) for line in (run_dir / "test_samples.jsonl").read_text().splitlines()]
    for label, step in (("tiny", 0), ("tiny+out", 2)):
        ours = [(s["id"], s["prompt_hash"], s["completion"], s["correct"]) for s in samples if s["model"] == label]
        theirs = [(s["id"], s["prompt_hash"], s["completion"], s["correct"]) for s in in_run if s["step"] == step]
        assert ours == theirs and len(ours) == 5
    results = json.loads((out / "summary.json").read_text())["results"]
    verdict = json.loads((run_dir / "summary.json").read_text())["test"]
    assert [r["correct"] for r in results] == [verdict["before"]["correct"], verdict["after"]["correct"]]


def test_command_line_options_override_the_run(run_dir, tmp_path, capsys):
    out = tmp_path / "eval"
    args = ["eval", "--no-progress", "--adapter", str(run_dir / "adapter"), "--shots", "0", "--limit", "2",
            "--option", "train_size=10", "--output", str(out)]
    assert main(args) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["results"][0]["shots"] == 0 and summary["items"] == 2
    assert summary["task_options"]["train_size"] == 10 and "train_size=" not in capsys.readouterr().out


def test_without_a_run_recipe_the_defaults_apply():
    values, taken = merge(None, {"task": None, "task_options": {}, "models": ["m"], "limit": None,
                                 "max_new_tokens": None, "batch_size": None})
    assert (values["task"], values["max_new_tokens"], values["batch_size"], taken) == ("gsm8k", 256, 16, [])


def test_another_task_on_the_command_line_ignores_the_run_task_options(run_dir):
    values, _ = merge(read_settings(run_dir / "recipe.yaml"), {"task": "gsm8k", "task_options": {}, "models": []})
    assert values["task"] == "gsm8k" and values["task_options"] == {}


def test_eval_takes_the_precision_the_run_trained_in_unless_told(tmp_path):
    from rlvr.evaluation.from_run import merge, read_settings

    run = tmp_path / "run"
    (run / "adapter").mkdir(parents=True)
    (run / "recipe.yaml").write_text("name: r\nmodel: {name_or_path: m, dtype: auto}\ntask: {name: gsm8k}\n")
    (run / "summary.json").write_text(json.dumps({"precision": {"dtype": "bfloat16", "requested": "auto"}}))
    settings = read_settings(run / "recipe.yaml")
    assert merge(settings, {"dtype": None})[0]["dtype"] == "bfloat16"
    assert merge(settings, {"dtype": "float32"})[0]["dtype"] == "float32"  # --dtype wins
    (run / "summary.json").write_text("{}")  # a run from before precisions were recorded: its recipe's dtype
    assert merge(read_settings(run / "recipe.yaml"), {"dtype": None})[0]["dtype"] == "auto"
