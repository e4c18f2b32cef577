"""Stages of an experiment directory: what finished, with which settings, so a rerun skips it.

``stages.json`` maps a stage name to the settings it ran with (``key``), when it finished and how
long it took. A stage is done when its entry exists, its key equals the current one and its output
files are present; otherwise it runs (again).
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from rlvr import atomic


def settings_key(settings: Any) -> str:
    """A short, stable digest of JSON-serialisable settings."""
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class StageLog:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.entries: dict[str, dict[str, Any]] = {}
        if self.path.is_file():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                self.entries = data if isinstance(data, dict) else {}
            except ValueError:
                self.entries = {}

    def done(self, name: str, key: str, outputs: list[Path]) -> bool:
        entry = self.entries.get(name)
        return bool(entry) and entry.get("key") == key and all(Path(p).exists() for p in outputs)

    def recorded_key(self, name: str) -> str | None:
        entry = self.entries.get(name)
        return entry.get("key") if entry else None

    def finish(self, name: str, key: str, seconds: float, **extra: Any) -> None:
        self.entries[name] = {"key": key, "finished": time.strftime("%Y-%m-%dT%H:%M:%S"), "seconds": round(seconds, 1),
                              **extra}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_json(self.path, self.entries)  # a kill mid-write must not forget every finished stage

    def seconds(self, name: str) -> float | None:
        entry = self.entries.get(name)
        return entry.get("seconds") if entry else None
