"""Where the ``keywords`` task's prompts come from, how they split, and the per-item columns of a row.

A prompts source is the 48 built-in vignettes, the generated ones (:mod:`rlvr.tasks.clinical_vignettes`) or the
user's JSONL. Under the per-item check a row carries its ``condition`` and ``findings``; a row without a condition
is judged by the rubric alone, and :func:`say_rows_without_condition` says so once, so a file lacking them does not
quietly lose the check.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError
from rlvr.jsonl import read_jsonl
from rlvr.tasks.clinical_vignettes import MAX_DRAWS, PER_CONDITION, generate_vignettes
from rlvr.tasks.vignette_conditions import select_conditions
from rlvr.verifiers.condition_mentions import findings_in
from rlvr.verifiers.condition_table import known_condition, load_table
from rlvr.verifiers.keyword_rubric_loader import load_rubric

BUILTIN_PROMPTS = Path(__file__).resolve().parent.parent / "data" / "keywords" / "medical_prompts.jsonl"
#: ``prompts`` / ``test_prompts`` values naming the built-in sets rather than a file.
BUILTIN, GENERATED = "builtin", "generated"
#: Prompt sources whose rows without a condition were already said in this process (each is said once).
_SAID_WITHOUT_CONDITION: set[str] = set()


def prompts_path(prompts: str | None) -> Path:
    return BUILTIN_PROMPTS if prompts in (None, BUILTIN) else Path(str(prompts)).expanduser()


def read_prompts(path: Path) -> list[dict[str, Any]]:
    rows = read_jsonl(path, required=("prompt",))
    for number, row in enumerate(rows, start=1):
        if not isinstance(row["prompt"], str) or not row["prompt"].strip():
            raise RlvrError(f"{path}: record {number} has an empty or non-text 'prompt'.")
        if row.get("rubric"):
            row["rubric"] = str((path.parent / str(row["rubric"])).expanduser().resolve())
            load_rubric(row["rubric"])
    return rows


def check_generation_options(prompts: str | None, test_prompts: str | None, conditions: Any,
                             per_condition: int) -> list[str] | None:
    """``conditions`` and ``vignettes_per_condition`` only with generated prompts, and valid (one-line errors);
    returns ``conditions`` as a list (a comma-separated string split), or None."""
    changed = [name for name, value, default in (("conditions", conditions, None),
                                                 ("vignettes_per_condition", per_condition, PER_CONDITION))
               if value != default]
    if changed and GENERATED not in (prompts, test_prompts):
        raise RlvrError(f"keywords {' and '.join(changed)} shape the generated vignettes only; set "
                        f"prompts: {GENERATED}, or drop {' and '.join(changed)}.")
    if isinstance(conditions, str):
        conditions = [slug.strip() for slug in conditions.split(",") if slug.strip()]
    if conditions is not None:
        select_conditions(conditions)
    if not 1 <= per_condition <= MAX_DRAWS:
        raise RlvrError(f"keywords vignettes_per_condition must be an integer from 1 to {MAX_DRAWS} "
                        f"(default {PER_CONDITION}), got {per_condition}.")
    return conditions


def load_source(prompts: str | None, conditions: list[str] | None, per_condition: int) -> list[dict[str, Any]]:
    """The rows of a prompts source: None or "builtin" (the 48 vignettes), "generated" (of ``conditions``,
    ``per_condition`` each), or a JSONL path."""
    if prompts == GENERATED:
        return generate_vignettes(conditions=conditions, per_condition=per_condition)
    path = prompts_path(prompts)
    if not path.is_file():
        raise RlvrError(f"keywords prompts '{prompts}': no such file; use {BUILTIN}, {GENERATED} "
                        "or the path of a JSONL file.")
    return read_prompts(path)


def describe_source(prompts: str | None) -> str:
    return "the generated vignettes" if prompts == GENERATED else str(prompts_path(prompts))


def has_condition(row: Mapping[str, Any]) -> bool:
    """Whether a prompts row names a condition (a non-blank ``condition`` string) for the per-item check."""
    condition = row.get("condition")
    return isinstance(condition, str) and bool(condition.strip())


def item_columns(row: Mapping[str, Any], row_id: str) -> dict[str, Any]:
    """The per-item check's columns of a prompts row: ``condition`` ("" when none) and ``findings`` (a list of
    key-finding labels: the row's own, else those its vignette states)."""
    if not has_condition(row):
        return {"condition": "", "findings": []}
    condition = str(row["condition"]).strip()
    if not known_condition(condition):
        from rlvr.registry import unknown_name_message

        raise RlvrError(f"keywords prompt {row_id}: {unknown_name_message('condition', condition, list(load_table().conditions))}")
    findings = row.get("findings")
    if not isinstance(findings, list):
        findings = findings_in(str(row["prompt"]), condition)
    return {"condition": condition, "findings": [str(finding) for finding in findings]}


def say_rows_without_condition(rows: Sequence[Mapping[str, Any]], source: str) -> None:
    """One line on stderr, once per prompts source in a process, when the per-item check meets rows without a
    ``condition``: those rows are judged by the rubric alone."""
    lacking = sum(not has_condition(row) for row in rows)
    if not lacking or source in _SAID_WITHOUT_CONDITION:
        return
    _SAID_WITHOUT_CONDITION.add(source)
    print(f"rlvr: keywords per_item: {lacking} of {len(rows)} prompts in {source} have no 'condition' field; "
          "those rows are judged by the rubric alone, without the per-item check.", file=sys.stderr, flush=True)


def carve_indices(source: list[dict[str, Any]], carved: tuple[str, ...], seed: int, test_fraction: float,
                  validation_fraction: float, stratify: bool) -> dict[str, list[int]]:
    """Row indices of each carved split: one seeded shuffle over all rows, or (``stratify``) over each
    condition's rows, each condition giving its own ``test_fraction`` and ``validation_fraction``."""
    strata: dict[str, list[int]] = {}
    for index, row in enumerate(source):
        key = str(row.get("condition") or "") if stratify else ""
        strata.setdefault(key, []).append(index)
    rng = random.Random(seed)
    chosen: dict[str, list[int]] = {name: [] for name in carved}
    for order in strata.values():
        rng.shuffle(order)
        size = len(order)
        if "test" in carved:
            test, order = _take(order, test_fraction, size)
            chosen["test"] += test
        validation, train = _take(order, validation_fraction, size)
        chosen["validation"] += validation
        chosen["train"] += train
    return chosen


def _take(order: list[int], fraction: float, total: int) -> tuple[list[int], list[int]]:
    """The first ``fraction`` of ``total`` (at least one) from ``order``, and the rest."""
    count = max(1, round(total * fraction))
    return order[:count], order[count:]
