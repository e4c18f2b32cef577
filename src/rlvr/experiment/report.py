"""One self-contained HTML page for an experiment: training curves, the shot sweep base vs trained with
intervals and paired tests, held-out variants base vs trained, strict vs published scoring side by side,
baselines and samples.

Figures (:mod:`rlvr.experiment.figures`) are written as PNGs under ``DIR/figures/`` and embedded in ``report.html`` as base64, so the
page is one file to share.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlvr.config import Recipe
from rlvr.evaluation.html_blocks import embedded_png, escape, key_value_table, page, table
from rlvr.experiment.figures import training_figures, write_sweep_figure

SAMPLES_PER_KIND = 3


def write_report(out: Path, recipe: Recipe, summary: dict[str, Any], records: list[dict[str, Any]]) -> Path:
    figures = out / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    sweep_png = write_sweep_figure(summary, figures / "shot_sweep.png")
    training_pngs = training_figures(recipe.output_dir, figures / "training")
    sections = [
        f"<h1>rlvr experiment: {escape(summary['recipe'])}</h1>",
        f"<p>{escape(summary.get('description', ''))}</p>",
        _warnings(summary),
        _headline(summary),
        "<h2>Shot sweep: base vs trained</h2>",
        embedded_png(sweep_png, "accuracy against the number of shots, base and trained, strict and published scoring"),
        _sweep_table(summary),
        _variants_section(summary),
        "<h2>Strict vs published scoring</h2>",
        _scoring_section(summary, records),
        "<h2>Baselines and checks</h2>",
        _baselines(summary),
        "<h2>Training</h2>",
        _training_table(summary),
        "<div class='grid'>" + "".join(embedded_png(path, path.stem.replace("_", " ")) for path in training_pngs) + "</div>"
        if training_pngs else "<p>No training curves (the run logged no health metrics).</p>",
        "<h2>Samples: items where base and trained disagree</h2>",
        _samples(records),
        "<h2>Setup</h2>",
        _setup(summary, recipe),
    ]
    path = out / "report.html"
    path.write_text(page(f"rlvr experiment: {summary['recipe']}", CSS, sections), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- sections


def _warnings(summary: dict[str, Any]) -> str:
    notes = list(summary.get("evaluation", {}).get("warnings", []))
    overlap = summary.get("train_overlap", {})
    if overlap.get("in_training_split"):
        notes.append(f"{overlap['in_training_split']} of {overlap['items']} evaluated test items ask a question that also "
                     "occurs in the training split: those items measure memorisation as much as skill.")
    return "".join(f"<div class='warning'>{escape(n)}</div>" for n in notes)


def _headline(summary: dict[str, Any]) -> str:
    seconds = {name: s for name, s in summary.get("stage_seconds", {}).items() if s is not None}
    stages = ", ".join(f"{name} {_minutes(s)}" for name, s in seconds.items())
    stages += f"; together {_minutes(sum(seconds.values()))}" if seconds else ""
    evaluation = summary["evaluation"]
    return (
        f"<p><b>Command:</b> <code>{escape(summary.get('command') or 'rlvr experiment ' + summary['recipe'])}</code><br>"
        f"<b>Wall time of this invocation:</b> {_minutes(summary['wall_seconds'])} (stages as last run: {escape(stages)})<br>"
        f"<b>Evaluation:</b> first {evaluation['items']} items of the {evaluation['split']} split, shots "
        f"{', '.join(map(str, evaluation['shots']))}, greedy, {escape(evaluation['decoding'])} decoding (up to "
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
    return table(head, rows) + (
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
            f"<div class='name'>{escape(variant['name'])}</div>", variant["shots"], base.get("n", variant["items"]), _accuracy(base), _accuracy(trained),
            _signed(paired.get("accuracy_difference")), paired.get("only_first", ""), paired.get("only_second", ""),
            _p(paired.get("p_value")), f"{_pct(base.get('format_rate'))} → {_pct(trained.get('format_rate'))}",
            _pct(common.get("accuracy"), ".1%") if common else "n/a",
        ])
    changed = "".join(f"<li><b>{escape(v['name'])}</b>: <code>{escape(json.dumps(v['task_options'], ensure_ascii=False))}</code></li>"
                      for v in variants)
    return ("<h2>Held-out variants (never trained on): base vs trained</h2>" + table(head, rows)
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
    return f"<p>{escape(explanation)}</p>" + table(head, rows) + (
        "<p class='note'>Strict is what rlvr reports and trains on. The published column reproduces how the published "
        "recipe's 41% / 11% were scored, on these items and completions; the difference between the columns is the "
        "scoring alone. The published notebook also decoded without a stop, up to 1,024 tokens "
        "(<code>--decoding published</code>), and evaluated on training items.</p>")


def _baselines(summary: dict[str, Any]) -> str:
    common = summary.get("most_common_answer", {})
    overlap = summary.get("train_overlap", {})
    lines = []
    if common:
        lines.append(f"Always answering the most common gold answer of these items (<code>{escape(common['answer'])}</code>) "
                     f"scores {_pct(common['accuracy'], '.1%')} ({common['n']} items).")
    if overlap.get("checked"):
        lines.append(f"Test items whose question also occurs in the training split: {overlap['in_training_split']} of "
                     f"{overlap['items']}.")
    elif overlap:
        lines.append(f"Overlap with the training split not checked: {escape(overlap.get('reason', ''))}.")
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
    return (f"{key_value_table(rows)}<p class='note'>The training reward going up is a diagnostic, not evidence: "
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
                f"(answer {escape(record.get('extracted_answer'))}), published {published} "
                f"(last integer {escape(record.get('published_answer'))}), {record.get('completion_tokens')} tokens</div>"
                f"<pre>{escape(record.get('completion', ''))}</pre></div>")

    question = base.get("question") or ""
    return (f"<details><summary>{escape(title)}: {escape(base['id'])} · gold {escape(base.get('ground_truth'))} · "
            f"{escape(_clip(question, 120))}</summary><p>{escape(question)}</p><div class='pair'>{cell(base)}{cell(trained)}</div>"
            "</details>")


def _setup(summary: dict[str, Any], recipe: Recipe) -> str:
    import yaml

    evaluation = summary["evaluation"]
    models = "".join(f"<li><b>{escape(m['label'])}</b>: {escape(m['model'])}"
                     f"{' + adapter ' + escape(m['adapter']) if m.get('adapter') else ''}</li>"
                     for m in evaluation.get("models", []))
    options = ", ".join(f"{k}={v}" for k, v in evaluation.get("task_options", {}).items())
    return (f"<ul>{models}</ul><p>Task {escape(evaluation['task'])} ({escape(options)}); backend {escape(evaluation.get('backend'))}; "
            f"batch size {evaluation.get('batch_size')}; recipe {escape(summary.get('recipe_source'))}.</p>"
            f"<details><summary>Recipe as trained</summary><pre>{escape(yaml.safe_dump(recipe.to_dict(), sort_keys=False))}"
            "</pre></details>")


# ----------------------------------------------------------------------------- formatting


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
