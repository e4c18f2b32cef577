"""Worked example notes for the keywords task (its ``shots`` option): a vignette and a full-credit note shown
as an earlier turn before the prompt, so a small model sees the whole note it is asked for (diagnosis with its
findings, treatment, follow-up) and where to stop.

The built-in notes (written for rlvr, under ``rlvr/data/keywords/``) are of cellulitis and gout, so a note that
copies the example's diagnosis names a condition the vignette does not have, and the per-item check counts it as
another condition named. Two sets hold the same vignettes and the same facts in a different order: ``builtin``
opens with the findings and reaches the diagnosis mid-sentence ("The hot, red and swollen skin ... makes
cellulitis the most likely diagnosis"); ``name-first`` opens with it ("The most likely diagnosis is cellulitis,
given ..."). Which one a small model is shown changes how often it names the condition at all (BENCHMARKS.md).
A user's file has one ``{"prompt": ..., "completion": ...}`` object per line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError
from rlvr.jsonl import read_jsonl

_DATA = Path(__file__).resolve().parent.parent / "data" / "keywords"
#: ``exemplars`` value naming the default built-in notes rather than a file.
BUILTIN = "builtin"
#: The built-in sets by name: findings first (the default), or the diagnosis named in the opening words.
BUILTIN_SETS = {BUILTIN: _DATA / "exemplar_notes.jsonl", "name-first": _DATA / "exemplar_notes_name_first.jsonl"}


@dataclass(frozen=True)
class ExemplarNote:
    prompt: str
    completion: str


def load_exemplar_notes(source: str) -> list[ExemplarNote]:
    """The notes of ``source`` (a built-in set's name or a JSONL path); one clear line when the file is missing or
    malformed."""
    path = BUILTIN_SETS.get(source) or Path(str(source)).expanduser()
    if not path.is_file():
        names = ", ".join(BUILTIN_SETS)
        raise RlvrError(f"keywords exemplars '{source}': no such file; use a built-in set ({names}) or the path of "
                        "a JSONL file with a prompt and a completion per line.")
    notes = []
    for number, row in enumerate(read_jsonl(path, required=("prompt", "completion")), start=1):
        values = [row[key] for key in ("prompt", "completion")]
        if not all(isinstance(value, str) and value.strip() for value in values):
            raise RlvrError(f"{path}: exemplar {number}: 'prompt' and 'completion' must be non-empty text.")
        notes.append(ExemplarNote(*(value.strip() for value in values)))
    return notes


def with_instructions(text: str, instructions: str | None) -> str:
    """A vignette as the model is asked it: the text, then the rubric's instructions."""
    return f"{text}\n\n{instructions}" if instructions else text


def chat_prompt(notes: list[ExemplarNote], text: str, instructions: str | None) -> list[dict[str, Any]]:
    """The example turns (user vignette, assistant note), then the vignette to answer."""
    messages: list[dict[str, Any]] = []
    for note in notes:
        messages.append({"role": "user", "content": with_instructions(note.prompt, instructions)})
        messages.append({"role": "assistant", "content": note.completion})
    messages.append({"role": "user", "content": with_instructions(text, instructions)})
    return messages


def plain_prompt(notes: list[ExemplarNote], text: str, instructions: str | None) -> str:
    """The same as plain text: each example vignette and its note after "Answer:", then the vignette to answer."""
    blocks = [f"{with_instructions(note.prompt, instructions)}\n\nAnswer:\n{note.completion}" for note in notes]
    blocks.append(f"{with_instructions(text, instructions)}\n\nAnswer:\n")
    return "\n\n".join(blocks)
