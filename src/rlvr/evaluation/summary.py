"""Statistics of an evaluation, computed from its records alone: per configuration and paired between them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlvr.evaluation.specs import ModelSpec
from rlvr.evaluation.stats import mcnemar_exact, mean_pass_at_k, paired_counts, wilson_interval

FORMAT = "format"


def summarize(records: list[dict[str, Any]], specs: list[ModelSpec] | None = None, samples: int = 0) -> dict[str, Any]:
    """Per (model, shots) statistics and McNemar comparisons, computed from ``records`` alone."""
    labels = [s.label for s in specs] if specs else list(dict.fromkeys(r["model"] for r in records))
    shot_counts = sorted({r["shots"] for r in records})
    results, verdicts = [], {}
    for label in labels:
        for shots in shot_counts:
            greedy = [r for r in records if r["model"] == label and r["shots"] == shots and r["sample"] is None]
            if not greedy:
                continue
            sampled = [r for r in records if r["model"] == label and r["shots"] == shots and r["sample"] is not None]
            verdicts[label, shots] = {r["id"]: r["correct"] for r in greedy}
            results.append(config_stats(label, shots, greedy, sampled, samples))
    comparisons = []
    for shots in shot_counts:
        present = [label for label in labels if (label, shots) in verdicts]
        for a_index, first in enumerate(present):
            for second in present[a_index + 1 :]:
                comparisons.append(compare(first, second, shots, verdicts[first, shots], verdicts[second, shots]))
    summary: dict[str, Any] = {"results": results, "comparisons": comparisons}
    if specs:
        summary["models"] = [{"label": s.label, "model": s.model, "adapter": s.adapter} for s in specs]
    return summary


def config_stats(label: str, shots: int, greedy: list[dict], sampled: list[dict], samples: int) -> dict[str, Any]:
    n = len(greedy)
    correct = sum(r["correct"] for r in greedy)
    low, high = wilson_interval(correct, n)
    components = sorted({name for r in greedy for name in r["rewards"]})
    stats: dict[str, Any] = {
        "model": label,
        "shots": shots,
        "n": n,
        "correct": correct,
        "accuracy": correct / n,
        "ci95": [low, high],
        "format_rate": sum(r["rewards"].get(FORMAT, 0) > 0 for r in greedy) / n,
        "stopped_rate": sum(bool(r["stopped"]) for r in greedy) / n,
        "mean_completion_tokens": sum(r["completion_tokens"] for r in greedy) / n,
        "mean_rewards": {name: sum(r["rewards"].get(name, 0.0) for r in greedy) / n for name in components},
    }
    if sampled:
        per_item: dict[str, list[bool]] = {}
        for r in sampled:
            per_item.setdefault(r["id"], []).append(r["correct"])
        k_max = min(len(v) for v in per_item.values())
        counts = [sum(v[:k_max]) for v in per_item.values()]
        ks = sorted({k for k in (1, 2, 4, 8, 16, 32, 64, 128) if k <= k_max} | {k_max})
        stats["pass_at_k"] = {str(k): mean_pass_at_k(counts, k_max, k) for k in ks}
        stats["samples_per_item"] = k_max
    return stats


def compare(first: str, second: str, shots: int, a: dict[str, bool], b: dict[str, bool]) -> dict[str, Any]:
    ids = [i for i in a if i in b]
    both, only_first, only_second, neither = paired_counts([a[i] for i in ids], [b[i] for i in ids])
    n = max(1, len(ids))
    return {
        "shots": shots,
        "first": first,
        "second": second,
        "n": len(ids),
        "both_correct": both,
        "only_first": only_first,
        "only_second": only_second,
        "both_wrong": neither,
        "accuracy_difference": (only_second - only_first) / n,
        "p_value": mcnemar_exact(only_first, only_second),
    }


def recount(samples_path: str | Path) -> dict[str, Any]:
    """Recompute the summary statistics from a samples.jsonl file (to check a summary.json)."""
    from rlvr.jsonl import read_jsonl

    records = read_jsonl(samples_path)
    samples = max((r["sample"] + 1 for r in records if r["sample"] is not None), default=0)
    return summarize(records, samples=samples)
