"""Difficulty filtering: pass rates from sampled completions, a band, and training on the kept prompts."""

import json

import pytest
from datasets import Dataset

from rlvr.config import recipe_from_dict
from rlvr.errors import RlvrError
from rlvr.models import load_tokenizer
from rlvr.tasks import get_task
from rlvr.testing import build_tiny_model
from rlvr.training.difficulty import Band, apply_filter, pass_rates, sample_completions
from rlvr.training.run import build_trainer

RIGHT, WRONG = "2 + 2 = 4.\n#### The final answer is 4", "2 + 2 = 5.\n#### The final answer is 5"


def test_pass_rate_is_the_share_of_completions_the_task_judges_correct():
    rows = [{"prompt": "p", "final_answer": "4"}, {"prompt": "q", "final_answer": "4"}]
    assert pass_rates(get_task("gsm8k"), rows, [[RIGHT, WRONG, WRONG, WRONG], [RIGHT] * 4]) == [0.25, 1.0]


def test_code_pass_rate_counts_programs_that_pass_every_test():
    rows = [{"prompt": "p", "test_list": ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]}]
    honest = "```python\ndef add(a, b):\n    return a + b\n```"
    runs_only = "```python\ndef add(a, b):\n    return 3\n```"  # runs and passes one test of two
    task = get_task("mbpp", {"timeout": 2.0})
    try:
        assert pass_rates(task, rows, [[honest, runs_only, runs_only, "not python ("]]) == [0.25]
    finally:
        task.close()


def test_band_keeps_rates_inside_it_and_rejects_an_inverted_band():
    band = Band(0.1, 0.9)
    assert [band.keeps(r) for r in (0.0, 0.1, 0.5, 0.9, 1.0)] == [False, True, True, True, False]
    with pytest.raises(RlvrError):
        Band(0.8, 0.2)


def test_apply_filter_keeps_the_rows_marked_kept(tmp_path):
    path = tmp_path / "difficulty.jsonl"
    path.write_text("".join(json.dumps({"id": i, "pass_rate": r, "kept": k}) + "\n"
                            for i, r, k in (("a", 0.0, False), ("b", 0.5, True), ("c", 1.0, False))))
    dataset = Dataset.from_list([{"id": i, "prompt": i} for i in "abc"])
    assert apply_filter(dataset, path)["id"] == ["b"]


def test_sample_completions_returns_the_requested_number_per_prompt(tmp_path):
    import transformers

    model_dir = build_tiny_model(tmp_path / "tiny")
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir)
    completions = sample_completions(model, load_tokenizer(str(model_dir)), ["1+1=", "2+2="], 3, 4, 1.0)
    assert [len(c) for c in completions] == [3, 3]
    greedy = sample_completions(model, load_tokenizer(str(model_dir)), ["1+1=", "2+2="], 3, 4, 0.0)
    assert [len(c) for c in greedy] == [1, 1]


def test_recipe_difficulty_filter_trains_only_on_kept_prompts(tmp_path):
    model_dir = build_tiny_model(tmp_path / "tiny")
    path = tmp_path / "difficulty.jsonl"
    kept = {"basic_arithmetic-train-1", "basic_arithmetic-train-3"}
    path.write_text("".join(json.dumps({"id": f"basic_arithmetic-train-{i}", "kept": f"basic_arithmetic-train-{i}" in kept})
                            + "\n" for i in range(6)))
    recipe = recipe_from_dict({
        "model": {"name_or_path": str(model_dir), "lora": False},
        "task": {"name": "arithmetic", "train_size": 6, "validation_size": 2, "test_size": 2, "shots": 0},
        "grpo": {"max_steps": 1, "per_device_train_batch_size": 4, "num_generations": 2, "report_to": ["none"]},
        "run": {"output_dir": str(tmp_path / "run"), "difficulty_filter": str(path)},
    })
    trainer = build_trainer(recipe, quiet=True)
    assert set(trainer.train_dataset["id"]) == kept
