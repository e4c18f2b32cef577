"""The run's verdict: did training make the model better on problems it never saw?

Built from the test-split evaluations before and after training (the same
items, the training prompt, greedy): the accuracy gain with its 95% interval
(Newcombe, paired), the exact McNemar p, the format rate before and after (a
gain in format is not a gain in answers), the accuracy of always giving the
train split's most common answer (a gain up to it needs no skill; where items
have no single gold answer, the best of a few fixed completions judged by the
task on every item: :mod:`rlvr.evaluation.baselines`), and the
train/test overlap that was checked. ``rlvr train`` prints it as its headline
and writes it to ``summary.json`` under ``test``.
"""

from __future__ import annotations

from typing import Any

from rlvr.evaluation.baselines import constant_line
from rlvr.evaluation.stats import mcnemar_exact, paired_counts, paired_difference_interval, paired_score_test
from rlvr.verifiers.keywords import WRITING_INDICATORS

_KEPT = ("step", "n", "correct", "accuracy", "ci95", "mean_score", "mean_score_ci95", "format_rate", "stopped_rate",
         "mean_completion_tokens", "seconds", "breakdown", "tools")


def verdict(before: dict[str, Any], after: dict[str, Any], baseline: dict[str, Any], overlap: dict[str, Any]) -> dict[str, Any]:
    """The summary entry comparing two evaluations of the same test items (each with per-item ``verdicts``)."""
    ids = [i for i in before["verdicts"] if i in after["verdicts"]]
    counts = paired_counts([before["verdicts"][i] for i in ids], [after["verdicts"][i] for i in ids])
    both, now_wrong, now_right, neither = counts
    n = max(1, len(ids))
    low, high = paired_difference_interval(*counts)
    return {
        "split": "test",
        "items": len(ids),
        "shots": before.get("shots"),
        "training_exemplar_counts": before.get("training_exemplar_counts"),
        "decoding": "greedy",
        "before": {k: before[k] for k in _KEPT if k in before},
        "after": {k: after[k] for k in _KEPT if k in after},
        "gain": (now_right - now_wrong) / n,
        "gain_ci95": [low, high],
        "gain_ci_method": "Newcombe hybrid score, paired",
        "now_right": now_right,
        "now_wrong": now_wrong,
        "both_right": both,
        "both_wrong": neither,
        "mcnemar_p": mcnemar_exact(now_wrong, now_right),
        "constant_answer": baseline,
        "overlap": overlap,
        **graded_gain(before, after, ids),
        **paired_flags(before, after, ids),
    }


def paired_flags(before: dict[str, Any], after: dict[str, Any], ids: list[str]) -> dict[str, Any]:
    """Each yes/no fact the task records per item (:meth:`rlvr.tasks.base.Task.item_flags`, e.g. "diagnosis named
    correctly") before and after, with its exact McNemar p on the same items: a gain in full credit can come from
    form alone, and this says whether the substance moved too."""
    first, second = before.get("flags") or {}, after.get("flags") or {}
    names = [name for name in (first.get(ids[0]) or {}) if name in (second.get(ids[0]) or {})] if ids else []
    results = {}
    for name in names:
        a = [bool((first.get(i) or {}).get(name)) for i in ids]
        b = [bool((second.get(i) or {}).get(name)) for i in ids]
        _, now_no, now_yes, _ = paired_counts(a, b)
        results[name] = {"before": sum(a) / len(ids), "after": sum(b) / len(ids), "now_yes": now_yes,
                         "now_no": now_no, "mcnemar_p": mcnemar_exact(now_no, now_yes)}
    return {"flags": results} if results else {}


def graded_gain(before: dict[str, Any], after: dict[str, Any], ids: list[str]) -> dict[str, Any]:
    """For tasks whose items earn partial credit (a rubric score, the share of tests passed): the mean score's
    paired gain and its Wilcoxon signed-rank p, since full credit alone (McNemar) ignores every partial step."""
    first, second = before.get("scores") or {}, after.get("scores") or {}
    if not ids or any(i not in first or i not in second for i in ids):
        return {}
    a, b = [first[i] for i in ids], [second[i] for i in ids]
    if all(value in (0.0, 1.0) for value in a + b):
        return {}  # pass/fail items: the score is the verdict, McNemar already says it
    return {"score_gain": (sum(b) - sum(a)) / len(ids), "score_wilcoxon_p": paired_score_test(a, b)}


def headline(v: dict[str, Any]) -> str:
    """The console lines that open a run's summary."""
    before, after, overlap = v["before"], v["after"], v["overlap"]
    shared = overlap.get("shared", {}).get("train/test")
    held = f"{shared} of {v['items']} test questions also in the train split" if shared is not None else "overlap unchecked"
    constant = v["constant_answer"]
    prompt = "the training prompt" if v["shots"] is None else f"{v['shots']}-shot (the training prompt)"
    if v["shots"] is not None and v.get("training_exemplar_counts"):
        counts = "/".join(map(str, v["training_exemplar_counts"]))
        prompt = f"{v['shots']}-shot (training mixed {counts} exemplars)"
    precision = f" in {v['precision']}" if v.get("precision") else ""  # the weights' dtype, both evaluations
    lines = [
        f"Held-out test: {v['items']} items, greedy{precision}, {prompt}; {held}.",
        f"  accuracy  {_pct(before)} -> {_pct(after)}",
        f"  gain      {v['gain'] * 100:+.1f} points [95% CI {v['gain_ci95'][0] * 100:+.1f}, {v['gain_ci95'][1] * 100:+.1f}]"
        f"  ({v['now_right']} now right, {v['now_wrong']} now wrong; McNemar exact p = {v['mcnemar_p']:.2g})",
        f"  format    {_rate(before)} -> {_rate(after)}",
    ]
    if "score_gain" in v:
        lines.append(f"  score     {before['mean_score']:.3f} -> {after['mean_score']:.3f} (mean per item, {v['score_gain']:+.3f};"
                     f" paired Wilcoxon p = {v['score_wilcoxon_p']:.2g})")
    lines += [f"  {name:<9} {f['before']:.1%} -> {f['after']:.1%}  ({f['now_yes']} now yes, {f['now_no']} now no;"
              f" McNemar exact p = {f['mcnemar_p']:.2g})" for name, f in (v.get("flags") or {}).items()]
    lines += _indicator_lines(before.get("breakdown") or {}, after.get("breakdown") or {})
    lines += _tool_lines(v)
    baseline = constant_line(constant)
    if baseline:
        lines.append(f"  {baseline}")
    return "\n".join(lines)


def with_tool_comparison(v: dict[str, Any], without_tool: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """``v`` with ``without_tool``: the base model without the run's tools against the trained one with them, on
    the same items (a tool run's before/after pair both have the tool: this says what tool and training gave)."""
    ids = [i for i in without_tool["verdicts"] if i in after["verdicts"]]
    both, now_wrong, now_right, neither = paired_counts([without_tool["verdicts"][i] for i in ids],
                                                        [after["verdicts"][i] for i in ids])
    n = max(1, len(ids))
    low, high = paired_difference_interval(both, now_wrong, now_right, neither)
    v["without_tool"] = {"base": {k: without_tool[k] for k in _KEPT if k in without_tool}, "items": len(ids),
                         "gain": (now_right - now_wrong) / n, "gain_ci95": [low, high], "now_right": now_right,
                         "now_wrong": now_wrong, "mcnemar_p": mcnemar_exact(now_wrong, now_right)}
    return v


def _tool_lines(v: dict[str, Any]) -> list[str]:
    from rlvr.tools.stats import tool_line

    lines = []
    for name, evaluation in (("base", v["before"]), ("trained", v["after"])):
        if evaluation.get("tools"):
            lines.append(f"  {name:<9} {tool_line(evaluation['tools'])}")
    other = v.get("without_tool")
    if other:
        lines.append(f"  without the tool, the base model: {_pct(other['base'])}; trained with the tool against it: "
                     f"{other['gain'] * 100:+.1f} points ({other['now_right']} now right, {other['now_wrong']} now "
                     f"wrong; McNemar exact p = {other['mcnemar_p']:.2g})")
    return lines


def _indicator_lines(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Writing indicators before -> after (keyword tasks), so a gain made by stuffing shows beside the score."""
    if WRITING_INDICATORS not in before or WRITING_INDICATORS not in after:
        return []
    first, last = before[WRITING_INDICATORS], after[WRITING_INDICATORS]
    shown = ", ".join(f"{name.replace('_', ' ')} {first[name]:.1%} -> {last[name]:.1%}" for name in first if name in last)
    return [f"  writing   {shown}"]


def _rate(evaluation: dict[str, Any]) -> str:
    rate = evaluation.get("format_rate")
    return "n/a" if rate is None else f"{rate:.0%}"


def _pct(evaluation: dict[str, Any]) -> str:
    low, high = evaluation["ci95"]
    return f"{evaluation['accuracy']:.1%} [{low:.0%}-{high:.0%}]"
