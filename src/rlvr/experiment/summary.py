"""An experiment's ``summary.json``: training, the shot sweep base vs trained (strict and published), the
held-out variants base vs trained, baselines.

Every evaluation number is computed from the records (``samples.jsonl``; a variant's from its
``eval/*-variant-*.jsonl``) by the same functions ``rlvr eval`` uses; ``sweep`` lays them out per shot count,
base beside trained, and ``variants`` one row per variant in the same layout.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from rlvr.config import Recipe
from rlvr.verifiers.answer_keys import answer_key

BASE, TRAINED = "base", "trained"


def build_summary(recipe: Recipe, config: Any, sweep: dict[str, Any], specs: list[Any], records: list[dict[str, Any]],
                  log: Any, wall_seconds: float,
                  variants: list[tuple[dict[str, Any], list[dict[str, Any]]]] | None = None) -> dict[str, Any]:
    """``variants``: (description, records) of each held-out variant (:mod:`rlvr.experiment.variants`),
    summarised apart from ``records``, the sweep's."""
    evaluation = _evaluation(records, specs)
    training = _json(recipe.output_dir / "summary.json")
    return {
        "recipe": recipe.name,
        "recipe_source": recipe.source,
        "description": recipe.description,
        "command": config.command,
        "output_dir": str(config.output_dir),
        "wall_seconds": round(wall_seconds, 1),
        "stage_seconds": {name: entry.get("seconds") for name, entry in log.entries.items() if name != "train-started"},
        "training": {k: v for k, v in training.items() if k != "rewards"},
        "evaluation": {**evaluation, **{k: v for k, v in sweep.items() if k != "task_options"},
                       "task_options": sweep["task_options"]},
        "sweep": sweep_rows(evaluation, BASE, TRAINED),
        "variants": [variant_result(described, chosen, specs) for described, chosen in variants or []],
        "most_common_answer": most_common_answer(records),
        "train_overlap": train_overlap(recipe, records),
    }


def _evaluation(records: list[dict[str, Any]], specs: list[Any]) -> dict[str, Any]:
    """``rlvr eval``'s summary of ``records`` with the published scoring beside the strict one."""
    from rlvr.evaluation.evaluate import summarize
    from rlvr.evaluation.published import add_published_summary

    evaluation = summarize(records, specs)
    add_published_summary(evaluation, records)
    return evaluation


def variant_result(described: dict[str, Any], records: list[dict[str, Any]], specs: list[Any]) -> dict[str, Any]:
    """One held-out variant: base and trained with the paired test, laid out as a sweep row (one shot
    count), and the most-common-answer accuracy of its own items."""
    rows = sweep_rows(_evaluation(records, specs), BASE, TRAINED)
    row = rows[0] if rows else {}
    return {**described, **{k: v for k, v in row.items() if k != "shots"},
            "most_common_answer": most_common_answer(records)}


def sweep_rows(evaluation: dict[str, Any], base: str, trained: str) -> list[dict[str, Any]]:
    """Per shot count: base and trained results side by side with their paired tests."""
    results = {(r["model"], r["shots"]): r for r in evaluation["results"]}
    comparisons = {(c["first"], c["second"], c["shots"]): c for c in evaluation["comparisons"]}
    rows = []
    for shots in sorted({r["shots"] for r in evaluation["results"]}):
        row: dict[str, Any] = {"shots": shots}
        for label in (base, trained):
            result = results.get((label, shots))
            if result:
                row[label] = {k: result.get(k) for k in (
                    "n", "correct", "accuracy", "ci95", "format_rate", "stopped_rate", "mean_completion_tokens",
                    "published_correct", "published_accuracy", "published_ci95") if k in result}
        comparison = comparisons.get((base, trained, shots))
        if comparison:
            row["paired"] = {k: comparison[k] for k in ("n", "only_first", "only_second", "accuracy_difference", "p_value")}
            if "published" in comparison:
                row["paired_published"] = comparison["published"]
        rows.append(row)
    return rows


def train_overlap(recipe: Recipe, records: list[dict[str, Any]]) -> dict[str, Any]:
    """How many evaluated test items ask a question that also occurs in the training split (by exact text)."""
    from rlvr.tasks import get_task

    questions = {str(r["id"]): r.get("question") for r in records}
    if not questions or any(q is None for q in questions.values()):
        questions = _questions_from_task(recipe, records)
    try:
        task = get_task(recipe.task_name, recipe.task_options)
        train_questions = set(task.load("train")["question"])
    except Exception as error:  # noqa: BLE001 (a task without a question column: say so rather than fail the report)
        return {"checked": False, "reason": str(error).splitlines()[0][:200]}
    overlapping = sorted(i for i, q in questions.items() if q in train_questions)
    return {"checked": True, "items": len(questions), "in_training_split": len(overlapping), "ids": overlapping[:20]}


def _questions_from_task(recipe: Recipe, records: list[dict[str, Any]]) -> dict[str, str]:
    from rlvr.tasks import get_task

    task = get_task(recipe.task_name, {**recipe.task_options, "shots": 0})
    ids = {str(r["id"]) for r in records}
    return {str(row["id"]): row["question"] for row in task.load("test") if str(row["id"]) in ids}


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def most_common_answer(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy of always answering the most common gold answer among the evaluated items (an oracle bound:
    it knows the test answers; ``rlvr train``'s baseline learns its answer from the train split).
    Answers compare as the train baseline compares them (``"1,000"`` == ``"1000"``)."""
    golds = {str(r["id"]): answer_key(r.get("ground_truth")) for r in records}
    if not golds:
        return {}
    answer, count = Counter(golds.values()).most_common(1)[0]
    return {"answer": answer, "accuracy": count / len(golds), "n": len(golds)}
