"""The self-contained HTML report of an evaluation (the figure embedded as base64: one file to share).

Setup, the results table in the task's terms (accuracy, pass@1 or full credit; mean score where it is
graded; pass@k), the task's breakdowns (rubric group coverage, sandbox status), the paired tests, and
per configuration three correct and three incorrect completions with the question, the extracted
answer (for code: the program that ran), the gold and the task's details (test outcomes, rubric).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlvr.evaluation.baselines import constant_line
from rlvr.evaluation.figure import graded
from rlvr.evaluation.html_blocks import embedded_png, escape, page, table

SAMPLES_SHOWN = 3
CLIP = 2000


def write_report(result: Any, path: str | Path, figure: str | Path | None) -> Path:
    """report.html; ``figure`` None (it could not be drawn) leaves a note where it would be."""
    summary, records = result.summary, result.records
    parts = [
        f"<h1>rlvr evaluation: {escape(summary.get('task', ''))}, {escape(summary.get('split', ''))} split</h1>",
    ]
    for note in summary.get("warnings", []):
        parts.append(f"<div class='warning'>{escape(note)}</div>")
    parts.append(_setup(summary))
    if figure is not None:
        parts.append(embedded_png(figure, "accuracy figure", title=False))
    else:
        parts.append("<p class='warning'>The figure could not be drawn; the numbers below are complete.</p>")
    parts.append(_results_table(summary))
    parts.append(_breakdowns(summary, summary.get("takes_shots", True)))
    if summary.get("comparisons"):
        parts.append(_comparisons_table(summary))
    parts.append(_samples(records, summary.get("takes_shots", True)))
    path = Path(path)
    path.write_text(page("rlvr evaluation", _CSS, parts), encoding="utf-8")
    return path


def _setup(summary: dict[str, Any]) -> str:
    decoding = summary.get("decoding", {})
    models = "".join(
        f"<li><b>{escape(m['label'])}</b>: {escape(m['model'])}{' + adapter ' + escape(m['adapter']) if m.get('adapter') else ''}</li>"
        for m in summary.get("models", [])
    )
    if summary.get("score_only"):
        how = f"completions read from {escape(summary['score_only'])} and scored here"
    else:
        how = (f"backend {escape(summary.get('backend', ''))}; greedy decoding, up to {decoding.get('max_new_tokens', '?')} new tokens"
               + (f"; {decoding['samples']} samples per item at T={decoding['temperature']}" if decoding.get("samples") else ""))
    return (f"<p>{summary.get('items', '?')} items ({escape(summary.get('item_selection', ''))}); {how}; "
            f"{summary.get('seconds', '?')} s.</p><ul>{models}</ul>")


def _results_table(summary: dict[str, Any]) -> str:
    results = summary["results"]
    name = summary.get("accuracy_name") or "accuracy"
    ks = sorted({k for r in results for k in r.get("pass_at_k", {})}, key=int)
    scores = graded(results)
    forms = any(r.get("format_rate") is not None for r in results)
    shots = summary.get("takes_shots", True)
    greedy = "greedy" if not summary.get("score_only") else "as given"
    head = ["model"] + (["shots"] if shots else []) + ["n", f"{name} ({greedy})", "95% CI"]
    head += (["mean score [95% CI]"] if scores else []) + (["well-formed"] if forms else []) + ["stopped", "mean tokens"]
    head += [f"pass@{k} (sampled)" for k in ks]
    published = any("published_accuracy" in r for r in results)
    head += ["published accuracy", "95% CI"] if published else []
    rows = []
    for r in results:
        counted = f" ({r['correct']})" if r.get("correct") is not None else " (pass@1 over samples)"
        cells = [escape(r["model"])] + ([r.get("shots")] if shots else [])
        cells += [r["n"], f"{r['accuracy']:.1%}{counted}", _span(r["ci95"])]
        if scores:
            cells.append(f"{r['mean_score']:.3f} [{r['mean_score_ci95'][0]:.3f}, {r['mean_score_ci95'][1]:.3f}]")
        if forms:
            cells.append(_share(r.get("format_rate")))
        cells += [_share(r.get("stopped_rate")), _number(r.get("mean_completion_tokens"))]
        cells += [_share(r.get("pass_at_k", {}).get(k), ".1%") for k in ks]
        if published:
            cells += ([f"{r['published_accuracy']:.1%} ({r['published_correct']})", _span(r["published_ci95"])]
                      if "published_accuracy" in r else ["", ""])
        rows.append(cells)
    note = f"<p>{escape(name)}: the share of items the task judges correct ({greedy})."
    if ks:
        note += " pass@k: unbiased estimate from the sampled completions (Chen et al. 2021)."
    if summary.get("published_scoring"):
        note += f"</p><p><b>published accuracy</b>: {escape(summary['published_scoring'])}"
    return "<h2>Results</h2>" + table(head, rows) + note + "</p>"


def _breakdowns(summary: dict[str, Any], takes_shots: bool) -> str:
    results = [r for r in summary["results"] if r.get("breakdown")]
    titles = list(dict.fromkeys(t for r in results for t in r["breakdown"]))
    parts = []
    for title in titles:
        keys = list(dict.fromkeys(k for r in results for k in r["breakdown"].get(title, {})))
        head = ["configuration"] + keys
        rows = [[escape(r["model"]) + (f", {r.get('shots')}-shot" if takes_shots else "")]
                + [_share(r["breakdown"].get(title, {}).get(k)) for k in keys] for r in results]
        parts.append(f"<h3>{escape(title)}</h3>" + table(head, rows))
    return "<h2>Breakdown</h2>" + "".join(parts) if parts else ""


def _comparisons_table(summary: dict[str, Any]) -> str:
    name = summary.get("accuracy_name") or "accuracy"
    head = ["shots", "first", "second", "items", "only first right", "only second right", f"{name} difference",
            "McNemar exact p", "score difference", "Wilcoxon p"]
    rows = []
    for c in summary["comparisons"]:
        paired = "only_first" in c
        rows.append([
            c["shots"], escape(c["first"]), escape(c["second"]), c["n"],
            c["only_first"] if paired else "–", c["only_second"] if paired else "–",
            f"{c['accuracy_difference']:+.1%}" if paired else "–", f"{c['p_value']:.3g}" if paired else "–",
            f"{c['score_difference']:+.3f}", f"{c['score_p_value']:.3g}",
        ])
    baseline = constant_line(summary.get("constant_answer") or {})
    beside = f"<p><b>Baseline beside the gain</b> (as the training verdict): {escape(baseline)}.</p>" if baseline else ""
    return ("<h2>Paired comparisons (same items)</h2>" + table(head, rows) + beside
            + "<p>McNemar: exact test on the items only one configuration got right. Wilcoxon: signed-rank test "
              "on the per-item scores (greedy score, or the pass rate over samples).</p>")


def _samples(records: list[dict[str, Any]], takes_shots: bool) -> str:
    parts = ["<h2>Samples</h2>"]
    keys = list(dict.fromkeys((r["model"], r["shots"]) for r in records))
    for model, shots in keys:
        mine = [r for r in records if r["model"] == model and r["shots"] == shots]
        rows = [r for r in mine if r["sample"] is None] or mine
        parts.append(f"<h3>{escape(model)}{f', {shots}-shot' if takes_shots else ''}</h3><div class='pair'>")
        for verdict, title in ((True, "correct"), (False, "incorrect")):
            chosen = [r for r in rows if bool(r["correct"]) is verdict][:SAMPLES_SHOWN]
            parts.append(f"<div><h4>{title} ({sum(bool(r['correct']) is verdict for r in rows)})</h4>")
            parts += [_sample(r, title) for r in chosen]
            parts.append("</div>")
        parts.append("</div>")
    return "".join(parts)


def _sample(record: dict[str, Any], title: str) -> str:
    sample = "" if record.get("sample") is None else f" · sample {record['sample']}"
    score = f" · score {record['score']:.3f}" if isinstance(record.get("score"), (int, float)) else ""
    return (
        f"<div class='sample {title}'><div class='meta'>{escape(record['id'])}{sample}{score}</div>"
        f"<details><summary>question</summary><pre>{escape(_clip(record.get('question')))}</pre></details>"
        f"<div class='meta'>completion</div><pre>{escape(_clip(record.get('completion')))}</pre>"
        f"<div class='meta'>extracted answer</div><pre>{escape(_clip(record.get('extracted_answer')))}</pre>"
        f"<div class='meta'>gold</div><pre>{escape(_clip(record.get('ground_truth')))}</pre>"
        f"{_details(record.get('details'))}</div>"
    )


def _details(details: Any) -> str:
    if not details:
        return ""
    text = json.dumps(details, ensure_ascii=False, indent=1, default=str)
    return f"<details><summary>details</summary><pre>{escape(_clip(text))}</pre></details>"


def _span(interval: list[float]) -> str:
    return f"{interval[0]:.1%} – {interval[1]:.1%}"


def _share(value: Any, spec: str = ".0%") -> str:
    return format(value, spec) if isinstance(value, (int, float)) else "–"


def _number(value: Any) -> str:
    return f"{value:.0f}" if isinstance(value, (int, float)) else "–"


def _clip(value: Any) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= CLIP else text[:CLIP] + f" … ({len(text) - CLIP} more characters)"


_CSS = """
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
img{max-width:100%}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f2f2f2}
.warning{background:#fdd;border:2px solid #c00;padding:1em;font-weight:bold;margin:1em 0}
.pair{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1em}
.sample{border-left:4px solid #ccc;margin:.5em 0;padding:.2em .6em}
.sample.correct{border-color:#2a2}
.sample.incorrect{border-color:#c33}
.meta{font-size:.85em;color:#555}
pre{white-space:pre-wrap;font-size:.85em;margin:.3em 0;max-height:24em;overflow:auto}
summary{cursor:pointer;font-size:.85em;color:#555}
"""
