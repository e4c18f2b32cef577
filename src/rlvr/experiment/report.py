"""One self-contained HTML page for an experiment: training curves, the shot sweep base vs trained with
intervals and paired tests, held-out variants base vs trained, strict vs published scoring side by side,
baselines and samples.

Figures are written as PNGs under ``DIR/figures/`` and embedded in ``report.html`` as base64, so the
page is one file to share.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

from rlvr.config import Recipe

SAMPLES_PER_KIND = 3


def write_report(out: Path, recipe: Recipe, summary: dict[str, Any], records: list[dict[str, Any]]) -> Path:
    figures = out / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    sweep_png = write_sweep_figure(summary, figures / "shot_sweep.png")
    training_pngs = training_figures(recipe.output_dir, figures / "training")
    page = "\n".join([
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>rlvr experiment: {_e(summary['recipe'])}</title><style>{CSS}</style></head><body>",
        f"<h1>rlvr experiment: {_e(summary['recipe'])}</h1>",
        f"<p>{_e(summary.get('description', ''))}</p>",
        _warnings(summary),
        _headline(summary),
        "<h2>Shot sweep: base vs trained</h2>",
        _img(sweep_png, "accuracy against the number of shots, base and trained, strict and published scoring"),
        _sweep_table(summary),
        _variants_section(summary),
        "<h2>Strict vs published scoring</h2>",
        _scoring_section(summary, records),
        "<h2>Baselines and checks</h2>",
        _baselines(summary),
        "<h2>Training</h2>",
        _training_table(summary),
        "<div class='grid'>" + "".join(_img(path, path.stem.replace("_", " ")) for path in training_pngs) + "</div>"
        if training_pngs else "<p>No training curves (the run logged no health metrics).</p>",
        "<h2>Samples: items where base and trained disagree</h2>",
        _samples(records),
        "<h2>Setup</h2>",
        _setup(summary, recipe),
        "</body></html>",
    ])
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- figures


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


# ----------------------------------------------------------------------------- sections


def _warnings(summary: dict[str, Any]) -> str:
    notes = list(summary.get("evaluation", {}).get("warnings", []))
    overlap = summary.get("train_overlap", {})
    if overlap.get("in_training_split"):
        notes.append(f"{overlap['in_training_split']} of {overlap['items']} evaluated test items ask a question that also "
                     "occurs in the training split: those items measure memorisation as much as skill.")
    return "".join(f"<div class='warning'>{_e(n)}</div>" for n in notes)


def _headline(summary: dict[str, Any]) -> str:
    seconds = {name: s for name, s in summary.get("stage_seconds", {}).items() if s is not None}
    stages = ", ".join(f"{name} {_minutes(s)}" for name, s in seconds.items())
    stages += f"; together {_minutes(sum(seconds.values()))}" if seconds else ""
    evaluation = summary["evaluation"]
    return (
        f"<p><b>Command:</b> <code>{_e(summary.get('command') or 'rlvr experiment ' + summary['recipe'])}</code><br>"
        f"<b>Wall time of this invocation:</b> {_minutes(summary['wall_seconds'])} (stages as last run: {_e(stages)})<br>"
        f"<b>Evaluation:</b> first {evaluation['items']} items of the {evaluation['split']} split, shots "
        f"{', '.join(map(str, evaluation['shots']))}, greedy, {_e(evaluation['decoding'])} decoding (up to "
        f"{evaluation['max_new_tokens']} new tokens), the recipe's task and prompt options; the same items for base "
        "and trained, so every comparison is paired (McNemar exact test).</p>"
    )


def _sweep_table(summary: dict[str, Any]) -> str:
    head = ["shots", "base", "trained", "difference", "only base right", "only trained right", "McNemar p",
            "format rate base → trained"]
    rows = []
    for row in summary["sweep"]:
        base, trained, paired = row.get("base", {}), row.get("trained", {}), row.get("paired", {})
        rows.append([
            row["shots"], _accuracy(base), _accuracy(trained), _signed(paired.get("accuracy_difference")),
            paired.get("only_first", ""), paired.get("only_second", ""), _p(paired.get("p_value")),
            f"{_pct(base.get('format_rate'))} → {_pct(trained.get('format_rate'))}",
        ])
    return _table(head, rows) + (
        "<p class='note'>Accuracy is the strict verdict (the task's own judge, the one the training reward pays for), "
        "with its 95% Wilson interval and the count of correct items. A gain in format rate is not a gain in answers: "
        "both are shown.</p>")


def _variants_section(summary: dict[str, Any]) -> str:
    """Held-out variants, base vs trained (nothing when the recipe has none)."""
    variants = summary.get("variants") or []
    if not variants:
        return ""
    head = ["variant", "shots", "items", "base", "trained", "difference", "only base right", "only trained right",
            "McNemar p", "format rate base → trained", "most common answer"]
    rows = []
    for variant in variants:
        base, trained, paired = variant.get("base", {}), variant.get("trained", {}), variant.get("paired", {})
        common = variant.get("most_common_answer") or {}
        rows.append([
            f"<div class='name'>{_e(variant['name'])}</div>", variant["shots"], base.get("n", variant["items"]), _accuracy(base), _accuracy(trained),
            _signed(paired.get("accuracy_difference")), paired.get("only_first", ""), paired.get("only_second", ""),
            _p(paired.get("p_value")), f"{_pct(base.get('format_rate'))} → {_pct(trained.get('format_rate'))}",
            _pct(common.get("accuracy"), ".1%") if common else "n/a",
        ])
    changed = "".join(f"<li><b>{_e(v['name'])}</b>: <code>{_e(json.dumps(v['task_options'], ensure_ascii=False))}</code></li>"
                      for v in variants)
    return ("<h2>Held-out variants (never trained on): base vs trained</h2>" + _table(head, rows)
            + "<p class='note'>Each variant changes the recipe's task options as listed (the rest are the recipe's) and "
            "is evaluated on the first items of its test split at the recipe's shot count, greedy, with the sweep's "
            "decoding: the same items for base and trained (McNemar exact test). The model never trained on these "
            "items. The last column is the accuracy of always giving the most common gold "
            f"answer of the variant's items.</p><ul>{changed}</ul>")


def _scoring_section(summary: dict[str, Any], records: list[dict[str, Any]]) -> str:
    explanation = summary.get("evaluation", {}).get("published_scoring", "")
    head = ["model", "shots", "strict accuracy", "published accuracy", "strict only", "published only",
            "published: base vs trained p"]
    rows = []
    for row in summary["sweep"]:
        for label in ("base", "trained"):
            result = row.get(label)
            if not result:
                continue
            chosen = [r for r in records if r["model"] == label and r["shots"] == row["shots"] and r.get("sample") is None]
            strict_only = sum(bool(r["correct"]) and not r.get("published_correct") for r in chosen)
            published_only = sum(bool(r.get("published_correct")) and not r["correct"] for r in chosen)
            p = _p(row.get("paired_published", {}).get("p_value")) if label == "trained" else ""
            rows.append([label, row["shots"], _accuracy(result),
                         _accuracy(result, "published_accuracy", "published_ci95", "published_correct"),
                         strict_only, published_only, p])
    return f"<p>{_e(explanation)}</p>" + _table(head, rows) + (
        "<p class='note'>Strict is what rlvr reports and trains on. The published column reproduces how the published "
        "recipe's 41% / 11% were scored, on these items and completions; the difference between the columns is the "
        "scoring alone. The published notebook also decoded without a stop, up to 1,024 tokens "
        "(<code>--decoding published</code>), and evaluated on training items.</p>")


def _baselines(summary: dict[str, Any]) -> str:
    common = summary.get("most_common_answer", {})
    overlap = summary.get("train_overlap", {})
    lines = []
    if common:
        lines.append(f"Always answering the most common gold answer of these items (<code>{_e(common['answer'])}</code>) "
                     f"scores {_pct(common['accuracy'], '.1%')} ({common['n']} items).")
    if overlap.get("checked"):
        lines.append(f"Test items whose question also occurs in the training split: {overlap['in_training_split']} of "
                     f"{overlap['items']}.")
    elif overlap:
        lines.append(f"Overlap with the training split not checked: {_e(overlap.get('reason', ''))}.")
    return "<ul>" + "".join(f"<li>{line}</li>" for line in lines) + "</ul>"


def _training_table(summary: dict[str, Any]) -> str:
    training = summary.get("training", {})
    rows = [
        ("steps", training.get("steps")),
        ("training time", _minutes(training.get("seconds"))),
        ("mean reward, first quarter → last quarter of logged steps",
         f"{_num(training.get('reward_start'))} → {_num(training.get('reward_end'))}"),
        ("adapter", training.get("adapter_dir")),
    ]
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    return (f"<table>{body}</table><p class='note'>The training reward going up is a diagnostic, not evidence: "
            "the evidence is the paired test-split comparison above.</p>")


def _samples(records: list[dict[str, Any]]) -> str:
    greedy = [r for r in records if r.get("sample") is None]
    by_key = {(r["model"], r["shots"], str(r["id"])): r for r in greedy}
    parts = []
    for shots in sorted({r["shots"] for r in greedy}):
        ids = [str(r["id"]) for r in greedy if r["model"] == "base" and r["shots"] == shots]
        pairs = [(by_key.get(("base", shots, i)), by_key.get(("trained", shots, i))) for i in ids]
        pairs = [(b, t) for b, t in pairs if b and t]
        gained = [(b, t) for b, t in pairs if t["correct"] and not b["correct"]]
        lost = [(b, t) for b, t in pairs if b["correct"] and not t["correct"]]
        parts.append(f"<h3>{shots}-shot: {len(gained)} items only trained got right, {len(lost)} only base got right</h3>")
        for title, chosen in (("trained right, base wrong", gained), ("base right, trained wrong", lost)):
            for base, trained in chosen[:SAMPLES_PER_KIND]:
                parts.append(_sample_pair(title, base, trained))
    return "".join(parts) or "<p>No evaluation records.</p>"


def _sample_pair(title: str, base: dict[str, Any], trained: dict[str, Any]) -> str:
    def cell(record: dict[str, Any]) -> str:
        verdict = "correct" if record["correct"] else "wrong"
        published = "right" if record.get("published_correct") else "wrong"
        return (f"<div class='sample {verdict}'><div class='meta'>{record['model']}: strict {verdict} "
                f"(answer {_e(record.get('extracted_answer'))}), published {published} "
                f"(last integer {_e(record.get('published_answer'))}), {record.get('completion_tokens')} tokens</div>"
                f"<pre>{_e(record.get('completion', ''))}</pre></div>")

    question = base.get("question") or ""
    return (f"<details><summary>{_e(title)}: {_e(base['id'])} · gold {_e(base.get('ground_truth'))} · "
            f"{_e(_clip(question, 120))}</summary><p>{_e(question)}</p><div class='pair'>{cell(base)}{cell(trained)}</div>"
            "</details>")


def _setup(summary: dict[str, Any], recipe: Recipe) -> str:
    import yaml

    evaluation = summary["evaluation"]
    models = "".join(f"<li><b>{_e(m['label'])}</b>: {_e(m['model'])}"
                     f"{' + adapter ' + _e(m['adapter']) if m.get('adapter') else ''}</li>"
                     for m in evaluation.get("models", []))
    options = ", ".join(f"{k}={v}" for k, v in evaluation.get("task_options", {}).items())
    return (f"<ul>{models}</ul><p>Task {_e(evaluation['task'])} ({_e(options)}); backend {_e(evaluation.get('backend'))}; "
            f"batch size {evaluation.get('batch_size')}; recipe {_e(summary.get('recipe_source'))}.</p>"
            f"<details><summary>Recipe as trained</summary><pre>{_e(yaml.safe_dump(recipe.to_dict(), sort_keys=False))}"
            "</pre></details>")


# ----------------------------------------------------------------------------- helpers


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f"<img alt='{_e(alt)}' title='{_e(alt)}' src='data:image/png;base64,{data}'>"


def _accuracy(result: dict[str, Any], value: str = "accuracy", interval: str = "ci95", count: str = "correct") -> str:
    if value not in result:
        return ""
    low, high = result[interval]
    return f"{result[value]:.1%} [{low:.1%}, {high:.1%}] ({result[count]}/{result['n']})"


def _signed(value: Any) -> str:
    return f"{value * 100:+.1f} pts" if isinstance(value, (int, float)) else ""


def _p(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, (int, float)) else ""


def _pct(value: Any, spec: str = ".0%") -> str:
    return format(value, spec) if isinstance(value, (int, float)) else "n/a"


def _num(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) else "n/a"


def _minutes(seconds: Any) -> str:
    return f"{seconds / 60:.1f} min" if isinstance(seconds, (int, float)) else "n/a"


def _clip(text: str, size: int) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


def _table(head: list[str], rows: list[list[Any]]) -> str:
    header = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def _e(value: Any) -> str:
    return html.escape(str(value))


CSS = """
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
img{max-width:100%;margin:.3em 0}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:.5em}
table{border-collapse:collapse;margin:1em 0;font-size:14px}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right;vertical-align:top}
th{background:#f2f2f2}
.warning{background:#fdd;border:2px solid #c00;padding:.8em;font-weight:bold;margin:1em 0}
.note{color:#555;font-size:.9em}
.name{text-align:left}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:1em}
.sample{border-left:4px solid #ccc;padding:.2em .6em}
.sample.correct{border-color:#2a2}
.sample.wrong{border-color:#c33}
.meta{font-size:.85em;color:#555}
details{margin:.4em 0}
pre{white-space:pre-wrap;font-size:.85em;margin:.3em 0}
"""
