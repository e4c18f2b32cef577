"""The records of an evaluation on disk as each configuration finishes: kept through a kill, reused by a rerun."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from rlvr import atomic

PARTIAL_NAME = "samples.partial.jsonl"


def records_in(path: str | Path) -> list[dict[str, Any]]:
    """The records of a sink's file, without its key and completion lines."""
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row for row in rows if "rlvr_eval_key" not in row and "rlvr_eval_done" not in row]


def run_key(config: Any) -> str:
    """What makes two evaluations the same: every setting but the progress bar, and each adapter's saved file."""
    settings = {k: v for k, v in dataclasses.asdict(config).items() if k != "progress"}
    for spec in config.models:
        weights = [p for p in Path(spec.adapter).glob("adapter_model.*")] if spec.adapter else []
        settings.setdefault("adapters", []).append([(str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in weights])
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class RecordSink:
    """Appends records to a JSONL file as each configuration finishes, so a kill or a failure later keeps them.

    The file starts with the evaluation's :func:`run_key`; each configuration's records are followed by a
    line saying they are complete. Started again with the same key (a rerun after a kill), the complete
    configurations are reused, not generated again; with another key, or none, the file starts empty.
    """

    def __init__(self, path: str | Path | None, key: str = ""):
        self.path = Path(path) if path else None
        self.finished: dict[tuple[str, int], list[dict[str, Any]]] = {}
        if not self.path:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lines = self._read()
        if key and lines and lines[0].get("rlvr_eval_key") == key:
            self._keep_finished(lines[1:])
        kept = [record for group in self.finished.values() for record in group]
        with atomic.open_atomic(self.path) as handle:
            handle.write(json.dumps({"rlvr_eval_key": key}) + "\n")
            for (label, shots), group in self.finished.items():
                self._write(handle, group, label, shots)
        if kept:
            print(f"rlvr: {self.path}: reusing {len(kept)} records of {len(self.finished)} configuration(s) "
                  "finished by an interrupted run with the same settings.", file=sys.stderr, flush=True)

    def done(self, label: str, shots: Any) -> bool:
        return (label, shots) in self.finished

    def reuse(self, label: str, shots: Any) -> list[dict[str, Any]]:
        return self.finished[(label, shots)]

    def add(self, records: list[dict[str, Any]], label: str = "", shots: Any = None) -> None:
        if self.path:
            with self.path.open("a", encoding="utf-8") as handle:
                self._write(handle, records, label, shots)
                handle.flush()
                os.fsync(handle.fileno())

    @staticmethod
    def _write(handle: Any, records: list[dict[str, Any]], label: str, shots: Any) -> None:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        handle.write(json.dumps({"rlvr_eval_done": [label, shots], "records": len(records)}) + "\n")

    def _read(self) -> list[dict[str, Any]]:
        rows = []
        try:
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    break  # a line cut by the kill: nothing after it counts
        except OSError:
            pass
        return [row for row in rows if isinstance(row, dict)]

    def _keep_finished(self, lines: list[dict[str, Any]]) -> None:
        pending: list[dict[str, Any]] = []
        for line in lines:
            if "rlvr_eval_done" not in line:
                pending.append(line)
                continue
            label, shots = line["rlvr_eval_done"]
            if line.get("records") == len(pending):
                self.finished[(label, shots)] = pending
            pending = []
