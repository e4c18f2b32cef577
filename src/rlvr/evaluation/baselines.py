"""What a model scores without solving anything: one constant answer, or one fixed completion, for every item.

A trained model can gain accuracy by learning the answer distribution (small
answer spaces, skewed generators) rather than the skill. The constant-answer
accuracy, learnt from the TRAIN split's answers and measured on the evaluated
items, is printed beside every held-out gain so such a gain shows for what it is
(:func:`rlvr.verifiers.answer_keys.constant_answer_accuracy`, below both tasks and evaluation).

Where items have no single gold answer (rubric prose, programs, a user's checker), the baseline is one
fixed completion given for every item instead, judged by the task itself: the best of a few candidates
(the best-rewarded training rollouts, the task's reference completions). A reward that one fixed text
maximises is a hack; its full-credit share and mean score show beside the gain.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

#: ``constant_answer["kind"]`` where the baseline is a fixed completion judged by the task.
FIXED_COMPLETION = "constant completion"
#: Most candidates judged (each on every item; code candidates run in the sandbox).
MAX_CANDIDATES = 5
#: Characters of each candidate's completion kept in the summary.
SHOWN_CHARS = 2000


def reference_candidates(task: Any) -> list[dict[str, Any]]:
    """The task's reference completions as candidates (none when the task gives none, or fails to)."""
    try:
        references = task.reference_completions()
    except Exception as error:  # a missing train split, an unreadable source: no reference, said in the log
        print(f"rlvr: no reference completion for the constant baseline ({type(error).__name__}: {error})"[:300],
              file=sys.stderr, flush=True)
        return []
    return [{"label": f"the task's reference ({label})", "source": "reference", "completion": text}
            for label, text in references.items() if isinstance(text, str)]


def judge_fixed(task: Any, rows: Sequence[Any], candidate: dict[str, Any]) -> dict[str, Any]:
    """``candidate`` (``{"label", "source", "completion", ...}``) judged as the answer to every row: its full-credit
    share, mean score and whether scores were partial; an ``error`` instead when judging failed (never raises)."""
    text = candidate["completion"]
    shown = {**candidate, "completion": text[:SHOWN_CHARS]}
    try:
        outcomes = task.judge([text] * len(rows), rows)
        scores = [float(o.score) for o in outcomes]
        correct = [bool(o.correct) for o in outcomes]
    except Exception as error:
        return {**shown, "accuracy": None, "error": f"{type(error).__name__}: {error}"[:300]}
    n = max(1, len(rows))
    graded = any(score not in (0.0, 1.0) for score in scores)
    return {**shown, "accuracy": sum(correct) / n, "mean_score": sum(scores) / n, "graded": graded}


def best_candidate(judged: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The judged candidate with the highest full-credit share, then mean score (ties: the first)."""
    usable = [c for c in judged if c.get("accuracy") is not None]
    return max(usable, key=lambda c: (c["accuracy"], c["mean_score"]), default=None)


def constant_completion_baseline(task: Any, rows: Sequence[Any], candidates: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The best of a few fixed completions, each judged by ``task`` as the answer to every row of ``rows``.

    For tasks without a single gold answer per item (rubric prose, programs, a checker), where always giving the
    most common answer means nothing: a reward that one fixed text maximises is a hack, shown beside the gain.
    """
    rows = [dict(row) for row in rows]
    judged = [judge_fixed(task, rows, candidate) for candidate in list(candidates)[:MAX_CANDIDATES]]
    best = best_candidate(judged)
    result: dict[str, Any] = {"kind": FIXED_COMPLETION, "answer": None, "accuracy": None, "n": len(rows),
                              "candidates": judged, "learnt_from": "the top training rollouts and the task's references"}
    if not rows or best is None:
        why = "no test items" if not rows else (
            "no candidate could be judged" if judged else "no training rollout was scored and the task gives no reference")
        return {**result, "note": f"no fixed completion judged: {why}"}
    return {**result, "answer": preview(best["completion"]), "accuracy": best["accuracy"],
            "mean_score": best["mean_score"], "graded": any(c.get("graded") for c in judged),
            "best": best["label"], "best_step": best.get("step"), "judged": sum(c.get("accuracy") is not None for c in judged)}


def preview(text: str, width: int = 80) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


# ----------------------------------------------------------------------------- the baseline of a verdict


def constant_baseline(task: Any, items: Any, top_completions: Any = None) -> dict[str, Any]:
    """What one answer for every test item earns: the train split's most common answer where each item has one
    gold answer (``final_answer``); else the best of a few fixed completions judged by the task (the top training
    rollouts in ``top_completions``, the task's references)."""
    from rlvr.verifiers.answer_keys import constant_answer_accuracy

    if "final_answer" in items.column_names and task.single_gold_answer:
        return constant_answer_accuracy(task.train_answers(), items["final_answer"])
    rollouts = top_completions.candidates() if top_completions is not None else []
    return constant_completion_baseline(task, list(items), rollouts + reference_candidates(task))


def constant_line(constant: dict[str, Any]) -> str | None:
    """The constant baseline in one line: the most common answer's accuracy, or the best fixed completion's
    full-credit share and score (None where there is none to show, e.g. an older summary's)."""
    if constant.get("kind") == FIXED_COMPLETION:
        return _fixed_completion_line(constant)
    if constant.get("accuracy") is None:
        return None
    return f"always answering {constant['answer']!r} (the train split's most common answer): {constant['accuracy']:.1%}"


def _fixed_completion_line(constant: dict[str, Any]) -> str:
    if constant.get("accuracy") is None:
        return f"one fixed completion for every item: {constant.get('note', 'none judged')}"
    step = f", step {constant['best_step']}" if constant.get("best_step") is not None else ""
    score = f", score {constant['mean_score']:.2f}" if constant.get("graded") else ""
    return (f"one fixed completion for every item (best of {constant.get('judged', '?')}: {constant.get('best')}{step}): "
            f"{constant['accuracy']:.1%} full credit{score}")
