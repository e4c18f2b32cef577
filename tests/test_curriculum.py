"""reasoning-gym curricula (task.curriculum): the levels up to the target, promotion, held-out splits, auto, the probe."""

import dataclasses
import json

import pytest
import torch

from rlvr.config import RunConfig
from rlvr.errors import RlvrError
from rlvr.tasks import get_task
from rlvr.tasks.curriculum_levels import LevelPlan, plan_levels
from rlvr.tasks.splits import normalize_question
from rlvr.training.callbacks import format_log
from rlvr.training.curriculum import Curriculum, first_level
from rlvr.training.probe_verdict import Figures, easier_start, verdict
from rlvr.training.prompt_estimates import PassEstimates
from rlvr.training.prompt_selection import PromptSelection

SMALL = {"train_size": 30, "validation_size": 10, "test_size": 10, "shots": 1}
CHAIN3 = {"min_terms": 3, "max_terms": 3, "min_digits": 1, "max_digits": 1}  # level 1 of chain_sum's num_terms


class JUDGE:  # a task whose verdict is its correctness reward
    @staticmethod
    def correct_from_rewards(rewards):
        return rewards["correctness"] == 1.0


def chain(**options):
    return get_task("reasoning-gym", {"dataset": "chain_sum", "config": CHAIN3, **SMALL, **options})


def groups(curriculum, rates, level, dataset="d", size=4):
    """One rollout of groups with these pass rates, every group on a row at ``level`` of ``dataset``."""
    inputs, rows = [], []
    for rate in rates:
        right = round(rate * size)
        inputs += [{"level": level, "source_dataset": dataset}] * size
        rows += [{"rewards": {"correctness": 1.0 if i < right else 0.0}, "reward": float(i < right)} for i in range(size)]
    curriculum.observe(inputs, rows, JUDGE)


# ----------------------------------------------------------------------------- levels up to the target


def test_target_config_maps_to_each_attributes_level_and_the_last_level_is_the_target():
    target = {"min_terms": 2, "max_terms": 5, "min_digits": 1, "max_digits": 3}
    plan = plan_levels("basic_arithmetic", target)
    assert plan.reached == {"num_terms": 3, "num_digits": 2} and plan.top == 3
    assert [(c["max_terms"], c["max_digits"]) for c in plan.configs] == [(2, 1), (3, 2), (4, 3), (5, 3)]
    assert plan.configs[-1] == target


def test_a_target_beyond_the_last_defined_level_is_the_top():
    plan = plan_levels("chain_sum", {"min_terms": 2, "max_terms": 20, "min_digits": 1, "max_digits": 1})
    assert plan.reached["num_terms"] == 10 and plan.top == 10  # levels 2..12 terms: the last is index 10


def test_a_level_the_dataset_rejects_is_left_out():
    plan = plan_levels("knight_swap", {})  # its curriculum's first level has 4 nodes; the dataset needs 6
    assert all(config.get("min_nodes", 6) >= 6 for config in plan.configs) and plan.top == 1


# ----------------------------------------------------------------------------- promotion


def test_promoted_when_the_windows_pass_rate_reaches_the_threshold_and_never_past_the_target():
    curriculum = Curriculum([0, 0, 1, 1, 2, 2], ["d"] * 6, {"d": 2}, threshold=0.5, window=2, group_size=4)
    assert curriculum.eligible().tolist() == [1, 1, 0, 0, 0, 0]
    groups(curriculum, [0.5], level=0)
    assert curriculum.current["d"] == 0  # the window is not full yet
    groups(curriculum, [0.5], level=0)
    assert curriculum.current["d"] == 1 and curriculum.eligible().tolist() == [0, 0, 1, 1, 0, 0]
    groups(curriculum, [1.0, 1.0], level=1)
    groups(curriculum, [1.0, 1.0, 1.0], level=2)
    assert curriculum.current["d"] == 2 and [p["level"] for p in curriculum.promotions] == [1, 2]
    evaluations = [{"step": 0, "accuracy": 0.1}, {"step": 10, "accuracy": 0.3}]  # validation on the target
    assert curriculum.summary(evaluations)["promotions"][0]["validation"] == {"step": 0, "accuracy": 0.1}


def test_no_promotion_below_the_threshold_nor_from_groups_of_another_level():
    curriculum = Curriculum([0, 1], ["d"] * 2, {"d": 1}, threshold=0.5, window=2, group_size=4)
    groups(curriculum, [0.25, 0.5, 0.25, 0.5], level=0)
    groups(curriculum, [1.0, 1.0], level=1)  # rows drawn before the level changed do not count
    assert curriculum.current["d"] == 0 and not curriculum.promotions
    assert curriculum.metrics()["curriculum/pass_rate"] == pytest.approx(0.375)


def test_each_dataset_of_a_mixture_climbs_on_its_own_rows():
    curriculum = Curriculum([0, 1, 0, 1], ["a", "a", "b", "b"], {"a": 1, "b": 1}, threshold=0.5, window=1,
                            group_size=4)
    groups(curriculum, [1.0], level=0, dataset="a")
    groups(curriculum, [0.0], level=0, dataset="b")
    assert curriculum.current == {"a": 1, "b": 0} and curriculum.eligible().tolist() == [0, 1, 1, 0]
    assert curriculum.summary()["datasets"]["a"] == {"levels": 2, "target_level": 1, "level_reached": 1}


def test_the_sampler_draws_only_the_current_levels_rows():
    keys = [str(i) for i in range(6)]
    selection = PromptSelection("uniform", 0.05, PassEstimates(keys, 4), seed=0)
    selection.curriculum = Curriculum([0, 0, 0, 1, 1, 1], ["d"] * 6, {"d": 1}, 0.5, 1, 4)
    generator = torch.Generator().manual_seed(0)
    assert {i for _ in range(50) for i in selection.draw(2, generator)} == {0, 1, 2}
    groups(selection.curriculum, [1.0], level=0)
    assert {i for _ in range(50) for i in selection.draw(2, generator)} == {3, 4, 5}


# ----------------------------------------------------------------------------- the task's splits


def test_test_split_is_the_non_curriculum_tasks_and_disjoint_from_every_levels_train_questions():
    on, off = chain(curriculum="on"), chain(curriculum="off")
    assert on.load("test")["question"] == off.load("test")["question"]
    assert on.load("validation")["question"] == off.load("validation")["question"]
    train = on.load("train")
    assert sorted(set(train["level"])) == [0, 1] and "level" not in off.load("train").column_names
    held_out = {normalize_question(q) for split in ("test", "validation") for q in on.load(split)["question"]}
    for level in (0, 1):
        questions = {normalize_question(r["question"]) for r in train if r["level"] == level}
        assert questions and not questions & held_out
    assert first_level(train)["level"] == [0] * sum(level == 0 for level in train["level"])


def test_a_mixture_trains_each_dataset_through_its_own_levels_by_weight():
    task = get_task("reasoning-gym", {"datasets": [{"name": "chain_sum", "config": CHAIN3, "weight": 2},
                                                   {"name": "products", "config": {"max_terms": 3, "max_digits": 1}}], **SMALL})
    train = task.load("train")
    per = {(name, level): 0 for name in ("chain_sum", "products") for level in (0, 1)}
    for row in train:
        per[(row["source_dataset"], row["level"])] += 1
    assert per == {("chain_sum", 0): 20, ("chain_sum", 1): 20, ("products", 0): 10, ("products", 1): 10}


# ----------------------------------------------------------------------------- auto, and bad settings


@pytest.mark.parametrize(("options", "on", "says"), [
    ({"dataset": "chain_sum", "config": CHAIN3}, True, "curriculum: on (auto): chain_sum levels 0-1"),
    ({"dataset": "lcm", "config": {"min_value": 1, "max_value": 12}}, False, "at or below its curriculum's first level"),
    ({"dataset": "acre"}, False, "acre has no curriculum"),
])
def test_auto_trains_through_levels_only_where_a_curriculum_exists_above_the_target(options, on, says):
    task = get_task("reasoning-gym", {**options, **SMALL})
    assert (task.level_plans() is not None) is on
    assert says in task.curriculum_note and "\n" not in task.curriculum_note


@pytest.mark.parametrize(("options", "named"), [
    ({"curriculum": "sometimes"}, "curriculum must be auto, on or off"),
    ({"curriculum_threshold": 0}, "curriculum_threshold must be a pass rate"),
    ({"curriculum_threshold": 1.5}, "curriculum_threshold must be a pass rate"),
    ({"curriculum_window": 0}, "curriculum_window must be a positive number"),
    ({"curriculum": "on", "dataset": "acre", "config": {}}, "curriculum: on, but acre has no curriculum"),
    ({"curriculum": "on", "dataset": "lcm", "config": {"max_value": 12}}, "at or below its curriculum's first level"),
])
def test_bad_curriculum_settings_are_one_line(options, named):
    with pytest.raises(RlvrError, match=named) as caught:
        get_task("reasoning-gym", {"dataset": "chain_sum", "config": CHAIN3, **SMALL, **options})
    assert "\n" not in str(caught.value)


# ----------------------------------------------------------------------------- reporting and the probe


def test_the_step_line_shows_the_level_of_the_top_and_its_pass_rate():
    line = format_log({"reward": 0.5, "curriculum/level": 1.0, "curriculum/top": 4.0, "curriculum/pass_rate": 0.58})
    assert "level 1/4 58%" in line


def test_too_hard_names_the_curriculum_where_one_is_unused_else_online_selection():
    recipe = dataclasses.make_dataclass("R", [("run", RunConfig)])(RunConfig())
    hard = Figures(items=64, group_size=8, max_tokens=32, greedy_accuracy=0.0, greedy_format_rate=0.9, pass_at_1=0.0,
                   pass_at_g=0.05, format_rate=0.9, truncated=0.0, stopped_at_answer=0.9, ended_eos=0.1,
                   mean_tokens=20.0, groups_all_right=0.0, groups_all_wrong=0.95, zero_variance=0.95,
                   zero_variance_all_right=0.0, zero_variance_all_wrong=0.95, zero_variance_other=0.0)
    unused = verdict(hard, easier=easier_start(chain(curriculum="off"), recipe))
    assert unused.name == "too hard" and "chain_sum's curriculum" in unused.suggestion
    assert "task.curriculum: on" in unused.suggestion
    flat = get_task("reasoning-gym", {"dataset": "lcm", "config": {"max_value": 12}, **SMALL})
    assert "run.prompt_selection: online" in verdict(hard, easier=easier_start(flat, recipe)).suggestion
    assert "run.prompt_selection: online" in easier_start(chain(), recipe)  # already on: online selection next


def test_a_two_step_run_climbs_and_reports_the_level_in_the_log_and_summary(tiny_model_dir, tmp_path, monkeypatch):
    from rlvr.config import recipe_from_dict
    from rlvr.training import curriculum
    from rlvr.training.run import train

    monkeypatch.setattr(curriculum, "group_passes", lambda rows, task, size: [(size, size)] * (len(rows) // size))
    spec = recipe_from_dict({
        "name": "tiny-curriculum",
        "model": {"name_or_path": str(tiny_model_dir), "lora": False},
        "task": {"name": "reasoning-gym", "dataset": "chain_sum", "config": CHAIN3, "train_size": 8,
                 "validation_size": 2, "test_size": 2, "shots": 0, "curriculum_window": 2},
        "grpo": {"max_steps": 2, "per_device_train_batch_size": 8, "num_generations": 4, "max_completion_length": 4,
                 "logging_steps": 1, "save_strategy": "no", "seed": 3, "report_to": ["none"]},
        "run": {"output_dir": str(tmp_path / "run"), "tracking_uri": str(tmp_path / "mlruns"), "sample_steps": 0,
                "health_histogram_steps": 0},
    })
    result = train(spec, quiet=True)
    block = json.loads((tmp_path / "run" / "summary.json").read_text())["curriculum"]
    assert block["datasets"]["chain_sum"] == {"levels": 2, "target_level": 1, "level_reached": 1}
    assert block["promotions"][0]["step"] == 1 and "not measured" in block["promotions"][0]["validation"]
    logged = [entry for entry in result.log_history if "reward" in entry]
    assert logged[0]["curriculum/level"] == 1 and logged[0]["curriculum/top"] == 1
    assert isinstance(plan_levels("chain_sum", CHAIN3), LevelPlan)


def test_a_cpu_default_recipe_on_a_reasoning_gym_dataset_with_a_curriculum_uses_it_untold(tmp_path):
    from rlvr.config import load_recipe
    from rlvr.run_parts import build_parts

    path = tmp_path / "recipe.yaml"
    path.write_text("base: cpu-default\nname: chain-levels\ntask: {name: reasoning-gym, dataset: chain_sum, "
                    "config: {min_terms: 3, max_terms: 3, min_digits: 1, max_digits: 1}}\n")
    task = build_parts(load_recipe(str(path))).task()
    assert task.curriculum == "auto" and task.level_plans()["chain_sum"].top == 1
    assert task.curriculum_note.startswith("rlvr: curriculum: on (auto)")


@pytest.mark.parametrize(("written", "meant"), [("curriculum: off", "off"), ("curriculum: on", "on"), ("curriculum: auto", "auto")])
def test_yaml_on_and_off_are_read_as_the_curriculum_modes(written, meant):
    import yaml

    from rlvr.tasks import get_task

    options = {"dataset": "basic_arithmetic", "config": {"min_terms": 2, "max_terms": 3}, **yaml.safe_load(written)}
    assert get_task("reasoning-gym", options).curriculum == meant


def test_the_constant_answer_is_learnt_from_the_target_levels_train_rows_only():
    from rlvr.tasks import get_task

    options = {"dataset": "products", "config": {"min_digits": 1, "max_digits": 2}, "train_size": 60,
               "validation_size": 5, "test_size": 10}
    task = get_task("reasoning-gym", options)
    rows = task.load("train")
    top = max(rows["level"])
    at_target = [a for a, level in zip(rows["final_answer"], rows["level"], strict=True) if level == top]
    assert len(rows) > len(at_target) and task.train_answers() == at_target
    assert get_task("reasoning-gym", {**options, "curriculum": "off"}).train_answers() == list(
        get_task("reasoning-gym", {**options, "curriculum": "off"}).load("train")["final_answer"])
