"""GSM8K and arithmetic tasks: loading, columns, splits, errors."""

import pytest

from rlvr.errors import RlvrError
from rlvr.tasks import TASKS, get_task
from rlvr.tasks.gsm8k import split_solution, strip_calculator
from rlvr.verifiers.math import parse_gold


def test_calculator_annotations_are_removed():
    assert strip_calculator("4*6=<<4*6=24>>24 goats") == "4*6=24 goats"


def test_reference_solutions_split_into_reasoning_and_answer():
    assert split_solution("1200+300=<<1200+300=1500>>1500\n#### 1,500") == ("1200+300=1500", "1,500")


def test_gsm8k_rows_have_prompt_question_and_final_answer(gsm8k_dir):
    rows = get_task("gsm8k", {"data": str(gsm8k_dir), "shots": 0}).load("test")
    assert {"prompt", "question", "final_answer", "id"} <= set(rows.column_names)
    assert rows[0]["prompt"] == f"Question: {rows[0]['question']}\nSolution: Let's think step by step."
    assert parse_gold(rows[3]["final_answer"]) == 1500


def test_eight_shot_prompt_starts_with_the_builtin_exemplars(gsm8k_dir):
    prompt = get_task("gsm8k", {"data": str(gsm8k_dir)}).load("test")[0]["prompt"]
    assert prompt.startswith("Question: Tom has 3 boxes of pencils.")
    assert prompt.count("#### The final answer is") == 8


def test_train_and_validation_are_a_disjoint_seeded_split_of_train(gsm8k_dir):
    task = get_task("gsm8k", {"data": str(gsm8k_dir), "shots": 0})
    train, validation = task.load("train"), task.load("validation")
    assert len(train) + len(validation) == 10 and len(validation) == 1
    assert not set(train["question"]) & set(validation["question"])
    again = get_task("gsm8k", {"data": str(gsm8k_dir), "shots": 0}).load("validation")
    assert list(again["question"]) == list(validation["question"])


def test_a_different_seed_gives_a_different_split(gsm8k_dir):
    picks = {
        tuple(get_task("gsm8k", {"data": str(gsm8k_dir), "shots": 0, "seed": s}).load("validation")["question"])
        for s in range(6)
    }
    assert len(picks) > 1


def test_train_exemplars_never_come_from_the_evaluated_split(gsm8k_dir):
    task = get_task("gsm8k", {"data": str(gsm8k_dir), "shots": 2, "exemplars": "train"})
    train_questions = set(task.load("train")["question"])
    prompt = task.load("validation")[0]["prompt"]
    shot_questions = [line[len("Question: ") :] for line in prompt.splitlines() if line.startswith("Question: ")][:-1]
    assert shot_questions and all(q in train_questions for q in shot_questions)


def test_chat_option_renders_messages(gsm8k_dir):
    prompt = get_task("gsm8k", {"data": str(gsm8k_dir), "shots": 1, "chat": True}).load("test")[0]["prompt"]
    assert isinstance(prompt, list) and prompt[-1]["role"] == "user"


def test_missing_data_file_is_one_clear_error(tmp_path):
    with pytest.raises(RlvrError, match="data path not found"):
        get_task("gsm8k", {"data": str(tmp_path / "nope.jsonl")}).load("test")


def test_malformed_jsonl_names_the_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "answer": "#### 1"}\n{oops\n')
    with pytest.raises(RlvrError, match=r"bad.jsonl:2: malformed JSON"):
        get_task("gsm8k", {"data": str(bad)}).load("test")


def test_empty_data_file_is_refused(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(RlvrError, match="has no records"):
        get_task("gsm8k", {"data": str(empty)}).load("test")


def test_unknown_task_option_suggests_the_closest(gsm8k_dir):
    with pytest.raises(RlvrError, match="Did you mean 'shots'"):
        get_task("gsm8k", {"shot": 2})


def test_unknown_task_lists_valid_tasks():
    with pytest.raises(RlvrError, match="Valid tasks: .*gsm8k"):
        get_task("gsm9k")


def test_unknown_split_is_refused(gsm8k_dir):
    with pytest.raises(RlvrError, match="unknown split"):
        get_task("gsm8k", {"data": str(gsm8k_dir)}).load("dev")


def test_arithmetic_task_generates_offline_in_the_same_format():
    rows = get_task("arithmetic", {"shots": 1, "limit": 5}).load("train")
    assert len(rows) == 5
    assert rows[0]["prompt"].count("#### The final answer is") == 1
    assert rows[0]["prompt"].endswith("Solution: Let's think step by step.")
    assert parse_gold(rows[0]["final_answer"]) is not None


def test_arithmetic_splits_come_from_different_generator_streams():
    task = get_task("arithmetic", {"train_size": 50, "test_size": 50, "shots": 0})
    assert list(task.load("train")["question"]) != list(task.load("test")["question"])
    assert list(task.load("test")["question"]) == list(get_task("arithmetic", {"test_size": 50}).load("test")["question"])


def test_every_registered_task_names_default_rewards():
    for name in TASKS.names():
        assert TASKS.get(name).default_rewards


def _exemplar_count(prompt: str) -> int:
    return prompt.count("#### The final answer is")


def test_shots_mix_cycles_exemplar_counts_over_train_and_validation_rows():
    task = get_task("arithmetic", {"shots": 1, "shots_mix": [0, 1, 2], "train_size": 6, "validation_size": 3, "test_size": 3})
    for split in ("train", "validation"):
        rows = task.load(split)
        counts = [_exemplar_count(p) for p in rows["prompt"]]
        assert counts == [[0, 1, 2][i % 3] for i in range(len(rows))]
        assert list(rows["exemplar_count"]) == counts


def test_shots_mix_leaves_test_rows_at_the_headline_shot_count():
    task = get_task("arithmetic", {"shots": 1, "shots_mix": [0, 2], "test_size": 5})
    assert [_exemplar_count(p) for p in task.load("test")["prompt"]] == [1] * 5


def test_shots_mix_with_chat_gives_each_row_its_exemplar_turns():
    rows = get_task("arithmetic", {"shots": 1, "shots_mix": [0, 2], "chat": True, "train_size": 4}).load("train")
    assert [len(p) for p in rows["prompt"]] == [1, 5, 1, 5]


@pytest.mark.parametrize("mix", [[], [0, 9], "0,1", [True]])
def test_a_malformed_shots_mix_is_one_clear_error(mix):
    with pytest.raises(RlvrError, match="shots"):
        get_task("arithmetic", {"shots_mix": mix})


def test_gsm8k_shots_mix_cycles_counts_over_training_rows_only(gsm8k_dir):
    task = get_task("gsm8k", {"data": str(gsm8k_dir), "shots": 2, "shots_mix": [0, 1]})
    train = task.load("train")
    assert [_exemplar_count(p) for p in train["prompt"]][:4] == [0, 1, 0, 1]
    assert {_exemplar_count(p) for p in task.load("test")["prompt"]} == {2}
