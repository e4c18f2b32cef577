"""The keywords task's prompt sources and the stuffing indicators its evaluations report."""

import json

import pytest

from rlvr.errors import RlvrError
from rlvr.tasks import get_task
from rlvr.tasks.splits import normalize_question
from rlvr.verifiers.keyword_rubric_loader import load_rubric
from rlvr.verifiers.keywords import judge


def write_prompts(path, texts):
    path.write_text("".join(json.dumps({"prompt": t}) + "\n" for t in texts), encoding="utf-8")
    return str(path)


def questions(task, split):
    return {normalize_question(r["question"]) for r in task.load(split)}


def test_built_in_splits_are_unchanged_by_default():
    task = get_task("keywords")
    sizes = [len(task.load(split)) for split in ("train", "validation", "test")]
    assert sizes == [33, 5, 10]  # 48 vignettes: 20% test (10), 10% validation (5), the rest train


def test_test_prompts_file_is_the_whole_test_split(tmp_path):
    train = write_prompts(tmp_path / "train.jsonl", [f"Patient {i} has a cough for {i} days." for i in range(20)])
    held = write_prompts(tmp_path / "held.jsonl", ["A child has a rash.", "A man has a headache.", "A woman has a fever."])
    task = get_task("keywords", {"prompts": train, "test_prompts": held})
    assert questions(task, "test") == {normalize_question(t) for t in ("A child has a rash.", "A man has a headache.",
                                                                        "A woman has a fever.")}
    assert len(task.load("train")) + len(task.load("validation")) == 20


def test_prompts_shared_with_the_test_prompts_leave_train_and_validation(tmp_path):
    texts = [f"Patient {i} has a cough for {i} days." for i in range(20)]
    train = write_prompts(tmp_path / "train.jsonl", texts)
    held = write_prompts(tmp_path / "held.jsonl", [texts[3].upper(), "A man has a headache."])
    task = get_task("keywords", {"prompts": train, "test_prompts": held})
    assert normalize_question(texts[3]) not in questions(task, "train") | questions(task, "validation")
    assert len(task.load("train")) + len(task.load("validation")) == 19


def test_builtin_test_prompts_are_the_48_hand_written_vignettes(tmp_path):
    train = write_prompts(tmp_path / "train.jsonl", [f"Patient {i} has a cough for {i} days." for i in range(20)])
    assert len(get_task("keywords", {"prompts": train, "test_prompts": "builtin"}).load("test")) == 48


def test_generated_prompts_give_a_test_split_of_at_least_200_disjoint_from_train():
    task = get_task("keywords", {"prompts": "generated", "test_fraction": 0.3})
    test, train = questions(task, "test"), questions(task, "train")
    assert len(test) >= 200 and not test & train and len(train) >= 300


TWELVE = ["gout", "acne-vulgaris", "croup", "migraine", "renal-colic", "psoriasis", "depression", "anaphylaxis",
          "cellulitis", "heart-failure", "hypothyroidism", "atrial-fibrillation"]


def test_fewer_conditions_with_more_vignettes_each_still_give_a_test_split_of_200():
    task = get_task("keywords", {"prompts": "generated", "test_fraction": 0.3, "per_item": True,
                                 "conditions": ", ".join(TWELVE),  # a comma-separated string, as --option gives it
                                 "vignettes_per_condition": 60})
    test = task.load("test")
    assert len(test) == 216 and set(test["condition"]) == set(TWELVE)


@pytest.mark.parametrize("option", [{"conditions": ["gout"]}, {"vignettes_per_condition": 60}])
@pytest.mark.parametrize("prompts", [None, "builtin"])
def test_the_generation_options_need_generated_prompts(option, prompts):
    with pytest.raises(RlvrError) as error:
        get_task("keywords", {"prompts": prompts, **option})
    assert "\n" not in str(error.value) and "prompts: generated" in str(error.value)


def test_an_unknown_condition_fails_when_the_task_is_built():
    with pytest.raises(RlvrError, match="nearest: acne-vulgaris"):
        get_task("keywords", {"prompts": "generated", "conditions": ["acne-vulgari"]})


def test_a_missing_test_prompts_file_is_one_clear_error(tmp_path):
    with pytest.raises(RlvrError, match="nowhere.jsonl"):
        get_task("keywords", {"test_prompts": str(tmp_path / "nowhere.jsonl")}).load("test")


def test_a_misspelled_prompt_source_names_the_built_in_ones():
    with pytest.raises(RlvrError, match="use builtin, generated or the path of a JSONL file"):
        get_task("keywords", {"prompts": "generatd"}).load("train")


@pytest.mark.parametrize(("text", "name", "expected"), [
    ("The diagnosis is asthma and treatment is an inhaler.", "keyword_density", 2 / 9),
    ("There is no diagnosis yet. The treatment is rest.", "negated_share", 0.5),
    ("The patient is well. The patient is well.", "repeated_trigram_share", 2 / 6),
])
def test_writing_indicators_measure_density_negation_and_repetition(text, name, expected):
    assert judge(text, load_rubric()).indicators[name] == pytest.approx(expected, abs=1e-3)


def test_breakdown_averages_the_writing_indicators_over_completions():
    task = get_task("keywords")
    details = [judge(t, load_rubric()).explanation() for t in ("The diagnosis is clear.", "It is fine today, really.")]
    means = task.breakdown(details)["writing indicators (mean per completion)"]
    assert means["keyword_density"] == pytest.approx((1 / 4 + 0) / 2, abs=1e-3)
    assert means["negated_share"] == 0.0  # only the completion with a mention counts
