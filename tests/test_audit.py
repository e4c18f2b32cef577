"""The reward audit passes the built-in rewards and catches the published recipe's original rewards."""

import re

import pytest
from conftest import BENCHMARK_RECIPES

from rlvr.audit.probe_sets import PROBE_SETS
from rlvr.audit.runner import audit
from rlvr.cli import main
from rlvr.rewards import REWARDS
from rlvr.rewards.base import build_reward, completion_text, named
from rlvr.tasks.base import TASKS


def builtin(task: str) -> tuple[list, list[float]]:
    """The task's default reward functions (raw) and their weights."""
    instance = TASKS.get(task)()
    return instance.reward_functions(), instance.reward_weights()


def published_format(completions, **_):
    """The published format reward: 0.5 when a newline then '#### The final answer is <digits>' occurs anywhere."""
    return [0.5 if re.search(r"\n#### The final answer is \d+", completion_text(c)) else 0.0 for c in completions]


def published_correctness(completions, final_answer, **_):
    r"""The published correctness reward: the first number after the first '####' that has one on its line
    (``####.*?([\d,]+(?:\.\d+)?)``, no minus sign), commas removed, within 1e-3 of the gold."""
    scores = []
    for c, gold in zip(completions, final_answer, strict=True):
        match = re.search(r"####.*?([\d,]+(?:\.\d+)?)", completion_text(c))
        try:
            scores.append(1.0 if match and abs(float(match.group(1).replace(",", "")) - float(gold)) < 1e-3 else 0.0)
        except ValueError:
            scores.append(0.0)
    return scores


def published_evaluation(completions, final_answer, **_):
    """Not a reward: the published notebook's evaluation, the last integer anywhere equals the gold as a string."""
    scores = []
    for c, gold in zip(completions, final_answer, strict=True):
        numbers = re.findall(r"-?\d+", completion_text(c).replace(",", ""))
        scores.append(1.0 if numbers and numbers[-1] == str(gold) else 0.0)
    return scores


PUBLISHED_REWARDS = [named("format", published_format), named("correctness", published_correctness)]


def test_builtin_gsm8k_rewards_pass_the_audit():
    result = audit(PROBE_SETS["gsm8k"], *builtin("gsm8k"))
    assert result.passed, [r.probe.name for r in result.exploits]


def test_the_published_training_rewards_read_the_first_answer_line_and_pass_the_audit():
    result = audit(PROBE_SETS["gsm8k"], PUBLISHED_REWARDS)
    assert result.passed, [r.probe.name for r in result.exploits]
    assert [r.probe.name for r in result.results if r.beats_wrong] == ["answer_without_reasoning"]


def test_the_published_correctness_reward_ignores_the_minus_sign():
    completions = ["3 - 8 = -5.\n#### The final answer is -5", "8 - 3 = 5.\n#### The final answer is 5"]
    assert published_correctness(completions, final_answer=["-5", "-5"]) == [0.0, 0.0]  # a negative gold never pays
    assert published_correctness(completions[:1], final_answer=["5"]) == [1.0]  # the wrong sign pays


def test_the_published_evaluation_extractor_as_a_reward_fails_the_audit():
    result = audit(PROBE_SETS["gsm8k"], [named("format", published_format), named("correctness", published_evaluation)])
    exploits = {r.probe.name for r in result.exploits}
    assert not result.passed
    assert {"several_answer_lines", "answer_in_followup_question"} <= exploits


def test_answer_without_reasoning_beats_a_wrong_answer_until_the_penalty_is_added():
    plain = audit(PROBE_SETS["gsm8k"], *builtin("gsm8k"))
    funcs, weights = builtin("gsm8k")
    penalised = audit(PROBE_SETS["gsm8k"], funcs + [build_reward("reasoning_required")], weights + [0.5])
    assert [r.beats_wrong for r in plain.results if r.probe.name == "answer_without_reasoning"] == [True]
    assert not any(r.beats_wrong for r in penalised.results)


def test_cli_audit_exits_zero_on_builtin_rewards(capsys):
    assert main(["reward", "audit", "--task", "gsm8k"]) == 0
    assert "PASS" in capsys.readouterr().out


def test_cli_audit_exits_one_when_a_hack_matches_an_honest_correct_answer(capsys):
    assert main(["reward", "audit", "--task", "gsm8k", "--set", "rewards=[{name: correctness}]"]) == 1
    assert "EXPLOIT" in capsys.readouterr().out


def test_cli_audit_skips_a_task_whose_reward_is_not_registered(capsys):
    if "code_execution" in REWARDS:
        pytest.skip("the code reward is installed: its probes run instead")
    assert main(["reward", "audit", "--task", "code", "--task", "gsm8k"]) == 0
    assert "skipping code: reward 'code_execution' is not registered" in capsys.readouterr().out


def test_cli_audit_names_the_tasks_with_probes_for_an_unknown_one(capsys):
    assert main(["reward", "audit", "--task", "chess"]) == 2
    assert "tasks with probes: gsm8k" in capsys.readouterr().err


def naive_keyword_reward(completions, **_):
    """The published recipe's sketch of a keyword reward: the share of term groups mentioned anywhere."""
    groups = [("diagnosis", "symptom"), ("treatment", "therapy", "medication", "antibiotic"), ("monitor", "review", "follow up")]
    texts = [completion_text(c).lower() for c in completions]
    return [sum(any(term in text for term in group) for group in groups) / len(groups) for text in texts]


def test_builtin_keywords_reward_passes_the_audit():
    result = audit(PROBE_SETS["keywords"], *builtin("keywords"))
    assert result.passed, [r.probe.name for r in result.exploits]


def test_keyword_lists_stuffing_and_repetition_earn_less_than_an_honest_wrong_answer():
    result = audit(PROBE_SETS["keywords"], *builtin("keywords"))
    stuffing = {"keyword_list", "keyword_bullets", "keyword_stuffed_sentence", "paragraph_repeated", "negated_treatment"}
    assert not [r.probe.name for r in result.results if r.probe.name in stuffing and r.beats_wrong]


def test_a_naive_keyword_count_reward_fails_the_audit():
    result = audit(PROBE_SETS["keywords"], [named("keywords", naive_keyword_reward)])
    exploits = {r.probe.name for r in result.exploits}
    assert not result.passed
    assert {"keyword_list", "keyword_bullets", "paragraph_repeated", "off_topic_terms"} <= exploits


def test_cli_audit_suggests_the_semantic_check_when_off_topic_prose_beats_a_wrong_answer(capsys):
    assert main(["reward", "audit", "--task", "keywords"]) == 0
    out = capsys.readouterr().out
    assert "off_topic_terms" in out and "semantic" in out


def test_cli_audit_uses_the_keywords_recipes_rubric_and_passes(capsys):
    assert main(["reward", "audit", "--recipe", "keywords-cpu-smollm2"]) == 0
    assert "reward audit: keywords" in capsys.readouterr().out


def test_cli_audit_skips_keyword_probes_for_a_rubric_they_were_not_written_for(tmp_path, capsys):
    rubric = tmp_path / "legal.yaml"
    rubric.write_text("groups:\n  claim:\n    terms: [claim, plaintiff]\n")
    code = main(["reward", "audit", "--recipe", "keywords-cpu-smollm2", "--set", f"task.rubric={rubric}"])
    captured = capsys.readouterr()
    assert code == 2
    assert f"skipping keywords: its probes are written for the built-in clinical rubric, and the rewards use {rubric}" in captured.out


def test_cli_audit_probes_a_recipe_with_the_diagnosis_reward_alone_around_a_vignette(tmp_path, capsys):
    recipe = tmp_path / "diagnosis.yaml"
    recipe.write_text(f"base: {BENCHMARK_RECIPES / 'keywords-named-12-cited-cpu-smollm2.yaml'}\nname: diagnosis-alone\n"
                      "rewards:\n  - {name: diagnosis, weight: 2.0, with_finding: true}\n")
    main(["reward", "audit", "--recipe", str(recipe)])
    out = capsys.readouterr().out
    honest = next(line for line in out.splitlines() if line.startswith("honest_correct"))
    assert "per-item probes around" in out and "diagnosis scored no probe" not in out
    assert honest.split()[2:4] == ["+2.000", "+2.000"]


def test_cli_audit_applies_grpo_reward_weights_to_the_task_defaults(capsys):
    assert main(["reward", "audit", "--task", "gsm8k", "--set", "rewards=[]", "--set", "grpo.reward_weights=[0.0, 1.0]"]) == 1
    assert "EXPLOIT" in capsys.readouterr().out  # without the format reward, a bare answer line pays in full


def test_cli_audit_shows_weighted_components_summing_to_the_reward(capsys):
    assert main(["reward", "audit", "--task", "gsm8k"]) == 0
    honest = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("honest_correct"))
    assert honest.split()[2:5] == ["+1.500", "+0.500", "+1.000"]


def test_cli_audit_refuses_weights_set_in_both_places(capsys):
    assert main(["reward", "audit", "--task", "gsm8k", "--set", "grpo.reward_weights=[0.5, 1.0]"]) == 2
    assert "set twice" in capsys.readouterr().err
