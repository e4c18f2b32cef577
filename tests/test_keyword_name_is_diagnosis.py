"""Two options of the keywords task's per-item check: ``name_is_diagnosis`` (naming the vignette's condition is a
mention of the rubric's diagnosis group, for its coverage and its patterns) and ``stratify`` (the test split carved
from each condition alike, so a fixed note naming one condition earns full credit on at most its share)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from rlvr.errors import RlvrError
from rlvr.tasks import get_task
from rlvr.verifiers.conditions import make_item
from rlvr.verifiers.keyword_rubric_loader import load_rubric
from rlvr.verifiers.keywords import judge

VIGNETTE = (
    "A 64-year-old man has had three days of fever and a cough productive of green sputum. "
    "His temperature is 38.4 C and there are crackles at the right lung base."
)
PNEUMONIA = "community-acquired-pneumonia"
LATER = (" He is alert and his breathing is comfortable at rest today. I would review him in 48 hours to monitor his "
         "response to the antibiotic, and ask him to return sooner if his breathing gets worse.")


def named_note(condition: str = "community-acquired pneumonia") -> str:
    """A note that names the condition and its treatment in one sentence, without a word of the diagnosis group."""
    return (f"His fever, productive cough and crackles point to {condition}, so I would start treatment with oral "
            f"amoxicillin for five days.{LATER}")


def scored(text: str, name_is_diagnosis: bool, condition: str = PNEUMONIA):
    return judge(text, load_rubric(), None, make_item(condition, None, VIGNETTE, name_is_diagnosis))


def test_without_the_option_a_named_condition_needs_a_diagnosis_word_too():
    judgement = scored(named_note(), name_is_diagnosis=False)
    assert judgement.per_item["diagnosis_correct"]
    assert not judgement.groups["diagnosis"]["covered"]
    assert not judgement.patterns["diagnosis-then-treatment"]["satisfied"]
    assert judgement.score < 1.0


def test_with_the_option_the_named_condition_is_the_diagnosis_and_earns_full_credit():
    judgement = scored(named_note(), name_is_diagnosis=True)
    assert judgement.groups["diagnosis"]["covered"]
    assert judgement.patterns["diagnosis-then-treatment"]["satisfied"]
    assert judgement.score == 1.0


def test_a_wrong_condition_named_earns_no_diagnosis_credit_with_the_option():
    judgement = scored(named_note("acute otitis media"), name_is_diagnosis=True)
    assert not judgement.per_item["diagnosis_correct"]
    assert not judgement.groups["diagnosis"]["covered"]
    assert not judgement.patterns["diagnosis-then-treatment"]["satisfied"]
    assert judgement.score < 1.0


def test_several_conditions_listed_do_not_earn_full_credit_with_the_option():
    judgement = scored(named_note("community-acquired pneumonia or asthma or acute otitis media"), name_is_diagnosis=True)
    assert not judgement.per_item["diagnosis_correct"]
    assert judgement.score < 1.0


def test_a_negated_condition_is_not_a_diagnosis_mention():
    text = ("His fever, productive cough and crackles do not point to community-acquired pneumonia, so I would start "
            f"treatment with oral amoxicillin for five days.{LATER}")
    judgement = scored(text, name_is_diagnosis=True)
    assert not judgement.groups["diagnosis"]["covered"]
    assert judgement.score < 1.0


def test_a_name_after_the_treatment_does_not_hold_the_in_order_pattern():
    text = ("I would start treatment with oral amoxicillin for five days for his community-acquired pneumonia, given "
            f"his fever, productive cough and crackles.{LATER}")
    judgement = scored(text, name_is_diagnosis=True)
    assert judgement.groups["diagnosis"]["covered"]
    assert not judgement.patterns["diagnosis-then-treatment"]["satisfied"]


def test_the_name_does_not_change_the_penalties():
    text = ("Fever, productive cough and crackles make community-acquired pneumonia the likely diagnosis, so I would "
            f"start treatment with oral amoxicillin for five days.{LATER}")
    without, with_ = scored(text, name_is_diagnosis=False), scored(text, name_is_diagnosis=True)
    assert without.score == with_.score == 1.0
    assert {k: p.factor for k, p in without.penalties.items()} == {k: p.factor for k, p in with_.penalties.items()}
    assert without.indicators == with_.indicators


def test_the_task_passes_the_option_to_its_reward_and_its_judge():
    task = get_task("keywords", {"prompts": "generated", "per_item": True, "name_is_diagnosis": True, "limit": 2})
    row = dict(task.load("train")[0])
    row.update(condition=PNEUMONIA, findings=["fever"], question=VIGNETTE)
    [reward] = task.reward_functions([{"name": "keywords"}])
    columns = {key: [value] for key, value in row.items() if key != "prompt"}
    assert reward(completions=[named_note()], prompts=[row["prompt"]], **columns) == [1.0]
    assert task.judge([named_note()], [row])[0].correct


def test_name_is_diagnosis_without_the_per_item_check_is_one_clear_error():
    with pytest.raises(RlvrError, match="set task.per_item: true"):
        get_task("keywords", {"name_is_diagnosis": True})


CONDITIONS = ["migraine", "renal-colic", "depression"]


def test_stratify_gives_every_condition_the_same_share_of_test_and_validation():
    task = get_task("keywords", {"prompts": "generated", "per_item": True, "conditions": CONDITIONS,
                                   "vignettes_per_condition": 20, "test_fraction": 0.3, "validation_fraction": 0.1,
                                   "stratify": True})
    assert Counter(task.load("test")["condition"]) == dict.fromkeys(CONDITIONS, 6)
    assert Counter(task.load("validation")["condition"]) == dict.fromkeys(CONDITIONS, 2)
    assert Counter(task.load("train")["condition"]) == dict.fromkeys(CONDITIONS, 12)


def test_stratified_splits_are_disjoint_cover_every_row_and_repeat_with_the_seed():
    options = {"prompts": "generated", "conditions": CONDITIONS, "vignettes_per_condition": 20, "stratify": True}
    first, again = get_task("keywords", options), get_task("keywords", options)
    ids = {split: first.load(split)["id"] for split in ("train", "validation", "test")}
    assert sum(map(len, ids.values())) == len({i for split in ids.values() for i in split}) == 60
    assert again.load("test")["id"] == ids["test"]
    other = get_task("keywords", {**options, "seed": 7})
    assert other.load("test")["id"] != ids["test"]


def test_stratify_on_prompts_without_conditions_splits_them_as_one_group(tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": f"Patient {i} has a cough."}) + "\n" for i in range(20)))
    plain = get_task("keywords", {"prompts": str(prompts)})
    stratified = get_task("keywords", {"prompts": str(prompts), "stratify": True})
    for split in ("train", "validation", "test"):
        assert stratified.load(split)["id"] == plain.load(split)["id"]
