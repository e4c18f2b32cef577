"""Online prompt selection (run.prompt_selection): the estimates, the sampler, bad settings, and a tiny run."""

import json

import pytest
import torch

from rlvr.config import RunConfig, recipe_from_dict
from rlvr.errors import RlvrError
from rlvr.training.prompt_estimates import PassEstimates, group_passes, read_prior
from rlvr.training.prompt_selection import OnlineSampler, PromptSelection


def selection(keys, group_size=8, revisit=0.05, mode="online"):
    return PromptSelection(mode, revisit, PassEstimates(keys, group_size), seed=0)


def draws(chosen, times, count=1, seed=0):
    generator = torch.Generator()
    generator.manual_seed(seed)
    picks = [i for _ in range(times) for i in chosen.draw(count, generator)]
    return [picks.count(i) for i in range(len(chosen.estimates))]


def tiny_recipe(model, out, grpo=None, **run):
    return recipe_from_dict({
        "name": "tiny-selection",
        "model": {"name_or_path": str(model), "lora": False},
        "task": {"name": "arithmetic", "train_size": 6, "validation_size": 2, "test_size": 2, "shots": 0},
        "grpo": {"max_steps": 1, "per_device_train_batch_size": 8, "num_generations": 4, "max_completion_length": 6,
                 "logging_steps": 1, "save_strategy": "no", "seed": 3, "report_to": ["none"], **(grpo or {})},
        "run": {"output_dir": str(out / "run"), "tracking_uri": str(out / "mlruns"), "sample_steps": 0,
                "health_histogram_steps": 0, **run},
    })


def test_uniform_mode_draws_exactly_what_trls_repeat_sampler_draws(tiny_model_dir, tmp_path):
    from trl.trainer.utils import RepeatSampler

    from rlvr.training.run import build_trainer

    trainer = build_trainer(tiny_recipe(tiny_model_dir, tmp_path, {"gradient_accumulation_steps": 2}), quiet=True)
    args = trainer.args
    trls = RepeatSampler(trainer.train_dataset, trainer.num_generations,
                         args.generation_batch_size // trainer.num_generations,
                         trainer.num_iterations * args.steps_per_generation, seed=args.seed)
    assert trainer.prompt_selection.mode == "uniform"
    assert list(trainer._get_train_sampler()) == list(trls)


def test_online_sampler_keeps_trls_layout_and_length():
    size, group, prompts, repeats = 10, 4, 3, 2
    sampler = OnlineSampler(selection([str(i) for i in range(size)], group), size, group, prompts, repeats, seed=1)
    indices = list(sampler)
    assert len(indices) == len(sampler) == (size // prompts) * prompts * group * repeats
    for batch in range(size // prompts):
        block = indices[batch * prompts * group * repeats:(batch + 1) * prompts * group * repeats]
        first = block[: prompts * group]
        assert block == first * repeats  # the generation batch repeated, as TRL reuses it
        assert all(first[i * group:(i + 1) * group] == [first[i * group]] * group for i in range(prompts))
        assert len(set(first)) == prompts  # distinct prompts within a batch


def test_prompts_always_right_or_always_wrong_are_drawn_less_than_a_mixed_one():
    chosen = selection(["right", "wrong", "mixed"])
    for _ in range(3):
        chosen.estimates.observe("right", 8, 8)
        chosen.estimates.observe("wrong", 0, 8)
        chosen.estimates.observe("mixed", 4, 8)
    right, wrong, mixed = draws(chosen, 3000)
    assert mixed > 3 * right and mixed > 3 * wrong


def test_revisit_rate_keeps_every_prompt_drawn_eventually():
    chosen = selection([str(i) for i in range(10)], revisit=0.05)
    for i in range(9):
        chosen.estimates.observe(str(i), 0, 800)  # settled: never right
    chosen.estimates.observe("9", 400, 800)
    assert torch.allclose(chosen.estimates.weights(0.05)[:9], torch.full((9,), 0.05, dtype=torch.float64))
    counts = draws(chosen, 2000)
    assert min(counts) > 0 and counts[9] > max(counts[:9])


def test_estimates_are_seeded_from_a_difficulty_file_and_a_probe(tmp_path):
    rows = [{"id": "a", "pass_rate": 0.0, "kept": False}, {"id": "b", "pass_rate": 0.5, "kept": True},
            {"id": "other", "pass_rate": 1.0, "kept": False}]
    (tmp_path / "difficulty.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    estimates = PassEstimates(["a", "b", "c"], group_size=8)
    assert estimates.seed(read_prior(tmp_path / "difficulty.jsonl", 8)) == 2  # "other" is no training prompt
    assert estimates.total.tolist() == [8.0, 8.0, 0.0] and estimates.right.tolist() == [0.0, 4.0, 0.0]
    weights = estimates.weights(0.05)
    assert weights[1] > weights[2] > weights[0]  # mixed > unknown > never right
    probe = {"figures": {"group_size": 4}, "items": [{"id": "c", "sampled_correct": 4}]}
    (tmp_path / "probe.json").write_text(json.dumps(probe))
    assert estimates.seed(read_prior(tmp_path / "probe.json", 8)) == 1
    assert estimates.right[2] == 4 and estimates.total[2] == 4


def test_without_a_deciding_reward_a_completion_counts_right_above_its_groups_lowest():
    rows = [{"rewards": {"format": r}, "reward": r} for r in (0.5, 0.5, 0.0, 0.5, 1.0, 1.0, 1.0, 1.0)]
    assert group_passes(rows, None, 4) == [(3, 4), (0, 4)]


@pytest.mark.parametrize(("options", "named"), [
    ({"prompt_selection": "greedy"}, "run.prompt_selection must be uniform or online"),
    ({"prompt_selection": "online", "prompt_selection_revisit": 0}, "run.prompt_selection_revisit"),
    ({"prompt_selection": "online", "prompt_selection_revisit": 1.5}, "run.prompt_selection_revisit"),
    ({"prompt_selection_prior": "difficulty.jsonl"}, "set run.prompt_selection: online"),
])
def test_bad_selection_settings_are_one_line(options, named):
    with pytest.raises(RlvrError, match=named) as caught:
        RunConfig(**options)
    assert "\n" not in str(caught.value)


def test_a_missing_or_malformed_prior_file_is_one_line(tmp_path):
    with pytest.raises(RlvrError, match="file not found") as missing:
        read_prior(tmp_path / "nowhere.jsonl", 8)
    (tmp_path / "probe.json").write_text(json.dumps({"items": []}))
    with pytest.raises(RlvrError, match="not a probe.json") as malformed:
        read_prior(tmp_path / "probe.json", 8)
    assert "\n" not in str(missing.value) + str(malformed.value)


def test_one_step_online_run_with_resample_and_the_shared_prompt_loss_records_the_summary(
        tiny_model_dir, tmp_path, monkeypatch):
    from rlvr.training.run import train
    from rlvr.training.shared_prompt import SHARED

    rollouts = []
    observe = PromptSelection.observe
    monkeypatch.setattr(PromptSelection, "observe", lambda self, *a: (rollouts.append(len(a[1])), observe(self, *a)))
    grpo = {"gradient_checkpointing": False, "beta": 0.1}  # the shared-prompt loss runs (a KL term: even on zero advantages)
    spec = tiny_recipe(tiny_model_dir, tmp_path, grpo, prompt_selection="online", zero_variance_groups="resample")
    result = train(spec, quiet=True)
    assert result.shared_prompt["rollouts"] == result.shared_prompt["loss"] == SHARED
    block = json.loads((tmp_path / "run" / "summary.json").read_text())["prompt_selection"]
    assert block["mode"] == "online" and 2 <= block["distinct_prompts_seen"] <= block["prompts"] <= 6
    assert 0 <= block["overhead"] < 1 and block["signal_share_first"] is not None
    logged = [entry for entry in result.log_history if "reward" in entry]
    assert logged[0]["selection/distinct_prompts"] == block["distinct_prompts_seen"]
    if logged[0]["zero_variance/share"] > 0:  # resample rolled fresh prompts out: they fed the estimates too
        assert 1 < len(rollouts) <= 1 + spec.run.resample_attempts
