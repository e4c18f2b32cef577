"""reasoning-gym datasets as tasks: generated offline, disjoint splits, judged by the dataset's own score_answer."""

import pytest

from rlvr.errors import RlvrError
from rlvr.tasks import get_task
from rlvr.tasks.splits import normalize_question

SMALL = {"train_size": 30, "validation_size": 10, "test_size": 10, "shots": 1}
CHAIN = {"dataset": "chain_sum", "config": {"min_terms": 3, "max_terms": 3, "min_digits": 1, "max_digits": 1}, **SMALL}


def answer(text):
    return f"Adding up.\n#### The final answer is {text}\n"


def test_splits_are_disjoint_by_question_text():
    task = get_task("reasoning-gym", CHAIN)
    sets = {s: {normalize_question(q) for q in task.load(s)["question"]} for s in ("train", "validation", "test")}
    assert not sets["train"] & sets["test"] and not sets["train"] & sets["validation"]
    assert not sets["validation"] & sets["test"] and len(sets["test"]) == 10


def test_prompt_states_the_answer_line_and_shows_an_exemplar():
    prompt = get_task("reasoning-gym", CHAIN).load("test")[0]["prompt"]
    assert "#### The final answer is X'" in prompt and prompt.count("Question: ") == 2


def test_judged_by_the_datasets_own_score_answer():
    task = get_task("reasoning-gym", CHAIN)
    row = task.load("test")[0]
    right, wrong, missing = task.judge([answer(row["final_answer"]), answer("12345"), "no answer line"], [row] * 3)
    assert (right.correct, wrong.correct, missing.correct) == (True, False, False)
    assert missing.well_formed is False and right.answer == row["final_answer"]


def test_correctness_reward_is_the_datasets_score():
    task = get_task("reasoning-gym", CHAIN)
    row = task.load("test")[0]
    _, correctness = task.reward_functions()
    columns = {k: [row[k]] * 2 for k in row}
    assert correctness([answer(row["final_answer"]), answer("12345")], **columns) == [1.0, 0.0]


def test_mixture_draws_from_each_dataset():
    mixture = {"datasets": [{"name": "chain_sum", "weight": 1}, {"name": "lcm", "weight": 1, "config": {"max_value": 30}}],
               **SMALL}
    task = get_task("reasoning-gym", mixture)
    rows = task.load("train")
    assert set(rows["source_dataset"]) == {"chain_sum", "lcm"}
    lcm = next(r for r in rows if r["source_dataset"] == "lcm")
    assert task.judge([answer(lcm["final_answer"])], [lcm])[0].correct


def test_unknown_dataset_names_the_closest():
    with pytest.raises(RlvrError, match="no dataset 'chain_summ'. Closest: chain_sum"):
        get_task("reasoning-gym", {"dataset": "chain_summ"})


def test_unknown_dataset_option_is_one_line():
    with pytest.raises(RlvrError, match="rejected its options"):
        get_task("reasoning-gym", {"dataset": "lcm", "config": {"bogus": 1}, **SMALL}).load("test")


def test_an_option_of_the_wrong_type_is_one_line():
    with pytest.raises(RlvrError, match="rejected its options"):
        get_task("reasoning-gym", {"dataset": "aiw", "config": {"task_types": ["siblings"]}, **SMALL}).load("test")


def test_dataset_or_mixture_is_required():
    with pytest.raises(RlvrError, match="needs one of dataset"):
        get_task("reasoning-gym", {})


def test_problem_space_too_small_for_disjoint_splits_is_one_line():
    tiny = {"dataset": "lcm", "config": {"min_value": 1, "max_value": 3}, "train_size": 50, "test_size": 5}
    with pytest.raises(RlvrError, match="too small for disjoint splits"):
        get_task("reasoning-gym", tiny).load("train")


def test_scorer_raising_judges_the_item_wrong_and_counts_it(monkeypatch):
    task = get_task("reasoning-gym", CHAIN)
    row = task.load("test")[0]

    class Broken:
        def score_answer(self, answer, entry):
            raise ValueError("bad")

    monkeypatch.setitem(task.__dict__, "_scoring_dataset", Broken())
    outcome = task.judge([answer(row["final_answer"])], [row])[0]
    assert not outcome.correct and "ValueError" in outcome.details["checker_error"]


def test_reward_score_judges_records_without_the_generated_entry(tmp_path, capsys):
    import json

    from rlvr.cli import main

    (tmp_path / "done.jsonl").write_text(
        json.dumps({"completion": "ok\n#### The final answer is 11", "final_answer": "11"}) + "\n"
        + json.dumps({"completion": "#### The final answer is 12", "final_answer": "11"}) + "\n")
    assert main(["reward", "score", "--task", "reasoning-gym", "--option", "dataset=chain_sum",
                 "--input", str(tmp_path / "done.jsonl")]) == 0
    assert [json.loads(line)["correctness"] for line in capsys.readouterr().out.splitlines()] == [1.0, 0.0]
