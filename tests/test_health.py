"""Per-batch health metrics and the warnings a run prints when it is not learning."""

import torch

from rlvr.tasks import get_task
from rlvr.training.health import HISTOGRAM_EDGES, HealthMonitor, batch_metrics, histogram


def row(format_reward: float, correctness: float) -> dict:
    return {"rewards": {"format": format_reward, "correctness": correctness}}


def test_accuracy_is_measured_separately_from_format():
    rows = [row(1.0, 1.0), row(1.0, 0.0), row(1.0, 0.0), row(0.0, 0.0)]
    advantages = torch.tensor([1.5, -0.5, -0.5, -0.5])
    metrics = batch_metrics(rows, get_task("gsm8k"), advantages, torch.zeros(4, dtype=torch.bool))
    assert metrics["health/accuracy"] == 0.25
    assert metrics["health/format_rate"] == 0.75
    assert (metrics["advantages/min"], metrics["advantages/max"]) == (-0.5, 1.5)


def test_code_accuracy_counts_only_programs_passing_every_test():
    rows = [{"rewards": {"code_execution": r}} for r in (1.0, 0.25, 0.8125, 0.0)]
    metrics = batch_metrics(rows, get_task("mbpp"), torch.zeros(4), torch.zeros(4, dtype=torch.bool))
    assert metrics["health/accuracy"] == 0.25  # partial credit for a program that runs is not accuracy
    assert metrics["health/format_rate"] == 0.75


def test_keywords_accuracy_is_the_share_at_full_rubric_credit():
    rows = [{"rewards": {"keywords": r}} for r in (1.0, 0.9)]
    metrics = batch_metrics(rows, get_task("keywords"), torch.zeros(2), torch.zeros(2, dtype=torch.bool))
    assert metrics["health/accuracy"] == 0.5 and "health/format_rate" not in metrics


def test_accuracy_is_left_out_when_the_recipe_lacks_the_deciding_reward():
    rows = [{"rewards": {"format": 1.0, "intermediate_steps": 0.5}}]
    metrics = batch_metrics(rows, get_task("gsm8k"), torch.zeros(1), torch.zeros(1, dtype=torch.bool))
    assert "health/accuracy" not in metrics and metrics["health/format_rate"] == 1.0


def test_advantage_statistics_leave_out_dropped_rows():
    advantages = torch.tensor([1.0, -1.0, 0.0, 0.0])
    metrics = batch_metrics([], get_task("gsm8k"), advantages, torch.tensor([False, False, True, True]))
    assert metrics["advantages/mean"] == 0.0 and metrics["advantages/min"] == -1.0
    assert "health/accuracy" not in metrics


def test_histogram_uses_fixed_edges_and_puts_outliers_in_the_end_bins():
    counts = histogram([-9.0, 0.1, 0.1, 9.0])
    assert len(counts) == len(HISTOGRAM_EDGES) - 1
    assert counts[0] == 1 and counts[-1] == 1 and sum(counts) == 4


def feed(monitor: HealthMonitor, logs: list[dict]) -> list[str]:
    return [w.code for entry in logs for w in monitor.update(entry)]


def test_zero_variance_warning_fires_once_after_patience_steps_and_rearms():
    monitor = HealthMonitor(patience=3)
    unhealthy, healthy = {"zero_variance/share": 0.9}, {"zero_variance/share": 0.2}
    assert feed(monitor, [unhealthy, unhealthy]) == []
    assert feed(monitor, [unhealthy, unhealthy]) == ["zero_variance"]
    assert feed(monitor, [healthy, unhealthy, unhealthy, unhealthy]) == ["zero_variance"]


def test_warning_names_the_knob_that_usually_helps():
    monitor = HealthMonitor(patience=1)
    (warning,) = monitor.update({"zero_variance/share": 1.0})
    assert "num_generations" in warning.message and "resample" in warning.message


def test_format_saturated_with_flat_accuracy_warns_but_rising_accuracy_does_not():
    flat = [{"health/format_rate": 1.0, "health/accuracy": 0.30}] * 3
    rising = [{"health/format_rate": 1.0, "health/accuracy": a} for a in (0.2, 0.3, 0.4)]
    assert feed(HealthMonitor(3), flat) == ["format_only"]
    assert feed(HealthMonitor(3), rising) == []


def test_format_saturated_at_an_accuracy_well_above_the_runs_start_does_not_warn():
    """Three close batch accuracies late in a run that learnt are chance, not a plateau (seen on the CPU default)."""
    start = [{"health/format_rate": 0.97, "health/accuracy": a} for a in (0.31, 0.19, 0.72)]
    late = [{"health/format_rate": 1.0, "health/accuracy": a} for a in (0.75, 0.75, 0.72)]
    assert feed(HealthMonitor(3), start + late) == []


def test_format_saturated_and_flat_at_the_runs_starting_accuracy_warns_late_too():
    start = [{"health/format_rate": 1.0, "health/accuracy": a} for a in (0.2, 0.5, 0.3)]
    late = [{"health/format_rate": 1.0, "health/accuracy": a} for a in (0.35, 0.33, 0.36)]
    assert feed(HealthMonitor(3), start + late) == ["format_only"]


def test_mostly_truncated_completions_warn():
    assert feed(HealthMonitor(2), [{"completions/clipped_ratio": 0.9}] * 2) == ["truncated"]


def test_exploding_kl_warns_and_a_small_kl_does_not():
    assert feed(HealthMonitor(3), [{"kl": k} for k in (0.1, 0.4, 0.9)]) == ["kl_exploding"]
    assert feed(HealthMonitor(3), [{"kl": k} for k in (0.01, 0.02, 0.03)]) == []


def test_sample_rows_show_the_answer_and_verdict_as_the_task_does():
    from rlvr.training.samples import sample_records

    batch = [{"prompt": "Q", "completion": "4 + 4 = 8.\n#### The final answer is 8",
              "rewards": {"format": 1.0, "correctness": 0.0}, "reward": 0.5}]
    record = sample_records(3, batch, task=get_task("gsm8k"))[0]
    assert record["extracted_answer"] == "8" and record["correct"] is False
    code = [{"prompt": "Q", "completion": "```python\nx = 1\n```", "rewards": {"code_execution": 1.0}, "reward": 1.0}]
    record = sample_records(3, code, task=get_task("mbpp"))[0]
    assert record["extracted_answer"] == "x = 1\n" and record["correct"] is True
