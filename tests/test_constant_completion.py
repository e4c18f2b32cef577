"""The verdict's constant baseline where items have no single gold answer: one fixed completion judged on every item."""

import json
from types import SimpleNamespace

from rlvr.evaluation.baselines import (
    FIXED_COMPLETION,
    best_candidate,
    constant_baseline,
    constant_completion_baseline,
)
from rlvr.tasks import get_task
from rlvr.tasks.base import Outcome
from rlvr.training.top_completions import TopCompletions

GENERIC_NOTE = "The patient should see a doctor. I would follow up later."


class CountingTask:
    """Judges a completion by how many times 'yes' it says: 2+ is full credit, 1 half."""

    def judge(self, completions, rows):
        return [Outcome(correct=c.count("yes") >= 2, score=min(1.0, c.count("yes") / 2)) for c in completions]


def candidate(label, text):
    return {"label": label, "source": "reference", "completion": text}


def test_the_best_candidate_has_the_highest_full_credit_share_then_the_highest_score():
    judged = [{"label": "a", "accuracy": 0.5, "mean_score": 0.6}, {"label": "b", "accuracy": 0.5, "mean_score": 0.9},
              {"label": "c", "accuracy": 0.1, "mean_score": 1.0}, {"label": "d", "accuracy": None}]
    assert best_candidate(judged)["label"] == "b"


def test_the_baseline_reports_the_best_of_the_candidates_judged_on_every_item():
    rows = [{"id": str(i)} for i in range(4)]
    result = constant_completion_baseline(CountingTask(), rows, [candidate("one", "yes"), candidate("two", "yes yes")])
    assert result["kind"] == FIXED_COMPLETION and result["n"] == 4 and result["judged"] == 2
    assert result["best"] == "two" and result["accuracy"] == 1.0 and result["mean_score"] == 1.0 and result["graded"]
    assert [c["accuracy"] for c in result["candidates"]] == [0.0, 1.0]


def test_a_candidate_that_breaks_the_judge_is_reported_not_raised():
    class Broken(CountingTask):
        def judge(self, completions, rows):
            if "boom" in completions[0]:
                raise RuntimeError("judge failed")
            return super().judge(completions, rows)

    result = constant_completion_baseline(Broken(), [{"id": "0"}], [candidate("bad", "boom"), candidate("ok", "yes")])
    assert result["best"] == "ok" and result["judged"] == 1
    assert "RuntimeError" in result["candidates"][0]["error"]


def test_without_any_candidate_the_baseline_says_so_instead_of_a_number():
    result = constant_completion_baseline(CountingTask(), [{"id": "0"}], [])
    assert result["accuracy"] is None and "no training rollout" in result["note"]


def test_a_keywords_verdict_gets_a_number_for_a_fixed_note():
    task = get_task("keywords", {"limit": 3})
    top = TopCompletions()
    top.offer([{"completion": GENERIC_NOTE, "reward": 0.4}], step=2)
    result = constant_baseline(task, task.load("test"), top)
    assert result["kind"] == FIXED_COMPLETION and result["n"] == 3
    generic, reference = result["candidates"]
    assert generic["source"] == "training rollout step 2 reward 0.4" and generic["accuracy"] == 0.0
    assert reference["source"] == "reference" and 0 <= reference["mean_score"] <= 1  # the audit's hand-written note
    assert result["accuracy"] == max(generic["accuracy"], reference["accuracy"]) and result["mean_score"] is not None


def test_training_rollouts_keep_the_top_distinct_completions_with_reward_and_step():
    top = TopCompletions(keep=2)
    top.offer([{"completion": "a", "reward": 1.0}, {"completion": "b", "reward": 2.0}, {"completion": " ", "reward": 9.0},
               {"completion": "c", "reward": float("nan")}], step=1)
    top.offer([{"completion": [{"role": "assistant", "content": "a"}], "reward": 3.0},
               {"completion": "d", "reward": 2.0}], step=2)
    assert [(e["completion"], e["reward"], e["step"]) for e in top.entries] == [("a", 3.0, 2), ("b", 2.0, 1)]
    assert top.candidates()[0]["label"] == "the top training rollout"


def test_kept_completions_are_saved_with_a_checkpoint_and_restored_on_resume(tmp_path):
    from rlvr.training.resume import attach, load_state

    trainer = SimpleNamespace(callback_handler=SimpleNamespace(callbacks=[]), top_completions=TopCompletions())
    recipe = SimpleNamespace(output_dir=tmp_path, run=SimpleNamespace(tracking_uri=str(tmp_path / "mlruns")))
    state = attach(trainer, recipe, {}, None)
    trainer.top_completions.offer([{"completion": "best", "reward": 1.5}], step=3)
    (tmp_path / "checkpoint-3").mkdir()
    state.on_save(SimpleNamespace(output_dir=str(tmp_path)), SimpleNamespace(global_step=3, is_world_process_zero=True), None)
    resumed = SimpleNamespace(callback_handler=SimpleNamespace(callbacks=[]), top_completions=TopCompletions())
    attach(resumed, recipe, load_state(tmp_path / "checkpoint-3"), None)
    assert resumed.top_completions.entries == [{"completion": "best", "reward": 1.5, "step": 3}]


def test_headline_prints_the_best_fixed_completion_in_one_line():
    from rlvr.evaluation.baselines import constant_line

    baseline = {"kind": FIXED_COMPLETION, "accuracy": 0.024, "mean_score": 0.31, "graded": True, "judged": 4,
                "best": "the top training rollout", "best_step": 12}
    assert constant_line(baseline) == ("one fixed completion for every item (best of 4: the top training rollout, "
                                       "step 12): 2.4% full credit, score 0.31")


def test_math_tasks_keep_the_most_common_answer_baseline():
    task = get_task("arithmetic", {"train_size": 8, "validation_size": 2, "test_size": 4})
    result = constant_baseline(task, task.load("test"), TopCompletions())
    assert set(result) == {"answer", "accuracy", "n", "learnt_from"} and result["n"] == 4


def test_a_file_task_with_a_checker_judges_its_most_common_gold_on_the_answer_line(tmp_path):
    rows = [{"q": f"Question {i}?", "a": "yes" if i % 3 else "no"} for i in range(12)]
    (tmp_path / "my.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "check.py").write_text("def check(completion, row):\n    return row['a'] in completion\n")
    task = get_task("jsonl", {"path": str(tmp_path / "my.jsonl"), "question": "q", "answer": "a",
                              "verifier": f"{tmp_path / 'check.py'}:check", "test_fraction": 0.5})
    items = task.load("test")
    result = constant_baseline(task, items, None)
    expected = sum(a == "yes" for a in items["final_answer"]) / len(items)
    assert result["kind"] == FIXED_COMPLETION and result["accuracy"] == expected
    assert "'yes' on the answer line" in result["best"]


def test_a_generated_code_task_offers_a_program_returning_its_first_train_items_answers():
    from rlvr.tasks.code import program_from_asserts

    tests = ["assert f([1, 2]) == 3", "assert f([]) == 0"]
    scope = {}
    exec(program_from_asserts(tests), scope)  # noqa: S102 (our own generated text)
    assert scope["f"]([1, 2]) == 3 and scope["f"]([]) == 0 and scope["f"]([5]) is None
    assert program_from_asserts(["assert f(x) == 1"]) is None


def test_the_baseline_is_logged_to_the_ended_mlflow_run(tmp_path, monkeypatch):
    import mlflow

    from rlvr.training.tracking import log_after_run, tracking_uri

    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking_uri(str(tmp_path / "mlruns")))
    client = mlflow.MlflowClient()
    run = client.create_run(client.create_experiment("e"))
    client.set_terminated(run.info.run_id)
    log_after_run(run.info.run_id, {"test/constant_accuracy": 0.25, "test/constant_score": None}, step=7)
    history = client.get_metric_history(run.info.run_id, "test/constant_accuracy")
    assert [(m.value, m.step) for m in history] == [(0.25, 7)]
    assert client.get_metric_history(run.info.run_id, "test/constant_score") == []
