"""The held-out evaluations a training run already made, as `rlvr report` shows them.

``rlvr train`` writes them itself, so the report reads files and recomputes nothing it need not:

* ``summary.json`` ``test``: the verdict on held-out test items before and after training
  (``run.test_items``; see :mod:`rlvr.training.verdict`), with ``test_samples.jsonl`` per item;
* ``summary.json`` ``evaluations``: the validation evaluations during training (``run.eval_items``),
  with ``eval_samples.jsonl`` per item.

For each, a before/after table, and the items whose verdict changed between the first and the last
evaluation, with the question, the extracted answers and the gold.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlvr.evaluation.baselines import FIXED_COMPLETION, constant_line
from rlvr.evaluation.html_blocks import escape
from rlvr.evaluation.stats import mcnemar_exact, paired_counts
from rlvr.verifiers.keywords import WRITING_INDICATORS

CHANGED_SHOWN = 3


def evaluation_sections(run_dir: Path, summary: dict[str, Any], read_records: Any) -> str:
    """HTML for the test verdict and the validation evaluations; a sentence when the run made neither."""
    parts = []
    test = summary.get("test")
    if isinstance(test, dict) and test.get("before") and test.get("after"):
        parts.append("<h3>Held-out test items, before and after training</h3>")
        parts.append(_verdict_table(test))
        parts.append(_changed_items(read_records(run_dir / "test_samples.jsonl")))
    samples = read_records(run_dir / "eval_samples.jsonl")
    evaluations = [e for e in summary.get("evaluations") or [] if isinstance(e, dict) and "accuracy" in e]
    evaluations = evaluations or from_samples(samples)  # a run stopped before its summary: recount the samples
    if evaluations:
        split = evaluations[0].get("split", "validation")
        parts.append(f"<h3>Held-out {escape(split)} items during training</h3>")
        parts.append(_evaluations_table(evaluations, samples))
        parts.append(_changed_items(samples))
    if not parts:
        return ("<p>This run evaluated no held-out items (<code>run.test_items</code> and <code>run.eval_items</code> "
                "were 0); <code>rlvr eval --adapter RUN_DIR/adapter</code> evaluates the result.</p>")
    return "".join(parts)


def from_samples(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-step accuracy (with its Wilson interval) recounted from a run's eval samples file."""
    from rlvr.evaluation.stats import wilson_interval

    steps: dict[Any, list[bool]] = {}
    for record in samples:
        if record.get("sample") is None and "correct" in record:
            steps.setdefault(record.get("step"), []).append(bool(record["correct"]))
    return [{"step": step, "n": len(v), "correct": sum(v), "accuracy": sum(v) / len(v),
             "ci95": list(wilson_interval(sum(v), len(v)))} for step, v in steps.items()]


def _verdict_table(test: dict[str, Any]) -> str:
    before, after = test["before"], test["after"]
    rows = [
        ("", f"before (step {before.get('step', 0)})", f"after (step {after.get('step', '?')})"),
        ("accuracy [95% CI]", _accuracy(before), _accuracy(after)),
        ("format rate", _share(before.get("format_rate")), _share(after.get("format_rate"))),
        ("mean completion tokens", _number(before.get("mean_completion_tokens")), _number(after.get("mean_completion_tokens"))),
    ]
    if "score_gain" in test:
        rows.append(("mean score", _number(before.get("mean_score"), 3), _number(after.get("mean_score"), 3)))
    rows += [(name, _share(flag.get("before"), 1), _share(flag.get("after"), 1)) for name, flag in (test.get("flags") or {}).items()]
    rows += _indicator_rows(before.get("breakdown") or {}, after.get("breakdown") or {})
    lines = [_row(cells, header=index == 0) for index, cells in enumerate(rows)]
    gain, interval = test.get("gain"), test.get("gain_ci95")
    shots = "the training prompt" if test.get("shots") is None else f"{escape(test['shots'])}-shot"
    if test.get("training_exemplar_counts"):
        shots += f" (training mixed {escape('/'.join(map(str, test['training_exemplar_counts'])))} exemplars)"
    facts = [f"{test.get('items', before.get('n', '?'))} test items, {escape(test.get('decoding', 'greedy'))}, {shots}"]
    if isinstance(gain, (int, float)):
        span = f" [95% CI {interval[0]:+.1%}, {interval[1]:+.1%}]" if interval else ""
        facts.append(f"gain {gain:+.1%}{span}")
    if "now_right" in test:
        facts.append(f"{test['now_right']} now right, {test['now_wrong']} now wrong; McNemar exact p = {test.get('mcnemar_p', 1.0):.3g}")
    for name, flag in (test.get("flags") or {}).items():
        facts.append(f"{escape(name)}: {flag['now_yes']} now yes, {flag['now_no']} now no; McNemar exact p = {flag['mcnemar_p']:.3g}")
    if "score_gain" in test:
        facts.append(f"mean score {test['score_gain']:+.3f}, paired Wilcoxon p = {test['score_wilcoxon_p']:.3g}")
    other = test.get("without_tool")
    if other:  # task.tools: the base model without its tool, on the same items
        facts.append(f"without the tool the base model scored {other['base']['accuracy']:.1%}; trained with the tool "
                     f"against it {other['gain']:+.1%} ({other['now_right']} now right, {other['now_wrong']} now wrong; "
                     f"McNemar exact p = {other['mcnemar_p']:.3g})")
    constant = test.get("constant_answer") or {}
    if constant.get("kind") == FIXED_COMPLETION:  # one fixed completion judged on every item (no single gold answer)
        facts.append(escape(constant_line(constant)))
    elif isinstance(constant.get("accuracy"), (int, float)):
        facts.append(f"always answering {escape(repr(constant.get('answer')))}: {constant['accuracy']:.1%}")
    return f"<table>{''.join(lines)}</table><p>{'; '.join(facts)}.</p>"


def _indicator_rows(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The task's writing indicators (keyword tasks: density, negation, repetition) before and after."""
    return [(name.replace("_", " "), _share(value, 1), _share((after.get(WRITING_INDICATORS) or {}).get(name), 1))
            for name, value in (before.get(WRITING_INDICATORS) or {}).items()]


def _evaluations_table(evaluations: list[dict[str, Any]], samples: list[dict[str, Any]]) -> str:
    head = _row(["step", "items", "accuracy [95% CI]", "format rate", "mean tokens", "seconds"], header=True)
    rows = [
        _row([e.get("step", "?"), e.get("n", "?"), _accuracy(e), _share(e.get("format_rate")),
              _number(e.get("mean_completion_tokens")), e.get("seconds", "")])
        for e in evaluations
    ]
    paired = _paired(samples)
    note = ""
    if paired:
        first, last, (_, now_wrong, now_right, _) = paired
        note = (f"<p>Step {first} → step {last}, same items: {now_right} now right, {now_wrong} now wrong; "
                f"McNemar exact p = {mcnemar_exact(now_wrong, now_right):.3g}.</p>")
    return f"<table>{head}{''.join(rows)}</table>{note}"


def _paired(samples: list[dict[str, Any]]) -> tuple[Any, Any, tuple[int, int, int, int]] | None:
    """(first step, last step, paired counts) of the greedy verdicts in a run's eval samples file."""
    by_step: dict[Any, dict[str, bool]] = {}
    for record in samples:
        if record.get("sample") is None and "id" in record:
            by_step.setdefault(record.get("step"), {})[str(record["id"])] = bool(record.get("correct"))
    if len(by_step) < 2:
        return None
    steps = list(by_step)
    first, last = by_step[steps[0]], by_step[steps[-1]]
    ids = [i for i in first if i in last]
    return steps[0], steps[-1], paired_counts([first[i] for i in ids], [last[i] for i in ids])


def _changed_items(samples: list[dict[str, Any]]) -> str:
    """Up to three items now right and three now wrong, first against last evaluation."""
    steps = list(dict.fromkeys(r.get("step") for r in samples if r.get("sample") is None))
    if len(steps) < 2:
        return ""
    first = {str(r["id"]): r for r in samples if r.get("step") == steps[0] and r.get("sample") is None and "id" in r}
    last = {str(r["id"]): r for r in samples if r.get("step") == steps[-1] and r.get("sample") is None and "id" in r}
    shared = [i for i in first if i in last]
    parts = []
    for title, before, after in (("now right", False, True), ("now wrong", True, False)):
        chosen = [i for i in shared if bool(first[i].get("correct")) is before and bool(last[i].get("correct")) is after]
        if not chosen:
            continue
        questions = any(first[i].get("question") for i in chosen)  # runs before records kept questions: none
        parts.append(f"<h4>{len(chosen)} {title} (step {escape(steps[0])} → {escape(steps[-1])})</h4><table>")
        parts.append(_row(["item"] + (["question"] if questions else [])
                          + [f"answer at step {steps[0]}", f"answer at step {steps[-1]}", "gold"], header=True))
        for item in chosen[:CHANGED_SHOWN]:
            old, new = first[item], last[item]
            cells = [escape(item)] + ([f"<pre>{escape(_clip(old.get('question', '')))}</pre>"] if questions else [])
            cells += [f"<pre>{escape(_clip(old.get('extracted_answer')))}</pre>", f"<pre>{escape(_clip(new.get('extracted_answer')))}</pre>",
                      f"<pre>{escape(_clip(new.get('ground_truth')))}</pre>"]
            parts.append(_row(cells, html=True))
        parts.append("</table>")
    return "".join(parts)


def _accuracy(evaluation: dict[str, Any]) -> str:
    accuracy, interval = evaluation.get("accuracy"), evaluation.get("ci95")
    if not isinstance(accuracy, (int, float)):
        return "n/a"
    span = f" [{interval[0]:.0%}–{interval[1]:.0%}]" if interval else ""
    counted = f" ({evaluation['correct']}/{evaluation['n']})" if "correct" in evaluation and "n" in evaluation else ""
    return f"{accuracy:.1%}{span}{counted}"


def _share(value: Any, digits: int = 0) -> str:
    return f"{value:.{digits}%}" if isinstance(value, (int, float)) else "n/a"


def _number(value: Any, digits: int = 0) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "n/a"


def _clip(value: Any, limit: int = 400) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= limit else text[:limit] + " …"


def _row(cells: list[Any], header: bool = False, html: bool = False) -> str:
    """A table row of text cells, escaped here; with ``html`` the cells are HTML as given."""
    tag = "th" if header else "td"
    return "<tr>" + "".join(f"<{tag}>{c if html else escape(c)}</{tag}>" for c in cells) + "</tr>"
