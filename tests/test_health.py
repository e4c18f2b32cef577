"""Per-batch health metrics and the warnings a run prints when it is not learning."""

import torch

from rlvr.training.health import HISTOGRAM_EDGES, HealthMonitor, batch_metrics, histogram


def row(format_reward: float, correctness: float) -> dict:
    return {"rewards": {"format": format_reward, "correctness": correctness}}


def test_accuracy_is_measured_separately_from_format():
    rows = [row(0.5, 1.0), row(0.5, 0.0), row(0.5, 0.0), row(0.0, 0.0)]
    advantages = torch.tensor([1.5, -0.5, -0.5, -0.5])
    metrics = batch_metrics(rows, ["format", "correctness"], advantages, torch.zeros(4, dtype=torch.bool))
    assert metrics["health/accuracy"] == 0.25
    assert metrics["health/format_rate"] == 0.75
    assert (metrics["advantages/min"], metrics["advantages/max"]) == (-0.5, 1.5)


def test_advantage_statistics_leave_out_dropped_rows():
    advantages = torch.tensor([1.0, -1.0, 0.0, 0.0])
    metrics = batch_metrics([], [], advantages, torch.tensor([False, False, True, True]))
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


def test_mostly_truncated_completions_warn():
    assert feed(HealthMonitor(2), [{"completions/clipped_ratio": 0.9}] * 2) == ["truncated"]


def test_exploding_kl_warns_and_a_small_kl_does_not():
    assert feed(HealthMonitor(3), [{"kl": k} for k in (0.1, 0.4, 0.9)]) == ["kl_exploding"]
    assert feed(HealthMonitor(3), [{"kl": k} for k in (0.01, 0.02, 0.03)]) == []
