"""Writing an evaluation: samples.jsonl, summary.json, the figure and the HTML report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_outputs(result: Any, output_dir: str | Path, figure: bool = True) -> dict[str, Path]:
    """samples.jsonl, summary.json, accuracy.png and report.html in ``output_dir``."""
    from rlvr.evaluation.report import write_figure, write_report

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"samples": out / "samples.jsonl", "summary": out / "summary.json"}
    with paths["samples"].open("w", encoding="utf-8") as handle:
        for record in result.records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    paths["summary"].write_text(json.dumps(result.summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if figure:
        paths["figure"] = write_figure(result.summary, out / "accuracy.png")
        paths["report"] = write_report(result, out / "report.html", paths["figure"])
    return paths
