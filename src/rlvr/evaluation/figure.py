"""The evaluation figure (PNG): the task's accuracy per configuration, and how it varies.

Left: the accuracy (as the task names it: accuracy, pass@1, full credit) per configuration with 95%
Wilson whiskers, and the mean task score (rubric score, share of tests passed) beside it where it
says more than the verdict. Right, the first that applies: accuracy against the number of shots per
model with the base model (the first configuration) dashed; pass@k against k; the task's first
breakdown (e.g. rubric group coverage) per configuration. Whiskers are clamped at zero length, so
0% and 100% results draw at any n.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_figure(summary: dict[str, Any], path: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = summary["results"]
    labels = list(dict.fromkeys(r["model"] for r in results))
    right = _right_panel(results)
    fig, axes = plt.subplots(1, 2 if right else 1, figsize=(12 if right else 7, 4.5), squeeze=False)
    name = f"{summary.get('accuracy_name') or 'accuracy'} ({'as given' if summary.get('score_only') else 'greedy'})"
    _bar_panel(axes[0][0], results, name, summary.get("takes_shots", True))
    if right:
        right(axes[0][1], results, labels, name)
    title = f"{summary.get('task', '')} · {summary.get('split', '')} split · n={results[0]['n'] if results else 0}"
    if summary.get("train_split"):
        title += "  (TRAIN SPLIT: not a held-out score)"
    fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def error_bars(results: list[dict[str, Any]], value: str = "accuracy", interval: str = "ci95") -> list[list[float]]:
    """[below, above] whisker lengths; never negative (matplotlib refuses those), whatever the rounding."""
    below = [max(0.0, r[value] - r[interval][0]) for r in results]
    above = [max(0.0, r[interval][1] - r[value]) for r in results]
    return [below, above]


def config_name(result: dict[str, Any], shots: bool = True) -> str:
    """"model\nk-shot", or the model alone for tasks without exemplars (``shots`` False)."""
    return f"{result['model']}\n{result.get('shots')}-shot" if shots else str(result["model"])


def graded(results: list[dict[str, Any]]) -> bool:
    """Whether the mean task score says something the verdict does not (it differs from the accuracy)."""
    return any(abs(r.get("mean_score", r["accuracy"]) - r["accuracy"]) > 1e-9 for r in results)


def _bar_panel(axis: Any, results: list[dict[str, Any]], name: str, shots: bool) -> None:
    positions = list(range(len(results)))
    models = list(dict.fromkeys(r["model"] for r in results))
    colours = [f"C{models.index(r['model']) % 10}" for r in results]
    scores = graded(results)
    width = 0.4 if scores else 0.8
    offset = width / 2 if scores else 0.0
    bars = [x - offset for x in positions]
    axis.bar(bars, [r["accuracy"] for r in results], width, yerr=error_bars(results), capsize=4, color=colours,
             label=name if scores else None)
    for x, r in zip(bars, results, strict=True):
        axis.text(x, r["ci95"][1] + 0.01, f"{r['accuracy']:.0%}", ha="center", va="bottom", fontsize=8)
    if scores:
        marks = [x + offset for x in positions]
        axis.bar(marks, [r["mean_score"] for r in results], width, yerr=error_bars(results, "mean_score", "mean_score_ci95"),
                 capsize=4, color=colours, alpha=0.45, hatch="//", label="mean score")
        for x, r in zip(marks, results, strict=True):
            axis.text(x, r["mean_score_ci95"][1] + 0.01, f"{r['mean_score']:.2f}", ha="center", va="bottom", fontsize=8)
        axis.legend(fontsize=8, loc="upper right")
    rotate = len(results) > 4
    axis.set_xticks(positions)
    axis.set_xticklabels([config_name(r, shots) for r in results], fontsize=7, rotation=30 if rotate else 0,
                         ha="right" if rotate else "center")
    axis.set_xlim(-0.75, len(results) - 0.25)
    axis.set_ylim(0, 1.1)
    axis.set_ylabel(name)
    axis.set_title(f"{name} per configuration (95% interval)")


def _right_panel(results: list[dict[str, Any]]) -> Any:
    if len({r.get("shots") for r in results}) > 1:
        return _shots_panel
    if any(r.get("pass_at_k") for r in results):
        return _pass_at_k_panel
    if any(r.get("breakdown") for r in results):
        return _breakdown_panel
    return None


def _shots_panel(axis: Any, results: list[dict[str, Any]], labels: list[str], name: str) -> None:
    base = labels[0] if labels else None
    for label in labels:
        rows = sorted((r for r in results if r["model"] == label), key=lambda r: r["shots"])
        shots = [r["shots"] for r in rows]
        accuracy = [r["accuracy"] for r in rows]
        colour = f"C{labels.index(label) % 10}"
        if label == base:
            if len(rows) == 1:  # one shot count: a horizontal reference across the panel
                axis.axhline(accuracy[0], color=colour, linestyle="--", label=f"{label} (base, {shots[0]}-shot)")
                continue
            axis.plot(shots, accuracy, label=f"{label} (base)", color=colour, linestyle="--", marker="s")
        else:
            axis.plot(shots, accuracy, marker="o", label=label, color=colour)
        axis.fill_between(shots, [r["ci95"][0] for r in rows], [r["ci95"][1] for r in rows], alpha=0.12, color=colour)
    all_shots = sorted({r["shots"] for r in results})
    axis.set_xticks(all_shots)
    axis.set_xlim(min(all_shots) - 0.5, max(all_shots) + 0.5)
    axis.set_ylim(0, 1.05)
    axis.set_xlabel("number of shots")
    axis.set_ylabel(name)
    axis.set_title(f"{name} vs shots (base model dashed)")
    _legend(axis, labels)


def _pass_at_k_panel(axis: Any, results: list[dict[str, Any]], labels: list[str], name: str) -> None:
    for r in results:
        if not r.get("pass_at_k"):
            continue
        ks = sorted(r["pass_at_k"], key=int)
        axis.plot([int(k) for k in ks], [r["pass_at_k"][k] for k in ks], marker="o", label=_series_name(r, results),
                  color=f"C{labels.index(r['model']) % 10}")
    axis.set_xscale("log", base=2)
    axis.set_ylim(0, 1.05)
    axis.set_xlabel("k (samples drawn)")
    axis.set_ylabel("pass@k (unbiased)")
    axis.set_title("pass@k from the sampled completions")
    _legend(axis, labels)


def _breakdown_panel(axis: Any, results: list[dict[str, Any]], labels: list[str], name: str) -> None:
    title = next(iter(next(r for r in results if r.get("breakdown"))["breakdown"]))
    rows = list(dict.fromkeys(key for r in results for key in (r.get("breakdown") or {}).get(title, {})))
    height = 0.8 / max(1, len(results))
    for index, r in enumerate(results):
        shares = (r.get("breakdown") or {}).get(title, {})
        axis.barh([y + index * height for y in range(len(rows))], [shares.get(key, 0.0) for key in rows], height,
                  label=_series_name(r, results), color=f"C{labels.index(r['model']) % 10}")
    axis.set_yticks([y + height * (len(results) - 1) / 2 for y in range(len(rows))])
    axis.set_yticklabels(rows, fontsize=8)
    axis.invert_yaxis()
    axis.set_xlim(0, 1)
    axis.set_xlabel("share of completions")
    axis.set_title(title)
    _legend(axis, labels, below=True)  # bars reach across the panel: a legend inside would hide them


def _series_name(result: dict[str, Any], results: list[dict[str, Any]]) -> str:
    return config_name(result, len({r.get("shots") for r in results}) > 1).replace("\n", " ")


def _legend(axis: Any, labels: list[str], below: bool = False) -> None:
    if len(labels) > 12:  # beyond that a legend hides the panel
        return
    if below:
        axis.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=min(len(labels), 4), frameon=False)
    else:
        axis.legend(fontsize=8)
