"""Writing an evaluation: samples.jsonl and summary.json first, then the figure and the HTML report.

The records and the summary are what hours of generation produced; a figure or report step that
fails must not lose them. So they are written first, a failing figure still leaves a report (without
it), and the failure is reported afterwards as one line naming what was written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlvr import atomic
from rlvr.errors import RlvrError


def write_outputs(result: Any, output_dir: str | Path, figure: bool = True) -> dict[str, Path]:
    """samples.jsonl, summary.json, accuracy.png and report.html in ``output_dir``."""
    from rlvr.evaluation.figure import write_figure
    from rlvr.evaluation.report import write_report

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"samples": out / "samples.jsonl", "summary": out / "summary.json"}
    for stale in ("summary.json", "accuracy.png", "report.html"):  # an earlier evaluation's: a kill while these are
        (out / stale).unlink(missing_ok=True)                      # rewritten must not leave them beside new samples
    with atomic.open_atomic(paths["samples"]) as handle:  # complete or absent, like the summary written after it
        for record in result.records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    atomic.write_json(paths["summary"], result.summary)
    if not figure:
        return paths
    failures = []
    try:
        paths["figure"] = write_figure(result.summary, out / "accuracy.png")
    except Exception as error:  # a drawing bug must not cost the report
        failures.append(f"the figure could not be drawn ({type(error).__name__}: {error})")
    try:
        paths["report"] = write_report(result, out / "report.html", paths.get("figure"))
    except Exception as error:
        failures.append(f"the report could not be written ({type(error).__name__}: {error})")
    if failures:
        written = ", ".join(str(p) for p in paths.values())
        raise RlvrError(f"{'; '.join(failures)}. Written: {written}.")
    return paths
