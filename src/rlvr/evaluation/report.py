"""The evaluation figure (PNG) and a self-contained HTML report.

The figure has the two panels the published recipe showed: accuracy per
configuration with 95% Wilson whiskers, and accuracy against the number of
shots per model with the base model (the first configuration) as a dashed
reference. The report embeds the figure as base64, so it is one file to share.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

SAMPLES_SHOWN = 3


def write_figure(summary: dict[str, Any], path: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = summary["results"]
    labels = list(dict.fromkeys(r["model"] for r in results))
    fig, (bars, curve) = plt.subplots(1, 2, figsize=(12, 4.5))
    _bar_panel(bars, results)
    _shots_panel(curve, results, labels)
    title = f"{summary.get('task', '')} · {summary.get('split', '')} split · n={results[0]['n'] if results else 0}"
    if summary.get("train_split"):
        title += "  (TRAIN SPLIT: not a held-out score)"
    fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _bar_panel(axis: Any, results: list[dict[str, Any]]) -> None:
    names = [f"{r['model']}\n{r['shots']}-shot" for r in results]
    heights = [r["accuracy"] for r in results]
    lower, upper = error_bars(results)
    positions = range(len(results))
    models = list(dict.fromkeys(r["model"] for r in results))
    colours = [f"C{models.index(r['model']) % 10}" for r in results]
    axis.bar(positions, heights, yerr=[lower, upper], capsize=4, color=colours)
    for x, r in zip(positions, results, strict=True):
        axis.text(x, r["ci95"][1] + 0.01, f"{r['accuracy']:.0%}", ha="center", va="bottom", fontsize=8)
    axis.set_xticks(list(positions))
    axis.set_xticklabels(names, fontsize=7, rotation=30 if len(results) > 4 else 0, ha="right" if len(results) > 4 else "center")
    axis.set_ylim(0, 1.05)
    axis.set_ylabel("accuracy (greedy)")
    axis.set_title("Accuracy per configuration (95% Wilson interval)")


def error_bars(results: list[dict[str, Any]], value: str = "accuracy", interval: str = "ci95") -> list[list[float]]:
    """[below, above] whisker lengths; never negative (matplotlib refuses those), whatever the rounding."""
    below = [max(0.0, r[value] - r[interval][0]) for r in results]
    above = [max(0.0, r[interval][1] - r[value]) for r in results]
    return [below, above]


def _shots_panel(axis: Any, results: list[dict[str, Any]], labels: list[str]) -> None:
    base = labels[0] if labels else None
    for label in labels:
        rows = sorted((r for r in results if r["model"] == label), key=lambda r: r["shots"])
        shots = [r["shots"] for r in rows]
        accuracy = [r["accuracy"] for r in rows]
        if label == base:
            style = {"color": "C0", "linestyle": "--", "marker": "s"}
            if len(rows) == 1:  # one shot count: a horizontal reference across the panel
                axis.axhline(accuracy[0], color="C0", linestyle="--", label=f"{label} (base, {shots[0]}-shot)")
                continue
            axis.plot(shots, accuracy, label=f"{label} (base)", **style)
        else:
            axis.plot(shots, accuracy, marker="o", label=label, color=f"C{labels.index(label) % 10}")
        axis.fill_between(shots, [r["ci95"][0] for r in rows], [r["ci95"][1] for r in rows], alpha=0.12,
                          color=f"C{labels.index(label) % 10}")
    all_shots = sorted({r["shots"] for r in results})
    axis.set_xticks(all_shots)
    axis.set_xlim(min(all_shots, default=0) - 0.5, max(all_shots, default=8) + 0.5)
    axis.set_ylim(0, 1.05)
    axis.set_xlabel("number of shots")
    axis.set_ylabel("accuracy (greedy)")
    axis.set_title("Accuracy vs shots (base model dashed)")
    axis.legend(fontsize=8)


def write_report(result: Any, path: str | Path, figure: str | Path) -> Path:
    summary, records = result.summary, result.records
    image = base64.b64encode(Path(figure).read_bytes()).decode("ascii")
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>rlvr evaluation</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>rlvr evaluation: {_e(summary.get('task', ''))}, {_e(summary.get('split', ''))} split</h1>",
    ]
    for note in summary.get("warnings", []):
        parts.append(f"<div class='warning'>{_e(note)}</div>")
    parts.append(_setup(summary))
    parts.append(f"<img alt='accuracy figure' src='data:image/png;base64,{image}'>")
    parts.append(_results_table(summary))
    if summary.get("comparisons"):
        parts.append(_comparisons_table(summary))
    parts.append(_samples(records))
    parts.append("</body></html>")
    path = Path(path)
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _setup(summary: dict[str, Any]) -> str:
    decoding = summary.get("decoding", {})
    models = "".join(
        f"<li><b>{_e(m['label'])}</b>: {_e(m['model'])}{' + adapter ' + _e(m['adapter']) if m.get('adapter') else ''}</li>"
        for m in summary.get("models", [])
    )
    return (
        f"<p>{summary.get('items', '?')} items ({_e(summary.get('item_selection', ''))}); backend "
        f"{_e(summary.get('backend', ''))}; greedy decoding, up to {decoding.get('max_new_tokens', '?')} new tokens"
        + (f"; {decoding['samples']} samples per item at T={decoding['temperature']}" if decoding.get("samples") else "")
        + f"; {summary.get('seconds', '?')} s.</p><ul>{models}</ul>"
    )


def _results_table(summary: dict[str, Any]) -> str:
    ks = sorted({k for r in summary["results"] for k in r.get("pass_at_k", {})}, key=int)
    head = ["model", "shots", "n", "accuracy", "95% CI", "format rate", "stopped", "mean tokens"] + [f"pass@{k}" for k in ks]
    rows = []
    for r in summary["results"]:
        cells = [
            _e(r["model"]), r["shots"], r["n"], f"{r['accuracy']:.1%} ({r['correct']})",
            f"{r['ci95'][0]:.1%} – {r['ci95'][1]:.1%}", f"{r['format_rate']:.0%}", f"{r['stopped_rate']:.0%}",
            f"{r['mean_completion_tokens']:.0f}",
        ] + [f"{r.get('pass_at_k', {}).get(k, float('nan')):.1%}" for k in ks]
        rows.append(cells)
    return "<h2>Results</h2>" + _table(head, rows)


def _comparisons_table(summary: dict[str, Any]) -> str:
    head = ["shots", "first", "second", "only first right", "only second right", "difference", "McNemar exact p"]
    rows = [
        [c["shots"], _e(c["first"]), _e(c["second"]), c["only_first"], c["only_second"],
         f"{c['accuracy_difference']:+.1%}", f"{c['p_value']:.3g}"]
        for c in summary["comparisons"]
    ]
    return "<h2>Paired comparisons (same items)</h2>" + _table(head, rows)


def _samples(records: list[dict[str, Any]]) -> str:
    parts = ["<h2>Samples</h2>"]
    keys = list(dict.fromkeys((r["model"], r["shots"]) for r in records if r["sample"] is None))
    for model, shots in keys:
        rows = [r for r in records if r["model"] == model and r["shots"] == shots and r["sample"] is None]
        parts.append(f"<h3>{_e(model)}, {shots}-shot</h3><div class='pair'>")
        for verdict, title in ((True, "correct"), (False, "incorrect")):
            chosen = [r for r in rows if r["correct"] is verdict][:SAMPLES_SHOWN]
            parts.append(f"<div><h4>{title} ({sum(r['correct'] is verdict for r in rows)})</h4>")
            for r in chosen:
                parts.append(
                    f"<div class='sample {title}'><div class='meta'>{_e(r['id'])} · answer {_e(r['extracted_answer'])}"
                    f" · truth {_e(r['ground_truth'])}</div><pre>{_e(r['completion'])}</pre></div>"
                )
            parts.append("</div>")
        parts.append("</div>")
    return "".join(parts)


def _table(head: list[str], rows: list[list[Any]]) -> str:
    header = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def _e(value: Any) -> str:
    return html.escape(str(value))


_CSS = """
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
img{max-width:100%}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f2f2f2}
.warning{background:#fdd;border:2px solid #c00;padding:1em;font-weight:bold;margin:1em 0}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:1em}
.sample{border-left:4px solid #ccc;margin:.5em 0;padding:.2em .6em}
.sample.correct{border-color:#2a2}
.sample.incorrect{border-color:#c33}
.meta{font-size:.85em;color:#555}
pre{white-space:pre-wrap;font-size:.85em;margin:.3em 0}
"""
