"""Checkpoints a run can resume from: complete, or set aside and said.

rlvr marks a ``checkpoint-N`` complete by writing ``rlvr_state.json`` into it last
(:class:`rlvr.training.resume.RunState`), after the trainer has written every file, with each file's
size. A save cut short (a kill, the OOM killer, a full disk) lacks the mark; a file truncated or
removed since no longer matches it. ``--resume`` takes the newest complete checkpoint and sets each
newer incomplete one aside (``incomplete-checkpoint-N``), out of the trainer's sight but kept.

Light on purpose (no torch, no transformers): the SageMaker entry point reads it before launching.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

STATE_FILE = "rlvr_state.json"


def checkpoints(output_dir: Path) -> list[Path]:
    """The ``checkpoint-N`` directories in ``output_dir``, newest (highest N) first."""
    found = [p for p in Path(output_dir).glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.split("-")[-1]), reverse=True)


def latest_checkpoint(output_dir: Path) -> Path | None:
    """The newest complete checkpoint (:func:`incomplete` says why another is not), else None."""
    return next((p for p in checkpoints(output_dir) if not incomplete(p)), None)


def incomplete(checkpoint: Path) -> str:
    """Why ``checkpoint`` cannot be resumed from ('' when it can).

    rlvr marks a checkpoint complete by writing ``rlvr_state.json`` last, after the trainer has written
    every file, with each file's size: a save cut by a kill or a full disk lacks the mark, and a file
    truncated or removed since no longer matches it.
    """
    try:
        state = json.loads((Path(checkpoint) / STATE_FILE).read_text())
    except FileNotFoundError:
        return f"no {STATE_FILE}: its save did not finish"
    except (OSError, ValueError):
        return f"{STATE_FILE} is unreadable"
    for name, size in (state.get("files") or {}).items():
        path = Path(checkpoint) / name
        if not path.is_file():
            return f"{name} is missing"
        if path.stat().st_size != size:
            return f"{name} is {path.stat().st_size} bytes, {size} were written (truncated?)"
    return ""


def set_aside(checkpoint: Path) -> Path:
    """Rename an incomplete checkpoint out of the trainer's sight (kept for inspection, never deleted)."""
    target = checkpoint.with_name(f"incomplete-{checkpoint.name}")
    if target.exists():
        target = checkpoint.with_name(f"incomplete-{checkpoint.name}-{int(time.time())}")
    os.replace(checkpoint, target)
    return target


def file_sizes(checkpoint: Path) -> dict[str, int]:
    return {str(p.relative_to(checkpoint)): p.stat().st_size for p in sorted(Path(checkpoint).rglob("*"))
            if p.is_file() and p.name != STATE_FILE}
