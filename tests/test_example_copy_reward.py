"""The ``example_copy`` reward: copying the worked example the prompt shows costs, reusing its sentence frames does not."""

import pytest

from rlvr.audit.keyword_probes import KEYWORD_PROBES
from rlvr.audit.probe import HONEST_CORRECT
from rlvr.errors import RlvrError
from rlvr.rewards import build_reward
from rlvr.rewards.copying import copied_share
from rlvr.tasks import get_task
from rlvr.tasks.note_exemplars import load_exemplar_notes

CELLULITIS, GOUT = (note.completion for note in load_exemplar_notes("builtin"))


def reward(**params):
    return build_reward("example_copy", {"examples": [CELLULITIS], **params})


def test_a_verbatim_copy_of_the_example_costs_the_full_point():
    assert reward()([CELLULITIS]) == [-1.0]


def test_a_copy_with_the_condition_site_and_drug_swapped_still_costs_the_full_point():
    swapped = (CELLULITIS.replace("cellulitis", "migraine").replace("lower leg", "head")
               .replace("flucloxacillin", "sumatriptan"))
    assert reward()([swapped]) == [-1.0]


def test_a_note_written_in_the_examples_frame_costs_nothing():
    assert copied_share(GOUT, [CELLULITIS]) > 0.1  # it does share the frame
    assert reward()([GOUT]) == [0.0]


def test_an_honest_note_reusing_the_examples_follow_up_sentence_costs_nothing():
    honest = next(probe.completion for probe in KEYWORD_PROBES if probe.kind == HONEST_CORRECT)
    assert reward()([honest]) == [0.0]


def test_the_cost_grows_linearly_between_free_and_full():
    half = " ".join(CELLULITIS.split()[:40]) + " " + " ".join(f"word{i}" for i in range(40))
    share = copied_share(half, [CELLULITIS])
    assert 0.4 < share < 0.7
    assert reward()([half]) == [pytest.approx(-(share - 0.4) / 0.3, abs=1e-4)]


def test_chat_completions_are_judged_on_the_assistant_text():
    assert reward()([[{"role": "assistant", "content": CELLULITIS}]]) == [-1.0]


def test_unreadable_or_empty_output_costs_nothing_and_never_raises():
    assert reward()(["", None, 42, [{"role": "assistant"}], "too short"]) == [0.0] * 5


def test_without_example_texts_the_reward_says_what_to_set():
    with pytest.raises(RlvrError, match="task.shots"):
        build_reward("example_copy", {})


def test_examples_given_as_one_string_instead_of_a_list_fail_in_one_line():
    with pytest.raises(RlvrError, match="a list of texts"):
        build_reward("example_copy", {"examples": CELLULITIS})


@pytest.mark.parametrize("params", [{"free": 0.8, "full": 0.5}, {"n": 0}, {"full": 1.5}])
def test_bad_parameters_fail_in_one_line(params):
    with pytest.raises(RlvrError, match="example_copy"):
        reward(**params)


def test_the_keywords_task_fills_in_the_notes_its_prompts_show():
    task = get_task("keywords", {"shots": 2})
    [spec] = task.reward_specs([{"name": "example_copy"}])
    assert spec["examples"] == [CELLULITIS, GOUT]
    [func] = task.reward_functions([{"name": "example_copy"}])
    assert func([GOUT]) == [-1.0]


def test_the_keywords_task_without_shots_cannot_build_the_reward():
    with pytest.raises(RlvrError, match="task.shots"):
        get_task("keywords").reward_functions([{"name": "example_copy"}])


def test_the_verdict_counts_notes_copying_the_example_and_their_full_credit():
    task = get_task("keywords", {"shots": 1, "per_item": True, "name_is_diagnosis": True, "prompts": "generated",
                                 "conditions": ["community-acquired-pneumonia"]})
    row = next(row for row in task.load("test") if "fever" in row["findings"])  # the example cites a fever
    renamed = CELLULITIS.replace("cellulitis", "community-acquired pneumonia")
    outcomes = task.judge([renamed, GOUT], [row, row])
    assert outcomes[0].correct  # the rubric alone pays the renamed copy in full: why the breakdown says so
    tables = task.breakdown([outcome.details for outcome in outcomes])
    copied = tables["the example note copied (share of completions)"]
    assert copied["copies the example note"] == 0.5
    assert copied["copies it and earns full credit"] == 0.5
    assert [task.item_flags(o.details)["copies the example note"] for o in outcomes] == [True, False]


def test_without_example_notes_the_verdict_has_no_copy_table():
    task = get_task("keywords")
    outcomes = task.judge([CELLULITIS], [task.load("test")[0]])
    assert "the example note copied (share of completions)" not in task.breakdown([o.details for o in outcomes])


def audit_with(rewards):
    from rlvr.audit.keyword_probes import keyword_item_probes
    from rlvr.audit.runner import audit

    task = get_task("keywords", {"shots": 1, "per_item": True, "name_is_diagnosis": True})
    specs = [{"name": name} for name in rewards]
    return audit(keyword_item_probes(examples=[CELLULITIS]), task.reward_functions(specs), task.reward_weights(specs))


def test_the_audit_probes_the_example_copied_and_renamed():
    from rlvr.audit.keyword_probes import example_probes
    from rlvr.verifiers.condition_mentions import conditions_named

    copied, renamed = example_probes(CELLULITIS, "community-acquired-pneumonia")
    assert copied.completion == CELLULITIS
    assert conditions_named(renamed.completion) == ["community-acquired-pneumonia"]
    assert renamed.completion.endswith(CELLULITIS.split("diagnosis", 1)[1])  # the rest is the example's


def test_without_example_copy_the_renamed_example_pays_as_much_as_an_honest_note():
    result = audit_with(["keywords", "diagnosis"])
    assert "example_renamed" in {r.probe.name for r in result.exploits}


def test_with_example_copy_no_copy_of_the_example_reaches_an_honest_note():
    result = audit_with(["keywords", "diagnosis", "example_copy"])
    assert result.passed, [r.probe.name for r in result.exploits]
    copied = next(r for r in result.results if r.probe.name == "example_copied")
    assert not copied.beats_wrong
