"""The keywords task's per-item check: full credit needs the vignette's condition named (and no other) and one of
its findings cited, so one fixed note cannot earn full credit on every vignette."""

from __future__ import annotations

import hashlib
import json

import pytest
from conftest import BENCHMARK_RECIPES

from rlvr.errors import RlvrError
from rlvr.rewards import build_reward
from rlvr.tasks import get_task
from rlvr.tasks.clinical_vignettes import generate_vignettes
from rlvr.tasks.vignette_conditions import load_conditions
from rlvr.verifiers.condition_mentions import findings_in
from rlvr.verifiers.condition_table import load_table, name_forms
from rlvr.verifiers.conditions import make_item
from rlvr.verifiers.keyword_rubric_loader import load_rubric
from rlvr.verifiers.keywords import judge

VIGNETTE = (
    "A 64-year-old man has had three days of fever and a cough productive of green sputum. "
    "His temperature is 38.4 C and there are crackles at the right lung base."
)
PNEUMONIA = "community-acquired-pneumonia"


def note(diagnosis: str, findings: str = "fever, productive cough and focal crackles on examination") -> str:
    """A full-credit note under the rubric alone, naming ``diagnosis`` and citing ``findings``."""
    return (
        f"This man's {findings} make {diagnosis} the most likely diagnosis, so I would start treatment at home with "
        "oral amoxicillin for five days. He is alert, his breathing is comfortable and his blood pressure is normal. "
        "I would review him in 48 hours to monitor his response to the antibiotic, and ask him to return sooner if "
        "his breathing gets worse."
    )


ACS_NOTE = (
    "This man's crushing central chest pain, sweating and ST elevation on his ECG make an acute coronary syndrome the "
    "most likely diagnosis, so I would start treatment with aspirin and arrange urgent angioplasty. His blood pressure "
    "and heart rate are stable at present. I would monitor him on the coronary care unit and review his response to "
    "treatment with a repeat ECG and troponin."
)


@pytest.fixture(scope="module")
def rubric():
    return load_rubric()


def scored(text, condition=PNEUMONIA, vignette=VIGNETTE, findings=None, rubric=None):
    return judge(text, rubric or load_rubric(), None, make_item(condition, findings, vignette))


def test_the_right_condition_with_a_finding_earns_full_credit(rubric):
    judgement = scored(note("community-acquired pneumonia"), rubric=rubric)
    assert judgement.score == 1.0
    assert judgement.per_item["diagnosis_correct"] and judgement.per_item["findings_cited"]


def test_the_same_note_without_the_check_is_unchanged(rubric):
    assert judge(note("community-acquired pneumonia"), rubric).per_item is None
    assert "findings" not in judge(note("community-acquired pneumonia"), rubric).groups


def test_a_wrong_condition_earns_no_diagnosis_credit(rubric):
    judgement = scored(note("a pulmonary embolism"), rubric=rubric)
    assert not judgement.groups["diagnosis"]["covered"]
    assert judgement.per_item["other_conditions"] == ["pulmonary-embolism"]
    assert judgement.score < 1.0


def test_several_conditions_listed_do_not_earn_full_credit(rubric):
    hedged = note("community-acquired pneumonia, pulmonary embolism, heart failure or asthma the possible diagnoses; "
                  "any of them")
    judgement = scored(hedged, rubric=rubric)
    assert judgement.per_item["condition_named"] and not judgement.per_item["diagnosis_correct"]
    assert judgement.score < scored(note("community-acquired pneumonia"), rubric=rubric).score


def test_a_fixed_note_for_another_condition_scores_below_the_right_note(rubric):
    assert judge(ACS_NOTE, rubric).score == 1.0  # the rubric alone pays it on every vignette
    assert scored(ACS_NOTE, rubric=rubric).score < scored(note("community-acquired pneumonia"), rubric=rubric).score


def test_full_credit_needs_one_of_the_vignettes_findings_cited(rubric):
    judgement = scored(note("community-acquired pneumonia", findings="history and examination"), rubric=rubric)
    assert judgement.per_item["diagnosis_correct"] and not judgement.groups["findings"]["covered"]
    assert judgement.score < 1.0


def test_findings_of_another_vignette_are_not_this_ones(rubric):
    judgement = scored(note("community-acquired pneumonia", findings="rigors and pleuritic chest pain"), rubric=rubric)
    assert judgement.per_item["findings"] == ["productive cough", "crackles", "fever"]
    assert not judgement.per_item["findings_cited"]


def test_a_vignette_without_key_findings_waives_the_findings_requirement(rubric):
    judgement = scored(note("community-acquired pneumonia", findings="history and examination"), findings=[],
                       rubric=rubric)
    assert judgement.score == 1.0


@pytest.mark.parametrize(("diagnosis", "condition", "named"), [
    ("an acute MI", "acute-coronary-syndrome", True),
    ("an acute mi", "acute-coronary-syndrome", False),  # short abbreviations only in capitals
    ("a STEMI", "acute-coronary-syndrome", True),
    ("CAP", PNEUMONIA, True),
    ("cap", PNEUMONIA, False),
    ("an exacerbation of copd", "copd-exacerbation", True),  # longer ones in any case
    ("Parkinson's disease", "parkinsons-disease", True),
    ("type 2 diabetes mellitus", "type-2-diabetes", True),
])
def test_abbreviations_and_synonyms_name_the_condition(diagnosis, condition, named):
    judgement = scored(note(diagnosis), condition=condition, vignette="", findings=[])
    assert judgement.per_item["condition_named"] is named


@pytest.mark.parametrize("aside", [
    "A pulmonary embolism is unlikely.",
    "There is no pulmonary embolism.",
    "A pulmonary embolism has been ruled out.",
    "It is pneumonia rather than a pulmonary embolism.",
    "His father had a heart attack at 50.",
    "He has a history of type 2 diabetes.",
])
def test_a_negated_ruled_out_or_past_other_condition_is_not_held_against_the_note(rubric, aside):
    judgement = scored(f"{note('community-acquired pneumonia')} {aside}", rubric=rubric)
    assert judgement.per_item["diagnosis_correct"] and judgement.per_item["set_aside"]


def test_another_condition_offered_as_a_possibility_counts_as_named(rubric):
    judgement = scored(f"{note('community-acquired pneumonia')} It could also be a pulmonary embolism.", rubric=rubric)
    assert judgement.per_item["other_conditions"] == ["pulmonary-embolism"] and judgement.score < 1.0


def test_another_condition_named_in_a_list_line_counts(rubric):
    judgement = scored(f"{note('community-acquired pneumonia')}\n- asthma", rubric=rubric)
    assert not judgement.per_item["diagnosis_correct"]


def test_a_condition_the_vignette_itself_names_is_not_held_against_the_note(rubric):
    vignette = "A 66-year-old man has crushing central chest pain and sweating. He has type 2 diabetes."
    text = ACS_NOTE + " His type 2 diabetes needs review."
    judgement = scored(text, condition="acute-coronary-syndrome", vignette=vignette, rubric=rubric)
    assert judgement.per_item["diagnosis_correct"] and judgement.per_item["named_in_vignette"] == ["type-2-diabetes"]
    assert not scored(text, condition="acute-coronary-syndrome", vignette="Chest pain.", findings=[],
                      rubric=rubric).per_item["diagnosis_correct"]


@pytest.mark.parametrize("completion", [
    None, "", 42, [{"role": "assistant", "content": note("community-acquired pneumonia")}], [{"role": "assistant"}],
    {"content": None}, "\x00" * 1000, "MI " * 10_000, "- " + "pneumonia, " * 2000,
])
def test_model_output_of_any_shape_never_raises(completion):
    reward = build_reward("keywords", {"per_item": True})
    [score] = reward([completion], condition=[PNEUMONIA], findings=[["crackles"]], question=[VIGNETTE])
    assert 0.0 <= score <= 1.0


def test_chat_completions_are_scored_like_text():
    reward = build_reward("keywords", {"per_item": True})
    text = note("community-acquired pneumonia")
    chat = [{"role": "user", "content": VIGNETTE}, {"role": "assistant", "content": text}]
    assert reward([chat, text], condition=[PNEUMONIA] * 2, findings=[["crackles"]] * 2,
                  question=[VIGNETTE] * 2) == [1.0, 1.0]


def test_a_row_without_a_condition_is_judged_by_the_rubric_alone():
    reward = build_reward("keywords", {"per_item": True})
    assert reward([ACS_NOTE], condition=[""], findings=[[]], question=[VIGNETTE]) == [1.0]


def test_an_unknown_condition_is_one_clear_error():
    with pytest.raises(RlvrError, match="unknown condition 'pneumonya'.*community-acquired-pneumonia"):
        make_item("pneumonya", [], "")


# ------------------------------------------------------------------------------------------------ the table


def test_no_name_of_one_condition_fits_another():
    forms = {slug: {tuple(w.lower() for w in form) for name in terms.names for form in name_forms(name)}
             for slug, terms in load_table().conditions.items()}

    def inside(small, big):
        return any(big[i : i + len(small)] == small for i in range(len(big) - len(small) + 1))

    clashes = [(a, x, b, y) for a, xs in forms.items() for b, ys in forms.items() if a != b
               for x in xs for y in ys if inside(x, y)]
    assert not clashes


def test_every_condition_of_the_vignette_table_has_names_and_key_findings():
    assert set(load_table().conditions) == {condition.name for condition in load_conditions()}


def test_every_key_finding_appears_in_some_generated_vignette_of_its_condition():
    seen: dict[str, set[str]] = {}
    for row in generate_vignettes():
        seen.setdefault(row["condition"], set()).update(row["findings"])
    missing = {slug: sorted(set(terms.findings) - seen[slug]) for slug, terms in load_table().conditions.items()}
    assert not {slug: labels for slug, labels in missing.items() if labels}


def test_every_generated_vignette_states_a_key_finding():
    assert all(row["findings"] for row in generate_vignettes())


def test_no_generated_vignette_names_another_condition_as_a_finding():
    table = load_table()
    names = {tuple(w.lower() for w in form) for slug, terms in table.conditions.items() for name in terms.names
             for form in name_forms(name)}
    phrases = {tuple(phrase.lower().replace("-", " ").split()) for terms in table.conditions.values()
               for alternatives in terms.findings.values() for phrase in alternatives}
    assert not names & phrases


# --------------------------------------------------------------------------------------------- the vignettes


def test_generated_rows_carry_their_condition_and_findings():
    for row in generate_vignettes():
        assert row["findings"] == findings_in(row["prompt"], row["condition"])
        assert row["id"].startswith(f"gen-{row['condition']}-")


def test_the_generated_vignettes_are_unchanged_by_the_findings():
    rows = [{key: value for key, value in row.items() if key != "findings"} for row in generate_vignettes()]
    digest = hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()
    assert digest == "86fb20732539e777ac3ef7602c055dcd9ec8ee6870f572791a8a108c6e63169a"  # ids, texts, order as before


def test_most_hand_written_vignettes_carry_a_condition_of_the_table():
    task = get_task("keywords", {"per_item": True, "test_prompts": "builtin"})
    rows = list(task.load("test"))
    with_condition = [row for row in rows if row["condition"]]
    assert len(rows) == 48 and len(with_condition) == 39
    assert all(row["findings"] for row in with_condition)
    assert all(row["findings"] == [] for row in rows if not row["condition"])


# --------------------------------------------------------------------------------------------------- the task


def test_the_per_item_option_is_off_by_default_and_adds_no_columns():
    row = get_task("keywords", {"prompts": "generated"}).load("test")[0]
    assert "condition" not in row and "findings" not in row


def test_per_item_rows_carry_condition_and_findings_columns_the_reward_reads():
    task = get_task("keywords", {"prompts": "generated", "per_item": True, "limit": 3})
    dataset = task.load("test")
    assert dataset.features["findings"].feature.dtype == "string"
    [reward] = task.reward_functions()
    columns = {key: list(dataset[key]) for key in ("condition", "findings", "question")}
    assert reward([ACS_NOTE] * 3, **columns) == [
        o.score for o in task.judge([ACS_NOTE] * 3, list(dataset))
    ]


def test_rows_without_a_condition_are_said_in_one_line_once(tmp_path, capsys):
    prompts = tmp_path / "prompts.jsonl"
    rows = [{"prompt": f"{VIGNETTE} ({n})", **({"condition": PNEUMONIA} if n < 4 else {})} for n in range(10)]
    prompts.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    task = get_task("keywords", {"prompts": str(prompts), "per_item": True})
    task.load("test")
    task.load("train")
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"rlvr: keywords per_item: 6 of 10 prompts in {prompts} have no 'condition' field; those rows "
                     "are judged by the rubric alone, without the per-item check."]


def test_prompts_that_all_carry_a_condition_or_no_per_item_check_load_without_a_word(capsys):
    get_task("keywords", {"prompts": "generated", "per_item": True, "limit": 2}).load("test")
    get_task("keywords", {"prompts": "builtin"}).load("test")  # 9 rows lack a condition, but nothing checks it
    assert capsys.readouterr().err == ""


def test_the_judge_and_breakdown_report_the_diagnosis_named_correctly():
    task = get_task("keywords", {"per_item": True})
    rows = [{"question": VIGNETTE, "condition": PNEUMONIA, "findings": ["crackles"], "rubric": ""}] * 2
    outcomes = task.judge([note("community-acquired pneumonia"), note("a pulmonary embolism")], rows)
    assert [o.correct for o in outcomes] == [True, False]
    assert outcomes[1].answer.endswith("names pulmonary-embolism") and outcomes[0].gold.endswith(PNEUMONIA)
    table = task.breakdown([o.details for o in outcomes])["per-item diagnosis check (share of completions)"]
    assert table["diagnosis named correctly"] == 0.5 and table["cites a vignette finding"] == 1.0


def test_the_verdict_tests_the_diagnosis_named_correctly_item_by_item():
    from rlvr.training.verdict import headline, verdict

    task = get_task("keywords", {"per_item": True})
    rows = [{"question": VIGNETTE, "condition": PNEUMONIA, "findings": ["crackles"], "rubric": ""}] * 3

    def evaluation(notes):
        outcomes = task.judge(notes, rows)
        return {"n": 3, "accuracy": 0.0, "ci95": [0, 1], "format_rate": None,
                "verdicts": {str(i): o.correct for i, o in enumerate(outcomes)},
                "flags": {str(i): task.item_flags(o.details) for i, o in enumerate(outcomes)}}

    wrong, right = note("a pulmonary embolism"), note("community-acquired pneumonia")
    result = verdict(evaluation([wrong, wrong, right]), evaluation([right, right, wrong]), {}, {})
    flag = result["flags"]["diagnosis named correctly"]
    assert (flag["now_yes"], flag["now_no"], round(flag["after"], 3)) == (2, 1, 0.667)
    assert "diagnosis named correctly 33.3% -> 66.7%  (2 now yes, 1 now no; McNemar exact p = 1)" in headline(result)


def test_without_the_per_item_check_the_verdict_has_no_item_flags():
    assert get_task("keywords").item_flags({"groups": {}}) == {}


def diagnosis_scores(notes, condition=PNEUMONIA, **options):
    task = get_task("keywords", {"per_item": True})
    reward = task.reward_functions([{"name": "diagnosis", **options}])[0]
    count = len(notes)
    return reward(notes, condition=[condition] * count, findings=[["crackles"]] * count, question=[VIGNETTE] * count,
                  rubric=[""] * count)


def test_the_diagnosis_reward_pays_the_right_condition_only():
    assert diagnosis_scores([note("community-acquired pneumonia"), note("a pulmonary embolism"), ACS_NOTE]) == [1.0, 0.0, 0.0]


NO_FINDING = "history of two days of feeling unwell"


def test_the_diagnosis_reward_pays_the_right_name_without_a_cited_finding_by_default():
    assert diagnosis_scores([note("community-acquired pneumonia", NO_FINDING)]) == [1.0]


def test_the_diagnosis_reward_with_finding_pays_the_right_name_only_beside_a_vignette_finding():
    notes = [note("community-acquired pneumonia"), note("community-acquired pneumonia", NO_FINDING)]
    assert diagnosis_scores(notes, with_finding=True) == [1.0, 0.0]


def test_the_diagnosis_reward_with_finding_still_refuses_the_wrong_name_with_a_finding():
    assert diagnosis_scores([note("a pulmonary embolism")], with_finding=True) == [0.0]


def test_the_diagnosis_reward_refuses_a_with_finding_that_is_not_true_or_false():
    with pytest.raises(RlvrError, match="'with_finding' must be true or false, got 'maybe'"):
        diagnosis_scores([note("community-acquired pneumonia")], with_finding="maybe")


def test_the_diagnosis_reward_does_not_pay_several_conditions_listed():
    listed = note("community-acquired pneumonia, pulmonary embolism or heart failure")
    assert diagnosis_scores([listed]) == [0.0]


def test_the_diagnosis_reward_never_raises_and_skips_rows_without_a_condition():
    task = get_task("keywords", {"per_item": True})
    reward = task.reward_functions([{"name": "diagnosis"}])[0]
    chat = [{"role": "assistant", "content": note("community-acquired pneumonia")}]
    scores = reward([None, 7, chat, "x"], condition=[PNEUMONIA, PNEUMONIA, PNEUMONIA, ""], findings=[None] * 4,
                    question=[VIGNETTE] * 4, rubric=[""] * 4)
    assert scores == [0.0, 0.0, 1.0, None]


def test_the_diagnosis_reward_does_not_pay_the_right_name_inside_looping_text():
    looping = " ".join(["The most likely diagnosis is community-acquired pneumonia."] * 8)
    assert diagnosis_scores([looping]) == [0.0]


def test_the_diagnosis_reward_without_the_per_item_option_is_refused():
    with pytest.raises(RlvrError, match="task.per_item: true"):
        get_task("keywords").reward_functions([{"name": "diagnosis"}])


def test_the_reward_option_without_the_task_option_is_refused():
    with pytest.raises(RlvrError, match="task.per_item: true"):
        get_task("keywords").reward_functions([{"name": "keywords", "per_item": True}])


def test_an_unknown_condition_in_a_prompts_file_names_the_row(tmp_path):
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join(json.dumps({"id": f"p{i}", "prompt": f"Patient {i} has a cough.", "condition": "flu"})
                            + "\n" for i in range(10)))
    with pytest.raises(RlvrError, match="keywords prompt p.*unknown condition 'flu'"):
        get_task("keywords", {"prompts": str(path), "per_item": True}).load("train")


def test_a_fixed_note_earns_full_credit_only_on_its_own_conditions_test_vignettes():
    task = get_task("keywords", {"prompts": "generated", "per_item": True, "seed": 42, "test_fraction": 0.3,
                                 "validation_fraction": 0.05})
    rows = list(task.load("test"))
    outcomes = task.judge([ACS_NOTE] * len(rows), rows)
    credited = {row["condition"] for row, outcome in zip(rows, outcomes, strict=True) if outcome.correct}
    assert credited == {"acute-coronary-syndrome"}
    assert sum(o.correct for o in outcomes) <= sum(row["condition"] == "acute-coronary-syndrome" for row in rows)


# -------------------------------------------------------------------------------------- audit and recipe


def test_the_per_item_audit_keeps_every_diagnosis_probe_below_the_honest_note():
    from rlvr.audit.keyword_probes import keyword_item_probes
    from rlvr.audit.probe import HONEST_CORRECT
    from rlvr.audit.runner import audit

    result = audit(keyword_item_probes(), [build_reward("keywords", {"per_item": True})])
    by_name = {r.probe.name: r.reward for r in result.results}
    assert result.passed
    assert max(by_name["wrong_diagnosis"], by_name["several_diagnoses"], by_name["fixed_generic_note"]) < by_name[HONEST_CORRECT]


def test_the_diagnosis_probes_are_exploits_of_the_rubric_alone():
    from rlvr.audit.keyword_probes import keyword_item_probes
    from rlvr.audit.runner import audit

    result = audit(keyword_item_probes(), [build_reward("keywords")])
    assert {r.probe.name for r in result.exploits} == {"wrong_diagnosis", "several_diagnoses", "fixed_generic_note"}


def test_the_default_keywords_audit_has_no_per_item_probes_and_passes(capsys):
    from rlvr.cli import main

    assert main(["reward", "audit", "--task", "keywords"]) == 0
    out = capsys.readouterr().out
    assert "fixed_generic_note" not in out and "PASS" in out


def test_the_diagnosis_recipe_audits_around_a_real_vignette_and_passes(capsys):
    from rlvr.cli import main

    assert main(["reward", "audit", "--recipe", str(BENCHMARK_RECIPES / "keywords-diagnosis-cpu-smollm2.yaml")]) == 0
    out = capsys.readouterr().out
    assert "per-item probes around test vignette gen-community-acquired-pneumonia-" in out
    assert "fixed_generic_note" in out and "PASS" in out


def test_the_diagnosis_recipe_is_the_keywords_recipe_with_the_per_item_check_and_the_diagnosis_reward():
    from rlvr.config import load_recipe

    base, recipe = load_recipe("keywords-cpu-smollm2"), load_recipe(str(BENCHMARK_RECIPES / "keywords-diagnosis-cpu-smollm2.yaml"))
    assert recipe.task_options == {**base.task_options, "per_item": True}
    assert (recipe.grpo, recipe.model) == (base.grpo, base.model)
    assert [r["name"] for r in recipe.rewards] == ["keywords", "diagnosis"]
    assert recipe.name != base.name
