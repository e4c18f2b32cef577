"""Verifiers for file tasks: what the answer line says, judged against a gold answer.

Every file task (``task: {name: jsonl, verifier: ...}``) asks for the same answer line as the math tasks,
``#### The final answer is X``, and the verifier decides what ``X`` must be:

========================  =======================================================================
``math``                  one number within :data:`~rlvr.verifiers.math.TOLERANCE` of the gold (the math
                          tasks' verifier, :mod:`rlvr.verifiers.math`)
``exact``                 the same text as the gold after normalising: Unicode NFKC, case-folded, runs of
                          spaces as one, Markdown/LaTeX markup, surrounding quotes and a final period dropped
``choice``                one option letter (``B``, ``(B)``, ``B.``, ``B) the option's text``), equal to the
                          gold letter
``regex:PATTERN``         the first match of PATTERN in the answer (its first group when it has one),
                          equal to the gold after normalising as ``exact`` does
``module:function``,      the user's checker, ``function(completion, row) -> bool | float``
``file.py:function``      (:mod:`rlvr.verifiers.checker`)
========================  =======================================================================

The answer is read from the **first** ``####`` line only (the phrase ``The final answer is`` optional), as
the math verifier reads it, so a model cannot hedge with several answer lines. ``well_formed`` means that
line has the phrase and an answer of the verifier's form. Every function is linear in the input size. A task
whose answers span lines reads them from a fenced block after the answer line instead
(:func:`answer_text` with ``block``, :mod:`rlvr.verifiers.answer_block`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlvr.errors import RlvrError
from rlvr.verifiers.answer_block import block_after
from rlvr.verifiers.math import (
    ANSWER_MARK,
    find_answer_line,
    format_answer,
    is_correct,
    parse_gold,
    read_answer,
)
from rlvr.verifiers.math import strip_markup as _strip_markup

_PHRASE = re.compile(r"\s*+the\s++final\s++answer\s++is\s*+:?", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_QUOTES = "\"'`“”‘’«»"
# One option letter: bare, in parentheses, or followed by ')' '.' ':' and the option's text.
_CHOICE = re.compile(r"(?:option\s+)?\(?([A-Z])\)?(?:[.):](?:\s+\S.*)?)?", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Verdict:
    """One completion judged: ``score`` in [0, 1] (1: correct), the answer as shown, whether it was well
    formed, and the checker's error when a user checker failed on it (the item then counts as wrong)."""

    score: float
    answer: str | None
    well_formed: bool
    error: str | None = None


def answer_text(completion: str, block: bool = False) -> tuple[str | None, bool]:
    """(the answer on the first ``####`` line without the phrase and markup, whether the phrase was there).

    (None, False) when there is no answer line; the answer is stripped, with a final period dropped. With
    ``block`` (a task whose answers span lines) the answer is the fenced block's after an answer line that says
    nothing more (:mod:`rlvr.verifiers.answer_block`); None without one.
    """
    if not isinstance(completion, str):
        return None, False
    found = find_answer_line(completion)
    if found is None:
        return None, False
    rest = _strip_markup(found[1][len(ANSWER_MARK):])
    phrase = _PHRASE.match(rest)
    if phrase:
        rest = rest[phrase.end():]
    rest = rest.strip()
    if rest.endswith("."):
        rest = rest[:-1].rstrip()
    if block:
        end = completion.find("\n", len(found[0]))
        return (None if rest or end == -1 else block_after(completion, end + 1)), phrase is not None
    return rest, phrase is not None


def normalize_answer(text: Any) -> str:
    """The text two answers are compared by: NFKC, case-folded, one space between words, no surrounding quotes
    or final period."""
    value = _SPACE.sub(" ", unicodedata.normalize("NFKC", str(text)).casefold()).strip()
    value = _strip_markup(value).strip()
    if value.endswith("."):
        value = value[:-1].rstrip()
    if len(value) >= 2 and value[0] in _QUOTES and value[-1] in _QUOTES:
        value = value[1:-1].strip()
    return value


def choice_letter(text: Any) -> str | None:
    """The one option letter ``text`` gives (upper case), or None."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    match = _CHOICE.fullmatch(text)
    if match is None:
        return None
    return match.group(1).upper()  # "b", "(B)", "B. text" give B; "a cat" has no delimiter after the letter


class MathVerifier:
    spec = "math"
    answer_form = "a number"

    def verify(self, completion: str, gold: Any, row: Mapping[str, Any]) -> Verdict:
        answer = read_answer(completion)
        if answer is None:
            return Verdict(0.0, None, False)
        shown = format_answer(answer.value) if answer.value is not None else answer_text(completion)[0]
        correct = is_correct(answer.value, parse_gold(gold))
        return Verdict(1.0 if correct else 0.0, shown, bool(answer.has_phrase and answer.value is not None))

    def check_gold(self, gold: Any) -> str | None:
        return None if parse_gold(gold) is not None else "is not a number"

    def form(self, completion: str) -> bool:
        answer = read_answer(completion)
        return bool(answer and answer.has_phrase and answer.value is not None)


class ExactVerifier:
    spec = "exact"
    answer_form = "the answer alone"

    def verify(self, completion: str, gold: Any, row: Mapping[str, Any]) -> Verdict:
        text, phrase = answer_text(completion)
        if not text:
            return Verdict(0.0, text, False)
        correct = normalize_answer(text) == normalize_answer(gold)
        return Verdict(1.0 if correct else 0.0, text, phrase)

    def check_gold(self, gold: Any) -> str | None:
        return None if normalize_answer(gold) else "is empty"

    def form(self, completion: str) -> bool:
        text, phrase = answer_text(completion)
        return phrase and bool(text)


class ChoiceVerifier:
    spec = "choice"
    answer_form = "the letter of the correct option"

    def verify(self, completion: str, gold: Any, row: Mapping[str, Any]) -> Verdict:
        text, phrase = answer_text(completion)
        letter = choice_letter(text)
        if letter is None:
            return Verdict(0.0, text, False)
        return Verdict(1.0 if letter == choice_letter(str(gold)) else 0.0, letter, phrase)

    def check_gold(self, gold: Any) -> str | None:
        return None if choice_letter(str(gold)) else "is not an option letter (A, B, C, ...)"

    def form(self, completion: str) -> bool:
        text, phrase = answer_text(completion)
        return phrase and choice_letter(text) is not None


class RegexVerifier:
    answer_form = "the answer alone"

    def __init__(self, pattern: str):
        try:
            self.pattern = re.compile(pattern)
        except re.error as error:
            raise RlvrError(f"verifier 'regex:{pattern}': not a valid regular expression ({error}).") from None
        self.spec = f"regex:{pattern}"

    def verify(self, completion: str, gold: Any, row: Mapping[str, Any]) -> Verdict:
        text, phrase = answer_text(completion)
        found = self._found(text)
        if found is None:
            return Verdict(0.0, text, False)
        return Verdict(1.0 if normalize_answer(found) == normalize_answer(gold) else 0.0, found, phrase)

    def _found(self, text: str | None) -> str | None:
        """The first match in the answer (its first group when the pattern has one); None without a match."""
        match = self.pattern.search(text) if text else None
        if match is None:
            return None
        found = match.group(1) if self.pattern.groups else match.group(0)
        return found if found else None

    def check_gold(self, gold: Any) -> str | None:
        return None if normalize_answer(gold) else "is empty"

    def form(self, completion: str) -> bool:
        text, phrase = answer_text(completion)
        return phrase and bool(text) and self._found(text) is not None
