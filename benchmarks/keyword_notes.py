"""The stuffing indicators of a keywords run's test notes, before and after, beside the verdict.

`rlvr train` writes every greedy test note, judged, to ``test_samples.jsonl`` (step 0 = before training, the
last step = after). The verdict in ``summary.json`` reports full credit, the per-item flags and the mean
writing indicators; this script adds the counts BENCHMARKS.md's keyword tables print beside them, each from
the judge's own details of every note:

- keyword mentions per note (the rubric's counted mentions, all groups), keyword words per note (density x
  words, the figure BENCHMARKS.md's tables call "keyword mentions per note") and words per note: a density
  rise from shorter notes reads differently from one from more terms;
- notes naming a condition other than the vignette's, and notes naming two or more conditions (stuffing
  several diagnoses to catch the right one);
- notes that ended before the token limit;
- notes naming a given condition (``--condition``, e.g. the example note's cellulitis) by the judge's names.

    python benchmarks/keyword_notes.py RUN_DIR [RUN_DIR ...] [--condition cellulitis]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _notes(run_dir: Path) -> tuple[list[dict], list[dict]]:
    path = run_dir / "test_samples.jsonl"
    if not path.is_file():
        raise SystemExit(
            f"keyword_notes: {path} not found: give the output directory of a finished keywords run"
        )
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    steps = sorted({row["step"] for row in rows})
    if len(steps) < 2:
        raise SystemExit(
            f"keyword_notes: {path} holds one step only; the run has no after-training notes yet"
        )
    return [r for r in rows if r["step"] == steps[0]], [r for r in rows if r["step"] == steps[-1]]


def _named(row: dict) -> list[str]:
    item = row.get("details", {}).get("per_item") or {}
    named = list(item.get("other_conditions") or [])
    if item.get("condition_named"):
        named.append(item["condition"])
    return named


def _keyword_words(row: dict) -> float:
    """Density x words: the measure the earlier tables call "keyword mentions per note"."""
    details = row["details"]
    return details.get("indicators", {}).get("keyword_density", 0.0) * details.get("words", 0)


def indicators(rows: list[dict], condition: str | None = None) -> dict[str, float]:
    """Means and counts over one step's notes (see the module docstring)."""
    n = len(rows)
    mentions = [sum(g.get("counted", 0) for g in r["details"]["groups"].values()) for r in rows]
    out = {
        "notes": n,
        "full credit": sum(bool(r["correct"]) for r in rows),
        "mentions per note": sum(mentions) / n,
        "keyword words per note": sum(_keyword_words(r) for r in rows) / n,
        "words per note": sum(r["details"].get("words", 0) for r in rows) / n,
        "another condition named": sum(
            bool((r["details"].get("per_item") or {}).get("other_conditions")) for r in rows
        ),
        "2+ conditions named": sum(len(_named(r)) >= 2 for r in rows),
        "ended before the limit": sum(bool(r.get("stopped")) for r in rows),
    }
    if condition:
        out[f"names {condition}"] = sum(condition in _named(r) for r in rows)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="output directories of finished keywords runs")
    parser.add_argument(
        "--condition", help="also count notes naming this condition (a table key, e.g. cellulitis)"
    )
    args = parser.parse_args(argv)
    for run in args.runs:
        before, after = (indicators(rows, args.condition) for rows in _notes(run))
        print(f"{run}")
        for key in before:
            fmt = "{:.1f}" if isinstance(before[key], float) else "{}"
            print(f"  {key:<26} {fmt.format(before[key])} -> {fmt.format(after[key])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
