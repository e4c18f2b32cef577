"""Reading JSONL files with errors that name the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError


def iter_jsonl(path: str | Path, strict: bool = True) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """Yield ``(line_number, record)`` for each non-blank line.

    With ``strict`` a malformed line raises :class:`RlvrError` naming it; otherwise
    the error message is yielded in place of the record so the caller can report
    it and go on.
    """
    path = Path(path)
    if not path.is_file():
        raise RlvrError(f"data file not found: {path}")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("expected a JSON object")
            except ValueError as error:
                message = f"{path}:{number}: malformed JSON line ({error})"
                if strict:
                    raise RlvrError(message) from None
                yield number, message
                continue
            yield number, record


def read_jsonl(path: str | Path, required: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """All records of a JSONL file; a malformed line or a missing field is an error naming the line."""
    records = []
    for number, record in iter_jsonl(path):
        assert isinstance(record, dict)
        missing = [key for key in required if key not in record]
        if missing:
            raise RlvrError(f"{path}:{number}: missing field '{missing[0]}' (each line needs {', '.join(required)}).")
        records.append(record)
    if not records:
        raise RlvrError(f"{path} has no records.")
    return records
