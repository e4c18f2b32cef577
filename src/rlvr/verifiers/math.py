"""The GSM8K-style answer line: find it, parse its one number, compare.

The rules (the same for training rewards, evaluation and the CLI):

* The answer line is the **first** line that starts with ``####`` (after
  optional spaces). Everything after it is ignored, so a model cannot hedge by
  writing several answer lines.
* After ``####`` and an optional ``The final answer is`` the line must hold
  exactly one number: optional sign, optional currency (``$ € £``), digits with
  optional thousands separators (a comma followed by exactly three digits), an
  optional decimal part, or a simple fraction ``a/b``; then optionally ``%``,
  unit words and a trailing period. Anything else (``5 or 6``, ``3 + 2 = 5``,
  ``x = 5``) has no single answer and parses to ``None``.
* Markup that chat models put around an answer is read through: Markdown
  emphasis and code (``**42**``, `` `42` ``), LaTeX ``\\boxed{42}``, ``\\(42\\)``,
  ``\\$`` and the Unicode minus sign (``−7``).
* Ground truth is parsed with the same number grammar (``1,000`` is 1000).

Every function is linear in the input size: the scan for the answer line is a
plain line walk, and the regexes have no nested quantifiers, so a 1 MB
completion costs milliseconds, never catastrophic backtracking.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

TOLERANCE = 1e-3
ANSWER_MARK = "####"
ANSWER_PHRASE = "The final answer is"

# The digits of a number: plain, with comma groups (checked below), with a decimal part, or a fraction.
# It starts with a digit or '.', so the regex engine skips other text at C speed.
# Digits and commas as one character class (a C loop; a (?:,\d+)* group costs a step per comma on
# "1,1,1,..."), ending in a digit; _GROUPED then checks the comma grouping.
_CORE = re.compile(r"\d(?:[\d,]*+(?<=\d)|[\d,]*\d)?(?:\.\d+)?(?:/\d+)?|\.\d+")
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:/\d+)?|\.\d+")
# What may stand right before the digits: sign, currency, sign, each optional, single spaces between.
_PREFIX = re.compile(r"([+-]?) ?([$€£]?) ?([+-]?)$")
_PHRASE = re.compile(r"\s*+the\s++final\s++answer\s++is\s*+:?", re.IGNORECASE)
# What may surround the number: words (units, a short lead-in), %, currency, colon; a final
# period is stripped first. A single character class, so matching cannot backtrack.
_ALLOWED_AROUND = re.compile(r"[A-Za-z\u00C0-\u024F'’\-%$€£:\s]*")
_ANSWER_LINE = re.compile(r"^[ \t]*+####", re.MULTILINE)
# Markup around an answer: \boxed{...} without nested braces keeps its content; the rest is dropped.
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_MARKUP = re.compile(r"\*+|`+|\\[()\[\]]")
_NOT_A_NUMBER = object()


@dataclass(frozen=True)
class AnswerLine:
    """The first ``####`` line of a completion and what it says."""

    text: str  # the whole line, stripped
    value: float | None  # the one number on it, or None when there is not exactly one
    has_phrase: bool  # written as '#### The final answer is N'
    has_reasoning_before: bool  # a non-empty line precedes it


def find_answer_line(text: str) -> tuple[str, str] | None:
    """Split ``text`` at its first ``####`` line: (text before it, the line). None if absent."""
    match = _ANSWER_LINE.search(text)
    if match is None:
        return None
    end = text.find("\n", match.start())
    line = text[match.start() : end if end != -1 else len(text)]
    return text[: match.start()], line.strip()


def parse_number(text: str) -> float | None:
    """The value of ``text`` when it holds exactly one number and nothing but units around it."""
    if not isinstance(text, str):
        return None
    return _parse_plain(strip_markup(text))


def _parse_plain(text: str) -> float | None:
    """:func:`parse_number` of text already without markup."""
    found: list[tuple[int, int, float | None]] = []
    for match in _CORE.finditer(text):
        if match.start() and (text[match.start() - 1].isalnum() or text[match.start() - 1] == "_"):
            continue  # digits inside a word (H2O) are not a number; the leftover digits reject the line
        found.append(_number_at(text, match))
        if len(found) > 1:
            return None
    if not found:
        return None
    start, end, value = found[0]
    if value is None:
        return None
    around = (text[:start] + " " + text[end:]).rstrip()
    around = around[:-1] if around.endswith(".") else around
    if _ALLOWED_AROUND.fullmatch(around) is None:
        return None
    return value


def strip_markup(text: str) -> str:
    """``text`` without the Markdown/LaTeX wrapping of an answer, with ASCII minus signs."""
    # Each pass only where its characters occur: a 1 MB answer line costs a few memchr scans.
    if "\u2212" in text:
        text = text.replace("\u2212", "-")
    if "\\" in text:
        text = text.replace("\\$", "$")
        if "\\boxed{" in text:
            text = _BOXED.sub(r"\1", text)
    if "*" in text or "`" in text or "\\" in text:
        text = _MARKUP.sub("", text)
    return text


def _number_at(text: str, core: re.Match[str]) -> tuple[int, int, float | None]:
    """(start, end, value) of the number whose digits are ``core``, with its sign and currency."""
    window_start = max(0, core.start() - 5)
    prefix = _PREFIX.search(text, window_start, core.start())
    start = prefix.start() if prefix else core.start()
    if start and text[start - 1] not in " \t:":
        start = core.start()  # the sign belongs to something else (5-6): just the digits
        prefix = None
    signs = (prefix.group(1) + prefix.group(3)) if prefix else ""
    digits = core.group()
    if len(signs) > 1 or _GROUPED.fullmatch(digits) is None:
        return start, core.end(), None
    return start, core.end(), _digits_value(digits, negative=signs == "-")


def _digits_value(digits: str, negative: bool) -> float | None:
    try:
        if "/" in digits:
            numerator, denominator = digits.split("/")
            if float(denominator) == 0:
                return None
            value = float(numerator) / float(denominator)
        else:
            value = float(digits.replace(",", ""))
    except (ValueError, OverflowError):
        return None
    if not math.isfinite(value):
        return None
    return -value if negative else value


def parse_answer_line(line: str) -> tuple[float | None, bool]:
    """(value, has_phrase) for a line starting with ``####``."""
    rest = strip_markup(line.strip()[len(ANSWER_MARK) :])
    phrase = _PHRASE.match(rest)
    if phrase:
        rest = rest[phrase.end() :]
    return _parse_plain(rest), phrase is not None


def read_answer(completion_text: str) -> AnswerLine | None:
    """The answer line of a completion, parsed; None when it has no ``####`` line."""
    if not isinstance(completion_text, str):
        return None
    found = find_answer_line(completion_text)
    if found is None:
        return None
    before, line = found
    value, has_phrase = parse_answer_line(line)
    return AnswerLine(
        text=line,
        value=value,
        has_phrase=has_phrase,
        has_reasoning_before=bool(before.strip()),
    )


def parse_gold(gold: object) -> float | None:
    """Ground truth as a number: ``18``, ``"1,000"``, ``"#### 18"`` or a full GSM8K solution."""
    if isinstance(gold, bool):
        return None
    if isinstance(gold, (int, float)):
        return float(gold) if math.isfinite(gold) else None
    if not isinstance(gold, str):
        return None
    found = find_answer_line(gold)
    if found is not None:
        return parse_answer_line(found[1])[0]
    return parse_number(gold.strip())


def is_correct(value: float | None, gold: float | None, tolerance: float = TOLERANCE) -> bool:
    """Whether an extracted answer equals the ground truth within ``tolerance`` (absolute)."""
    if value is None or gold is None:
        return False
    return abs(value - gold) <= tolerance


def format_answer(value: float) -> str:
    """Render a number the way the exemplars do: integers without a decimal point."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.6g}"
