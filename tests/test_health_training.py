"""Real (tiny) GRPO runs: every health metric reaches the log and MLflow, and each control does its job.

A tiny random Llama trains for 2 steps on 4 arithmetic prompts. The test reward
``steady`` makes the groups of even-numbered prompts zero-variance on purpose
(reward 1 whatever the completion) and the others vary with the completion.
"""

import json

import pytest

from rlvr.config import recipe_from_dict
from rlvr.rewards.base import REWARDS, named
from rlvr.testing import build_tiny_model
from rlvr.training.report import write_report
from rlvr.training.run import build_trainer, train

if "steady" not in REWARDS:

    @REWARDS.register("steady")
    def _steady(weight: float = 1.0):
        def steady(completions, id, **_):  # noqa: A002 - the dataset column is called id
            index = [int(str(i).rsplit("-", 1)[1]) for i in id]
            return [weight if n % 2 == 0 else float(len(c) % 2) for c, n in zip(completions, index, strict=True)]

        return named("steady", steady)


HEALTH_KEYS = [
    "rewards/steady/mean", "rewards/steady/std", "rewards/correctness/mean", "health/accuracy", "health/format_rate",
    "zero_variance/share", "zero_variance/dropped_share", "zero_variance/resampled_share", "advantages/mean",
    "advantages/std", "advantages/min", "advantages/max", "advantages/clipped_share", "completions/clipped_ratio",
    "completions/stopped_at_answer_ratio", "completions/mean_length", "kl", "learning_rate", "time/generation",
    "time/rewards", "time/update",
]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def recipe(model, out, grpo=None, **run):
    return recipe_from_dict({
        "name": "tiny-health",
        "model": {"name_or_path": str(model), "lora": False},
        "task": {"name": "arithmetic", "train_size": 4, "validation_size": 2, "test_size": 2, "shots": 0},
        "rewards": [{"name": "format"}, {"name": "correctness"}, {"name": "steady"}],
        "grpo": {"max_steps": 2, "per_device_train_batch_size": 8, "num_generations": 4, "max_completion_length": 6,
                 "logging_steps": 1, "save_strategy": "no", "seed": 3, "report_to": ["none"], **(grpo or {})},
        "run": {"output_dir": str(out / "run"), "tracking_uri": str(out / "mlruns"), "sample_steps": 1,
                "health_histogram_steps": 1, **run},
    })


@pytest.fixture(scope="module")
def resample_run(tiny_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("resample")
    spec = recipe(tiny_model, out, {"beta": 0.1, "report_to": ["mlflow"]},
                  zero_variance_groups="resample", advantage_clip=0.5)
    return train(spec, quiet=True), out


def steps(result):
    return [entry for entry in result.log_history if "reward" in entry]


def test_every_health_metric_is_logged_each_step(resample_run):
    result, _ = resample_run
    for entry in steps(result):
        assert set(HEALTH_KEYS) <= set(entry), sorted(set(HEALTH_KEYS) - set(entry))


def test_health_metrics_and_artifacts_reach_mlflow(resample_run):
    import mlflow

    _, out = resample_run
    client = mlflow.MlflowClient((out / "mlruns").as_uri())
    run = client.search_runs([client.get_experiment_by_name("rlvr").experiment_id])[0]
    assert set(HEALTH_KEYS) <= set(run.data.metrics)
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"health", "samples"} <= artifacts


def test_resampling_replaces_or_drops_every_zero_variance_group(resample_run):
    result, _ = resample_run
    for entry in steps(result):
        assert entry["zero_variance/share"] > 0  # the even-numbered prompts guarantee some
        handled = entry["zero_variance/resampled_share"] + entry["zero_variance/dropped_share"]
        assert handled == pytest.approx(entry["zero_variance/share"])


def test_advantage_clip_bounds_every_advantage(resample_run):
    result, out = resample_run
    assert all(-0.5 <= e["advantages/min"] and e["advantages/max"] <= 0.5 for e in steps(result))
    samples = [json.loads(line) for line in (out / "run" / "samples.jsonl").read_text().splitlines()]
    assert all(abs(s["advantage"]) <= 0.5 for s in samples)


def test_samples_hold_prompt_completion_answer_rewards_and_advantage(resample_run):
    _, out = resample_run
    sample = json.loads((out / "run" / "samples.jsonl").read_text().splitlines()[0])
    assert {"step", "prompt", "completion", "extracted_answer", "rewards", "reward", "advantage"} <= set(sample)
    assert set(sample["rewards"]) == {"format", "correctness", "steady"}


def test_advantage_histograms_are_written_every_n_steps(resample_run):
    _, out = resample_run
    lines = (out / "run" / "health" / "advantages.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [1, 2]


def test_report_renders_for_a_real_run(resample_run):
    _, out = resample_run
    page = write_report(out / "run").read_text()
    assert "rewards.png" in page and "advantage_histograms.png" in page and "step_time.png" in page
    assert (out / "run" / "report" / "zero_variance.png").is_file()


def test_drop_masks_every_zero_variance_group_out_of_the_update(tiny_model, tmp_path):
    result = train(recipe(tiny_model, tmp_path, zero_variance_groups="drop"), quiet=True)
    for entry in steps(result):
        assert entry["zero_variance/dropped_share"] == entry["zero_variance/share"] > 0
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert any(s["dropped"] for s in samples)
    assert all(s["advantage"] == 0 for s in samples if s["dropped"])


def test_grpo_settings_pass_through_to_the_trainer(tiny_model, tmp_path):
    grpo = {"num_generations": 2, "beta": 0.05, "temperature": 0.7, "loss_type": "grpo", "scale_rewards": "batch"}
    trainer = build_trainer(recipe(tiny_model, tmp_path, grpo), quiet=True)
    assert (trainer.num_generations, trainer.beta, trainer.temperature) == (2, 0.05, 0.7)
    assert (trainer.loss_type, trainer.scale_rewards) == ("grpo", "batch")
    assert trainer.controls.zero_variance_groups == "keep" and trainer.controls.advantage_clip is None
