"""``rlvr report RUN_DIR``: one HTML page per training run, with its curves as PNGs beside it.

It reads what a run leaves in its output directory: ``health/metrics.jsonl``
(every logged step), ``health/advantages.jsonl`` (histograms),
``health/warnings.jsonl``, ``samples.jsonl``, ``summary.json`` and, when an
evaluation was written there, ``eval*/summary.json``. The page shows rewards
by component, accuracy and format rate, the zero-variance share, advantage
spread and histograms over time, lengths and how completions ended, KL and
entropy, the step-time split, the learning rate, the held-out evaluations the
run made (before/after, :mod:`rlvr.training.report_evaluations`), and sample
completions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError
from rlvr.evaluation.html_blocks import escape, key_value_table, page
from rlvr.training.health import HEALTH_DIR
from rlvr.training.report_evaluations import evaluation_sections

# (file stem, title, [(metric key or prefix*, label)], y label)
CURVES = [
    ("rewards", "Reward by component", [("reward", "total"), ("rewards/*/mean", None)], "mean reward"),
    ("accuracy", "Accuracy and format", [("health/accuracy", "accuracy"), ("health/format_rate", "format rate")], "share of completions"),
    ("zero_variance", "Groups with zero reward variance", [
        ("zero_variance/share", "zero-variance share"), ("zero_variance/dropped_share", "dropped"),
        ("zero_variance/resampled_share", "resampled")], "share of groups"),
    ("advantages", "Advantages", [("advantages/mean", "mean"), ("advantages/std", "std"),
                                  ("advantages/min", "min"), ("advantages/max", "max")], "advantage"),
    ("lengths", "Completion length", [("completions/mean_length", "mean length"),
                                      ("completions/mean_terminated_length", "mean finished length")], "tokens"),
    ("endings", "How completions ended", [("completions/clipped_ratio", "hit the length limit"),
                                          ("completions/stopped_at_answer_ratio", "stopped at the answer")], "share"),
    ("kl", "KL to the reference and entropy", [("kl", "KL"), ("entropy", "entropy")], "nats / token"),
    ("learning_rate", "Learning rate", [("learning_rate", "learning rate")], "lr"),
    ("curriculum", "Curriculum level (task.curriculum)", [("curriculum/level", "level"), ("curriculum/top", "target")],
     "level"),
    ("curriculum_pass", "Pass rate at the current level", [("curriculum/pass_rate", "recent groups")], "pass rate"),
    ("tools", "Tool use (task.tools)", [("tools/used_share", "called a tool"), ("tools/failure_frequency", "calls failed"),
                                        ("tools/cut_by_turn_limit_share", "cut by the turn limit")], "share"),
    ("tool_calls", "Tool calls per completion", [("tools/call_frequency", "calls"),
                                                 ("tools/turns_per_completion", "tool turns")], "per completion"),
]
TIME_KEYS = [("time/generation", "generation"), ("time/rewards", "reward scoring"), ("time/update", "update")]
CSS = ("body{font-family:sans-serif;max-width:1300px;margin:auto;padding:1em}"
       "img{width:48%;min-width:420px}table{border-collapse:collapse;font-size:13px}"
       "td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}pre{white-space:pre-wrap;margin:0}"
       ".warn{background:#fff3cd;padding:.5em;margin:.3em 0}")


def read_records(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def series(metrics: list[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    steps, values = [], []
    for record in metrics:
        value = record.get(key)
        if isinstance(value, (int, float)) and value == value:
            steps.append(record["step"])
            values.append(float(value))
    return steps, values


def expand(metrics: list[dict[str, Any]], key: str, label: str | None) -> list[tuple[str, str]]:
    """(key, label) pairs; ``rewards/*/mean`` expands to each logged component."""
    if "*" not in key:
        return [(key, label or key)]
    prefix, suffix = key.split("*")
    found = sorted({k for r in metrics for k in r if k.startswith(prefix) and k.endswith(suffix)})
    return [(k, k[len(prefix) : -len(suffix)]) for k in found]


def write_report(run_dir: str | Path, output: str | Path | None = None) -> Path:
    """Render ``run_dir``'s report; returns the HTML path (PNGs are written beside it)."""
    run_dir = Path(run_dir)
    metrics = read_records(run_dir / HEALTH_DIR / "metrics.jsonl")
    if not metrics:
        raise RlvrError(f"{run_dir} has no {HEALTH_DIR}/metrics.jsonl: is it the output directory of an `rlvr train` run?")
    out = Path(output) if output else run_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    figures = _curves(metrics, out)
    figures += _time_split(metrics, out)
    figures += _histograms(read_records(run_dir / HEALTH_DIR / "advantages.jsonl"), out)
    page = _page(run_dir, metrics, figures)
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _curves(metrics: list[dict[str, Any]], out: Path) -> list[tuple[str, str]]:
    plt = _pyplot()
    figures = []
    for stem, title, keys, ylabel in CURVES:
        lines = [(label, *series(metrics, key)) for spec in keys for key, label in expand(metrics, *spec)]
        lines = [line for line in lines if line[1]]
        if not lines:
            continue
        figure, axis = plt.subplots(figsize=(6, 3.2))
        for label, steps, values in lines:
            axis.plot(steps, values, marker="o" if len(steps) < 30 else None, markersize=3, label=label)
        axis.set(title=title, xlabel="step", ylabel=ylabel)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
        figure.tight_layout()
        figure.savefig(out / f"{stem}.png", dpi=110)
        plt.close(figure)
        figures.append((f"{stem}.png", title))
    return figures


def _time_split(metrics: list[dict[str, Any]], out: Path) -> list[tuple[str, str]]:
    parts = [(label, *series(metrics, key)) for key, label in TIME_KEYS]
    if not parts[0][1]:
        return []
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(6, 3.2))
    bottom = [0.0] * len(parts[0][1])
    for label, _steps, values in parts:
        values = values[: len(bottom)] + [0.0] * (len(bottom) - len(values))
        axis.bar(parts[0][1], values, bottom=bottom, label=label)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    axis.set(title="Time per step", xlabel="step", ylabel="seconds")
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out / "step_time.png", dpi=110)
    plt.close(figure)
    return [("step_time.png", "Time per step: generation, reward scoring, update")]


def _histograms(records: list[dict[str, Any]], out: Path) -> list[tuple[str, str]]:
    if not records:
        return []
    plt = _pyplot()
    edges = records[0]["edges"]
    grid = [[c / max(1, r["count"]) for c in r["counts"]] for r in records]
    figure, axis = plt.subplots(figsize=(6, 3.2))
    image = axis.imshow(
        list(map(list, zip(*grid, strict=True))), aspect="auto", origin="lower", cmap="viridis",
        extent=(-0.5, len(records) - 0.5, edges[0], edges[-1]),
    )
    axis.set_xticks(range(len(records)), [str(r["step"]) for r in records], fontsize=7)
    axis.set(title="Advantage histograms over time", xlabel="step", ylabel="advantage")
    figure.colorbar(image, ax=axis, label="share of completions")
    figure.tight_layout()
    figure.savefig(out / "advantage_histograms.png", dpi=110)
    plt.close(figure)
    return [("advantage_histograms.png", "Advantage histograms over time")]


def _page(run_dir: Path, metrics: list[dict[str, Any]], figures: list[tuple[str, str]]) -> str:
    summary = _json(run_dir / "summary.json")
    warnings = read_records(run_dir / HEALTH_DIR / "warnings.jsonl")
    samples = read_records(run_dir / "samples.jsonl")
    sections = [
        f"<h1>Training run: {escape(summary.get('recipe', run_dir.name))}</h1>",
        _summary_table(run_dir, summary, metrics),
        "<h2>Health warnings</h2>",
        "".join(f"<div class='warn'>step {w.get('step')}: {escape(w.get('message'))}</div>" for w in warnings)
        or "<p>None: no warning condition held for several steps in a row.</p>",
        "<h2>Curves</h2>",
        "".join(f"<img src='{name}' alt='{escape(title)}' title='{escape(title)}'>" for name, title in figures),
        "<h2>Held-out evaluation</h2>",
        evaluation_sections(run_dir, summary, read_records),
        _eval_tables(run_dir),
        "<h2>Sample completions</h2>",
        _samples_table(samples),
    ]
    return page(f"rlvr run report: {run_dir.name}", CSS, sections)


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _summary_table(run_dir: Path, summary: dict[str, Any], metrics: list[dict[str, Any]]) -> str:
    last = metrics[-1]
    rows = [
        ("run directory", str(run_dir)),
        ("steps logged", str(len(metrics))),
        ("training time (s)", str(summary.get("seconds", "n/a"))),
        ("reward, first quarter -> last quarter", f"{_fmt(summary.get('reward_start'))} -> {_fmt(summary.get('reward_end'))}"),
        ("accuracy at the last step", _fmt(last.get("health/accuracy"))),
        ("zero-variance share at the last step", _fmt(last.get("zero_variance/share", last.get("frac_reward_zero_std")))),
    ]
    return key_value_table(rows)


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) else "n/a"


def _eval_tables(run_dir: Path) -> str:
    found = sorted(p for p in run_dir.glob("eval*/summary.json")) + sorted(run_dir.glob("eval*.json"))
    if not found:
        return ""
    tables = ["<h3><code>rlvr eval</code> outputs in this directory</h3>"]
    for path in found:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        tables.append(f"<h3>{escape(path.relative_to(run_dir))}</h3>{key_value_table(_flatten(data))}")
    return "".join(tables)


def _flatten(data: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(data, dict):
        return [pair for key, value in data.items() for pair in _flatten(value, f"{prefix}{key}.")]
    if isinstance(data, list) and data and all(isinstance(v, dict) for v in data):
        return [pair for i, value in enumerate(data) for pair in _flatten(value, f"{prefix}{i}.")]
    text = f"{data:.4g}" if isinstance(data, float) else json.dumps(data) if isinstance(data, list) else str(data)
    return [(prefix.rstrip("."), text)]


def _samples_table(samples: list[dict[str, Any]], limit: int = 16) -> str:
    if not samples:
        return "<p>No samples were logged (run.sample_steps=0?).</p>"
    last_step = samples[-1]["step"]
    chosen = [s for s in samples if s["step"] == last_step][:limit]
    header = "<tr><th>prompt (end)</th><th>completion</th><th>answer</th><th>rewards</th><th>advantage</th></tr>"
    rows = []
    for s in chosen:
        rewards = ", ".join(f"{k} {v:.2f}" if isinstance(v, (int, float)) else f"{k} -" for k, v in s["rewards"].items())
        flags = " (dropped)" if s.get("dropped") else " (resampled)" if s.get("resampled") else ""
        advantage = s.get("advantage")
        rows.append(
            f"<tr><td><pre>{escape(s['prompt'][-200:])}</pre></td><td><pre>{escape(s['completion'])}</pre></td>"
            f"<td>{escape(s.get('extracted_answer'))}</td><td>{escape(rewards)}</td>"
            f"<td>{_fmt(advantage)}{flags}</td></tr>"
        )
    return f"<p>Step {last_step}, {len(chosen)} completions.</p><table>{header}{''.join(rows)}</table>"
