"""The experiment report's figures, drawn as PNGs for :mod:`rlvr.experiment.report` to embed: the shot sweep
(base vs trained, strict and published scoring) and the training run's curves (``rlvr report``'s own).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_sweep_figure(summary: dict[str, Any], path: Path) -> Path:
    """Two panels, strict and published: accuracy vs shots for base (dashed) and trained, 95% Wilson whiskers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary["sweep"]
    panels = [("accuracy", "ci95", "Strict (rlvr verdict, the training reward)")]
    if any("published_accuracy" in row.get("base", {}) for row in rows):
        panels.append(("published_accuracy", "published_ci95", "Published scoring (last integer, as a string)"))
    figure, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.2), squeeze=False)
    for axis, (value, interval, title) in zip(axes[0], panels, strict=True):
        for label, style, colour, nudge in (("base", "--", "C0", -0.06), ("trained", "-", "C1", 0.06)):
            points = [(row["shots"], row[label]) for row in rows if label in row and value in row[label]]
            if not points:
                continue
            shots = [s + nudge for s, _ in points]  # side by side, so the whiskers do not hide each other
            accuracy = [r[value] for _, r in points]
            errors = [[max(0.0, r[value] - r[interval][0]) for _, r in points],
                      [max(0.0, r[interval][1] - r[value]) for _, r in points]]
            axis.errorbar(shots, accuracy, yerr=errors, linestyle=style, marker="o", capsize=4, color=colour, label=label)
            for x, y in zip(shots, accuracy, strict=True):
                axis.annotate(f"{y:.0%}", (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8, color=colour)
        all_shots = sorted({row["shots"] for row in rows})
        axis.set_xticks(all_shots)
        axis.set_xlim(min(all_shots) - 0.5, max(all_shots) + 0.5)
        axis.set_ylim(0, 1.02)
        axis.set(xlabel="number of shots", ylabel="accuracy (greedy)", title=title)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    n = rows[0].get("base", {}).get("n") if rows else None
    figure.suptitle(f"{summary['recipe']}: first {n} test items, 95% Wilson intervals")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def training_figures(run_dir: Path, out: Path) -> list[Path]:
    """The training run's curves, drawn by ``rlvr report``'s code into ``out``."""
    from rlvr.errors import RlvrError
    from rlvr.training.report import CURVES
    from rlvr.training.report import write_report as write_run_report

    try:
        write_run_report(run_dir, out)
    except RlvrError:
        return []
    order = [stem for stem, *_ in CURVES] + ["step_time", "advantage_histograms"]
    return sorted(out.glob("*.png"), key=lambda p: (order.index(p.stem) if p.stem in order else len(order), p.stem))
