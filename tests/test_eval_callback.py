"""Held-out evaluation inside ``rlvr train``: before, every N steps, at the end; logged; before/after table."""

import pytest

from rlvr.config import RunConfig, recipe_from_dict
from rlvr.errors import RlvrError
from rlvr.testing import build_tiny_model
from rlvr.training.evaluation import before_after_table


def test_eval_split_train_is_refused():
    with pytest.raises(RlvrError, match="eval_split"):
        RunConfig(eval_split="train")


def test_negative_eval_items_are_refused():
    with pytest.raises(RlvrError, match="eval_items"):
        RunConfig(eval_items=-1)


def evaluation(step, verdicts):
    n, correct = len(verdicts), sum(verdicts)
    return {"step": step, "split": "validation", "n": n, "shots": 2, "correct": correct, "accuracy": correct / n,
            "ci95": [0.1, 0.9], "format_rate": 1.0, "mean_completion_tokens": 12.0,
            "verdicts": {f"item-{i}": v for i, v in enumerate(verdicts)}}


def test_before_after_table_shows_both_accuracies_and_the_paired_test():
    table = before_after_table([evaluation(0, [False] * 5 + [True]), evaluation(40, [True] * 5 + [True])])
    assert "before (step 0)" in table and "after (step 40)" in table
    assert "16.7%" in table and "100.0%" in table
    assert "5 now right, 0 now wrong" in table and "p = 0.0625" in table


def test_no_table_without_two_evaluations():
    assert before_after_table([evaluation(0, [True])]) == ""


def tiny_arithmetic_recipe(tmp_path, max_steps, shots, validation_size, test_size, run):
    """A LoRA recipe on a tiny random model: 8 arithmetic train items, 4-token completions, ``run`` settings added."""
    model = build_tiny_model(tmp_path / "tiny")
    return recipe_from_dict({
        "name": "tiny-eval",
        "model": {"name_or_path": str(model), "dtype": "float32", "lora": True, "lora_r": 2, "lora_alpha": 4},
        "task": {"name": "arithmetic", "shots": shots, "train_size": 8, "validation_size": validation_size,
                 "test_size": test_size},
        "grpo": {"max_steps": max_steps, "per_device_train_batch_size": 4, "num_generations": 2,
                 "max_completion_length": 4, "learning_rate": 1e-3, "logging_steps": 1, "save_strategy": "no",
                 "report_to": [], "seed": 0},
        "run": {"output_dir": str(tmp_path / "out"), "eval_max_new_tokens": 4, **run},
    })


def test_training_evaluates_before_every_n_steps_and_at_the_end(tmp_path):
    from rlvr.training.run import train

    recipe = tiny_arithmetic_recipe(tmp_path, max_steps=3, shots=0, validation_size=6, test_size=2,
                                    run={"eval_items": 4, "eval_every_steps": 2})
    result = train(recipe, quiet=True)
    assert [e["step"] for e in result.evaluations] == [0, 2, 3]
    assert all(e["n"] == 4 for e in result.evaluations)
    logged = [entry for entry in result.log_history if "eval/accuracy" in entry]
    assert [entry["step"] for entry in logged] == [0, 2, 3]
    assert all("reward" in entry for entry in result.log_history if entry.get("step") in (1, 2, 3) and "loss" in entry)
    assert (tmp_path / "out" / "eval_samples.jsonl").is_file()
    assert "before (step 0)" in before_after_table(result.evaluations)


def test_a_code_recipe_evaluates_during_training_by_pass_at_1(tmp_path):
    """Code tasks take no exemplars: the in-training evaluation must not ask for shots (it used to crash)."""
    import json

    from rlvr.training.run import train

    rows = [{"task_id": task_id, "text": f"Write add{task_id}(a, b) returning a + b.",
             "test_list": [f"assert add{task_id}(1, 2) == 3", f"assert add{task_id}(0, 0) == 0"]}
            for task_id in (511, 512, 601, 602, 603, 604)]
    data = tmp_path / "mbpp.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    model = build_tiny_model(tmp_path / "tiny")
    recipe = recipe_from_dict({
        "name": "tiny-code-eval",
        "model": {"name_or_path": str(model), "dtype": "float32", "lora": False},
        "task": {"name": "mbpp", "data": str(data), "timeout": 2.0},
        "rewards": [{"name": "code_execution", "timeout": 2.0, "workers": 1}],
        "grpo": {"max_steps": 1, "per_device_train_batch_size": 4, "num_generations": 2, "max_completion_length": 4,
                 "logging_steps": 1, "save_strategy": "no", "report_to": [], "seed": 0},
        "run": {"output_dir": str(tmp_path / "out"), "eval_items": 2, "eval_max_new_tokens": 4},
    })
    result = train(recipe, quiet=True)
    assert [e["step"] for e in result.evaluations] == [0, 1]
    assert all(e["n"] == 2 and e["shots"] is None and e["accuracy_name"] == "pass@1" for e in result.evaluations)
    assert "pass@1 [95% CI]" in before_after_table(result.evaluations)


def test_training_ends_with_a_test_verdict_before_and_after_on_the_same_items(tmp_path):
    import json

    from rlvr.training.run import train

    recipe = tiny_arithmetic_recipe(tmp_path, max_steps=2, shots=1, validation_size=2, test_size=5,
                                    run={"test_items": 4})
    result = train(recipe, quiet=True)
    test = result.test
    assert test["items"] == 4 and test["split"] == "test" and test["shots"] == 1
    assert test["before"]["step"] == 0 and test["after"]["step"] == 2
    assert test["now_right"] + test["now_wrong"] + test["both_right"] + test["both_wrong"] == 4
    assert test["gain"] == (test["now_right"] - test["now_wrong"]) / 4
    assert test["gain_ci95"][0] <= test["gain"] <= test["gain_ci95"][1] and 0 < test["mcnemar_p"] <= 1
    assert test["overlap"]["shared"] == {"train/validation": 0, "train/test": 0, "validation/test": 0}
    assert test["constant_answer"]["n"] == 4 and 0 <= test["constant_answer"]["accuracy"] <= 1
    assert result.evaluations == []  # no validation diagnostics asked for
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["headline"] == "test" and summary["test"]["mcnemar_p"] == test["mcnemar_p"]
    samples = [json.loads(line) for line in (tmp_path / "out" / "test_samples.jsonl").read_text().splitlines()]
    assert sorted({s["step"] for s in samples}) == [0, 2]
    before = [s["prompt_hash"] for s in samples if s["step"] == 0]
    assert before == [s["prompt_hash"] for s in samples if s["step"] == 2]  # same items, same prompts


def test_headline_prints_gain_interval_p_format_and_constant_answer():
    from rlvr.training.verdict import headline, verdict

    before = evaluation(0, [False] * 8 + [True] * 2)
    after = evaluation(40, [True] * 9 + [False])
    baseline = {"answer": "1", "accuracy": 0.1, "n": 10}
    text = headline(verdict(before, after, baseline, {"shared": {"train/test": 0}}))
    assert "0 of 10 test questions also in the train split" in text
    assert "+70.0 points [95% CI" in text and "8 now right, 1 now wrong; McNemar exact p = 0.039" in text
    assert "format    100% -> 100%" in text and "always answering '1'" in text and "10.0%" in text


def test_headline_of_a_task_without_exemplars_names_the_training_prompt_not_a_shot_count():
    from rlvr.training.verdict import headline, verdict

    before, after = evaluation(0, [False, True]), evaluation(4, [True, True])
    before["shots"] = after["shots"] = None  # code and keyword tasks take no exemplars
    text = headline(verdict(before, after, {"answer": None, "accuracy": None}, {"shared": {"train/test": 0}}))
    assert "greedy, the training prompt;" in text and "None-shot" not in text


def test_headline_of_a_mixed_exemplar_run_says_training_saw_several_prompts():
    from rlvr.training.verdict import headline, verdict

    before, after = evaluation(0, [False, True]), evaluation(4, [True, True])
    before["shots"] = after["shots"] = 1
    before["training_exemplar_counts"] = [0, 1, 2]
    text = headline(verdict(before, after, {"answer": None, "accuracy": None}, {"shared": {"train/test": 0}}))
    assert "greedy, 1-shot (training mixed 0/1/2 exemplars);" in text and "(the training prompt)" not in text


def test_validation_table_of_a_mixed_exemplar_split_names_the_counts_not_one_shot_count():
    first, last = evaluation(0, [False, True]), evaluation(4, [True, True])
    for result in (first, last):
        result.update(shots=None, exemplar_counts=[0, 1, 2])
    table = before_after_table([first, last])
    assert "greedy, 0/1/2 exemplars (task.shots_mix)" in table and "-shot" not in table


def graded(step, scores):
    result = evaluation(step, [s >= 1.0 for s in scores])
    result.update(shots=None, format_rate=None, mean_score=sum(scores) / len(scores),
                  scores={f"item-{i}": s for i, s in enumerate(scores)})
    return result


def test_verdict_of_a_partial_credit_task_adds_the_mean_score_gain_with_its_wilcoxon_p():
    from rlvr.training.verdict import headline, verdict

    before, after = graded(0, [0.25, 0.5] * 10), graded(30, [0.5, 0.75] * 10)
    v = verdict(before, after, {"answer": None, "accuracy": None}, {"shared": {"train/test": 0}})
    assert v["score_gain"] == pytest.approx(0.25) and v["score_wilcoxon_p"] < 0.001
    assert "score     0.375 -> 0.625" in headline(v) and "format    n/a -> n/a" in headline(v)


def test_verdict_of_a_pass_fail_task_has_no_separate_score_test():
    from rlvr.training.verdict import verdict

    before, after = graded(0, [0.0, 1.0] * 5), graded(30, [1.0, 1.0] * 5)
    assert "score_gain" not in verdict(before, after, {"answer": None, "accuracy": None}, {})


def test_headline_shows_the_writing_indicators_before_and_after():
    from rlvr.training.verdict import headline, verdict

    before, after = graded(0, [0.25] * 4), graded(30, [0.5] * 4)
    before["breakdown"] = {"writing indicators (mean per completion)": {"keyword_density": 0.05}}
    after["breakdown"] = {"writing indicators (mean per completion)": {"keyword_density": 0.08}}
    text = headline(verdict(before, after, {"answer": None, "accuracy": None}, {}))
    assert "keyword density 5.0% -> 8.0%" in text


def test_installing_the_validation_and_the_test_evaluations_warns_about_nothing(tmp_path, monkeypatch):
    import transformers.trainer_callback as callbacks

    from rlvr.training.evaluation import EvalCallback
    from rlvr.training.run import build_trainer

    warnings = []
    monkeypatch.setattr(callbacks.logger, "warning", lambda message, *args, **kwargs: warnings.append(message))
    recipe = tiny_arithmetic_recipe(tmp_path, max_steps=1, shots=0, validation_size=4, test_size=2,
                                    run={"eval_items": 2, "eval_every_steps": 1, "test_items": 2})
    trainer = build_trainer(recipe, quiet=True)
    assert EvalCallback.of(trainer, "diagnostic") is not None and EvalCallback.of(trainer, "verdict") is not None
    assert warnings == []
