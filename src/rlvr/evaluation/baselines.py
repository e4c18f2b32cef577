"""What a model scores without solving anything: one constant answer, or one fixed completion, for every item.

A trained model can gain accuracy by learning the answer distribution (small
answer spaces, skewed generators) rather than the skill. The constant-answer
accuracy, learnt from the TRAIN split's answers and measured on the evaluated
items, is printed beside every held-out gain so such a gain shows for what it is.

Where items have no single gold answer (rubric prose, programs, a user's checker), the baseline is one
fixed completion given for every item instead, judged by the task itself: the best of a few candidates
(the best-rewarded training rollouts, the task's reference completions). A reward that one fixed text
maximises is a hack; its full-credit share and mean score show beside the gain.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any


def answer_key(answer: Any) -> str:
    """Answers compared as numbers where they are numbers (``"1,000"`` == ``"1000"``), else as stripped text."""
    from rlvr.verifiers.math import format_answer, parse_gold

    value = parse_gold(answer) if isinstance(answer, str) else None
    return format_answer(value) if value is not None else str(answer).strip()


def most_common_answer(train_answers: Sequence[Any]) -> str | None:
    """The most frequent answer of the train split (ties: the one seen first); None without answers."""
    counts = Counter(answer_key(a) for a in train_answers)
    return counts.most_common(1)[0][0] if counts else None


def constant_answer_accuracy(train_answers: Sequence[Any], gold_answers: Sequence[Any]) -> dict[str, Any]:
    """``{"answer", "accuracy", "n"}``: always answering the train split's most common answer on ``gold_answers``."""
    answer = most_common_answer(train_answers)
    n = len(gold_answers)
    hits = sum(answer_key(g) == answer for g in gold_answers) if answer is not None else 0
    return {"answer": answer, "accuracy": hits / n if n else 0.0, "n": n, "learnt_from": "train split answers"}


# ----------------------------------------------------------------------------- one fixed completion

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
