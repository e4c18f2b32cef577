"""The keywords task's example notes (``shots``): full-credit notes shown as earlier turns before the vignette."""

import json

import pytest

from rlvr.errors import RlvrError
from rlvr.rewards.keywords import item_of, judge_completion
from rlvr.tasks import get_task
from rlvr.tasks.note_exemplars import BUILTIN_SETS, load_exemplar_notes
from rlvr.verifiers.condition_mentions import findings_in
from rlvr.verifiers.keyword_rubric_loader import load_rubric

CONDITIONS = {"cellulitis", "gout"}


def write_lines(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("name", sorted(BUILTIN_SETS))
def test_every_built_in_example_note_earns_full_credit_for_its_own_vignette(name):
    rows = [json.loads(line) for line in open(BUILTIN_SETS[name], encoding="utf-8")]
    assert {row["condition"] for row in rows} == CONDITIONS
    for row in rows:
        item = item_of({"condition": row["condition"], "question": row["prompt"],
                        "findings": findings_in(row["prompt"], row["condition"])})
        assert judge_completion(row["completion"], load_rubric(None), None, item).score == 1.0


def test_name_first_notes_are_the_built_in_vignettes_with_the_diagnosis_in_their_opening_words():
    findings_first, name_first = load_exemplar_notes("builtin"), load_exemplar_notes("name-first")
    assert [n.prompt for n in name_first] == [n.prompt for n in findings_first]
    assert all(n.completion.startswith("The most likely diagnosis is ") for n in name_first)
    assert not any(n.completion.startswith("The most likely diagnosis is ") for n in findings_first)


def test_a_recipe_can_show_the_name_first_note():
    row = get_task("keywords", {"shots": 1, "exemplars": "name-first"}).load("train")[0]
    assert row["prompt"][1]["content"] == load_exemplar_notes("name-first")[0].completion


def test_without_shots_a_chat_prompt_is_one_user_turn():
    prompt = get_task("keywords").load("train")[0]["prompt"]
    assert [m["role"] for m in prompt] == ["user"]


def test_shots_put_each_example_as_a_user_and_an_assistant_turn_before_the_vignette():
    task = get_task("keywords", {"shots": 2})
    row = task.load("train")[0]
    notes = load_exemplar_notes("builtin")
    assert [m["role"] for m in row["prompt"]] == ["user", "assistant", "user", "assistant", "user"]
    assert [row["prompt"][i]["content"] for i in (1, 3)] == [n.completion for n in notes]
    assert row["prompt"][-1]["content"].startswith(row["question"])
    assert row["prompt"][0]["content"].endswith(load_rubric(None).instructions.strip())


def test_plain_prompts_show_the_example_note_after_answer_and_end_ready_for_the_next():
    row = get_task("keywords", {"shots": 1, "chat": False}).load("test")[0]
    note = load_exemplar_notes("builtin")[0]
    assert f"Answer:\n{note.completion}\n\n" in row["prompt"]
    assert row["prompt"].endswith("Answer:\n") and row["question"] in row["prompt"]


def test_a_prompt_that_is_an_example_vignette_leaves_every_split(tmp_path):
    note = load_exemplar_notes("builtin")[0]
    texts = [f"Patient {i} has a cough for {i} days." for i in range(20)] + [note.prompt.upper()]
    task = get_task("keywords", {"prompts": write_lines(tmp_path / "p.jsonl", [{"prompt": t} for t in texts]),
                                 "shots": 1})
    seen = [r["question"] for split in ("train", "validation", "test") for r in task.load(split)]
    assert len(seen) == 20 and note.prompt.upper() not in seen


def test_example_notes_can_come_from_a_user_file(tmp_path):
    path = write_lines(tmp_path / "notes.jsonl", [{"prompt": "A man has a cough.", "completion": "Likely a cold."}])
    row = get_task("keywords", {"shots": 1, "exemplars": path}).load("train")[0]
    assert row["prompt"][1] == {"role": "assistant", "content": "Likely a cold."}


@pytest.mark.parametrize("options, message", [
    ({"shots": 3}, "holds 2 example notes"),
    ({"shots": -1}, "whole number"),
    ({"shots": 1, "exemplars": "no-such-notes.jsonl"}, "no such file"),
    ({"shots": 1, "exemplars": "name_first"}, r"built-in set \(builtin, name-first\)"),
])
def test_bad_shots_or_exemplars_are_one_clear_error(options, message):
    with pytest.raises(RlvrError, match=message):
        get_task("keywords", options)


def test_an_example_note_without_a_completion_is_one_clear_error(tmp_path):
    path = write_lines(tmp_path / "notes.jsonl", [{"prompt": "A man has a cough.", "completion": " "}])
    with pytest.raises(RlvrError, match="non-empty text"):
        get_task("keywords", {"shots": 1, "exemplars": path})


def test_an_evaluation_renders_the_recipes_example_notes_and_compares_shot_counts():
    from rlvr.evaluation.items import load_items

    assert list(load_items("keywords", {"shots": 1}, "test", None, 2)) == [1]
    items = load_items("keywords", {}, "test", [0, 1], 2)
    assert [len(items[count][0]["prompt"]) for count in (0, 1)] == [1, 3]
