"""The condition table behind the templated clinical vignettes: read once, and chosen from by slug.

Each row of ``rlvr/data/keywords/conditions.yaml`` gives one condition's fitting ages and sexes, symptoms in two
phrasings, findings, history and durations (:class:`Condition`); :mod:`rlvr.tasks.clinical_vignettes` composes
vignettes from them. ``conditions`` of the ``keywords`` task names a subset (:func:`select_conditions`).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError

DATA = Path(__file__).resolve().parent.parent / "data" / "keywords"
CONDITIONS_PATH = DATA / "conditions.yaml"


@dataclass(frozen=True)
class Condition:
    """One row of the condition table (fields as documented in conditions.yaml)."""

    name: str
    specialty: str
    setting: str
    ages: tuple[int, int]
    in_months: bool
    sexes: tuple[str, ...]
    context: tuple[str, ...]
    durations: tuple[str, ...]
    symptoms: tuple[tuple[str, str], ...]
    findings: tuple[Any, ...]
    history: tuple[Any, ...]


@lru_cache(maxsize=1)
def load_conditions() -> tuple[Condition, ...]:
    """The condition table, read once."""
    import yaml

    rows = yaml.safe_load(CONDITIONS_PATH.read_text(encoding="utf-8"))
    return tuple(_condition(row) for row in rows)


def _condition(row: dict[str, Any]) -> Condition:
    try:
        condition = Condition(
            name=row["condition"],
            specialty=row["specialty"],
            setting=row["setting"],
            ages=tuple(row["months"] if "months" in row else row["age"]),
            in_months="months" in row,
            sexes=tuple(row["sexes"]),
            context=tuple(row.get("context", ())),
            durations=tuple(row["durations"]),
            symptoms=tuple(tuple(text.split(" | ")) for text in row["symptoms"]),
            findings=tuple(row["findings"]),
            history=tuple(row.get("history", ())),
        )
    except KeyError as missing:
        raise RlvrError(f"{CONDITIONS_PATH}: condition {row.get('condition')!r} lacks {missing}.") from None
    if condition.setting not in ("any", "acute", "clinic") or len(condition.symptoms) < 2:
        raise RlvrError(
            f"{CONDITIONS_PATH}: condition {condition.name!r} needs a known setting and 2+ symptoms."
        )
    return condition


def select_conditions(slugs: Sequence[str] | None) -> tuple[Condition, ...]:
    """The conditions of the table named by ``slugs`` (None: all), in table order; one-line errors for an empty
    list, a repeated slug or an unknown one (naming the nearest valid slugs)."""
    table = load_conditions()
    if slugs is None:
        return table
    if isinstance(slugs, str) or not isinstance(slugs, Sequence) or not slugs:
        raise RlvrError(
            f"keywords conditions must be a non-empty list of condition slugs such as "
            f"[acne-vulgaris, gout] (null: all {len(table)}), got {slugs!r}."
        )
    names = [condition.name for condition in table]
    seen: set[str] = set()
    for slug in slugs:
        if not isinstance(slug, str) or slug not in names:
            near = _nearest(str(slug), names)
            hint = f"nearest: {', '.join(near)}" if near else f"valid: {', '.join(sorted(names))}"
            raise RlvrError(
                f"keywords conditions: unknown condition {slug!r} ({hint}; the condition: values of "
                f"{CONDITIONS_PATH.name})."
            )
        if slug in seen:
            raise RlvrError(f"keywords conditions names {slug!r} twice; name each condition once.")
        seen.add(slug)
    return tuple(condition for condition in table if condition.name in seen)


def _nearest(slug: str, names: list[str]) -> list[str]:
    """Up to three slugs near ``slug``: those containing it ('acne' -> acne-vulgaris), then difflib's closest."""
    containing = [name for name in names if slug and slug.lower() in name]
    return list(dict.fromkeys(containing + difflib.get_close_matches(slug, names, n=3, cutoff=0.5)))[:3]
