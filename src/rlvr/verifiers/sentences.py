"""Splitting text into sentences, judging whether each is a well-formed one, and spotting negation.

Everything here is a single left-to-right pass with simple, non-backtracking
regexes, so a megabyte of model output costs milliseconds, not minutes.

A *unit* is a sentence of running text, or a whole line that is a list item,
a bullet, a heading or a table row. Keywords count only inside well-formed
sentences: running text, ending in ``.``, ``!`` or ``?``, starting with a
capital letter or a digit, of a sensible length, containing at least one
function word ("the", "was", "with", ...), and not mostly keywords.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Lines that are list items, bullets, headings or table rows: their words are not running text.
_LIST_LINE = re.compile(r"[ \t]*(?:[-*+•·][ \t]|[>#|]|\d{1,3}[.)][ \t]|[A-Za-z][.)][ \t])")
#: Where a sentence ends: terminal punctuation followed by space, a closing quote/bracket, or the end.
_SENTENCE_END = re.compile(r"[.!?]+(?=[\s\"')\]]|$)")
#: Words and the punctuation that separates clauses.
_TOKEN = re.compile(r"[^\W_]+|[,;:()]")
_ABBREVIATIONS = {"dr", "mr", "mrs", "ms", "vs", "etc", "eg", "ie", "approx", "st", "fig", "e", "i", "g"}

#: Closed-class English words: a sentence without any is a label or a list, not a sentence.
FUNCTION_WORDS = frozenset(
    """a an the this that these those his her its their our your my he she it they we i you him them
    is are was were be been being has have had do does did will would can could should may might must shall
    of in on at to for with from by about as into after before during over under between through without
    within against since until because although while if when which who whom whose where than then so
    and or but nor not no""".split()
)

#: Cues before a mention that negate it ("no medication", "denies chest pain", "without therapy").
NEGATION_BEFORE = frozenset(
    "no not without never denies denied deny denying negative none neither nor absent absence free "
    "declined declines refused refuses withheld".split()
)
#: Cues shortly after a mention that negate it ("medication was not given", "therapy was withheld").
NEGATION_AFTER = frozenset("not never withheld declined refused excluded unnecessary unlikely".split())
#: Words that end a negation's reach ("no fever, but treatment was started").
SCOPE_ENDS = frozenset(
    "but however although though except yet which who whereas while so therefore thus then since because "
    "after before until".split()
)
NEGATION_WINDOW_BEFORE = 5
NEGATION_WINDOW_AFTER = 3


@dataclass
class Unit:
    """A sentence (or a list line) as lower-case words, with its clause number per word."""

    text: str
    words: list[str] = field(default_factory=list)
    #: clause[i]: how many clause marks (, ; : parentheses) precede word i in the unit.
    clause: list[int] = field(default_factory=list)
    #: clause[i] counting only ; : and parentheses (commas join list items and do not end negation).
    hard_clause: list[int] = field(default_factory=list)
    is_list_line: bool = False
    ends_sentence: bool = False


def split_units(text: str) -> list[Unit]:
    """The units of ``text`` in order: list lines whole, running text split into sentences."""
    units: list[Unit] = []
    paragraph: list[str] = []
    for line in text.replace("\r", "\n").split("\n"):
        stripped = line.strip()
        if not stripped or _LIST_LINE.match(line):
            units.extend(_sentences(" ".join(paragraph)))
            paragraph = []
            if stripped:
                units.append(_unit(stripped, is_list_line=True, ends_sentence=False))
            continue
        # A line continues the paragraph only when it reads as a continuation (starts lower-case);
        # otherwise a label line such as "Diagnosis: pneumonia" would glue onto the next sentence.
        if paragraph and not stripped[0].islower():
            units.extend(_sentences(" ".join(paragraph)))
            paragraph = []
        paragraph.append(stripped)
    units.extend(_sentences(" ".join(paragraph)))
    return units


def _sentences(paragraph: str) -> list[Unit]:
    units = []
    start = 0
    for end in _SENTENCE_END.finditer(paragraph):
        before = paragraph[max(start, end.start() - 8) : end.start()].split()
        last = re.sub(r"[^a-z]", "", before[-1].lower()) if before else ""
        if end.group() == "." and last in _ABBREVIATIONS:
            continue
        piece = paragraph[start : end.end()].strip()
        if piece:
            units.append(_unit(piece, is_list_line=False, ends_sentence=True))
        start = end.end()
    rest = paragraph[start:].strip()
    if rest:
        units.append(_unit(rest, is_list_line=False, ends_sentence=False))
    return units


def _unit(text: str, is_list_line: bool, ends_sentence: bool) -> Unit:
    unit = Unit(text=text, is_list_line=is_list_line, ends_sentence=ends_sentence)
    clause = hard = 0
    for token in _TOKEN.findall(text.lower().replace("n't", " not").replace("n’t", " not")):
        if token in ",;:()":
            clause += 1
            hard += token != ","
            continue
        unit.words.append(token)
        unit.clause.append(clause)
        unit.hard_clause.append(hard)
    return unit


def sentence_problem(unit: Unit, min_words: int, max_words: int) -> str | None:
    """Why ``unit`` is not a well-formed sentence, or None when it is (keyword share is checked by the caller)."""
    if unit.is_list_line:
        return "list, bullet or heading line"
    if not unit.ends_sentence:
        return "no closing . ! or ?"
    if len(unit.words) < min_words:
        return f"fewer than {min_words} words"
    if len(unit.words) > max_words:
        return f"more than {max_words} words"
    first = next((c for c in unit.text if c.isalnum()), "")
    if not (first.isupper() or first.isdigit()):
        return "does not start with a capital letter or digit"
    if not any(word in FUNCTION_WORDS for word in unit.words):
        return "no function words (a list of terms, not a sentence)"
    return None


def is_negated(unit: Unit, start: int, end: int) -> bool:
    """Whether the mention spanning words ``start:end`` of ``unit`` is negated (a NegEx-style window)."""
    words, hard = unit.words, unit.hard_clause
    for i in range(start - 1, max(-1, start - 1 - NEGATION_WINDOW_BEFORE), -1):
        if hard[i] != hard[start] or words[i] in SCOPE_ENDS:
            break
        if words[i] in NEGATION_BEFORE:
            return True
    for i in range(end, min(len(words), end + NEGATION_WINDOW_AFTER)):
        if unit.clause[i] != unit.clause[end - 1] or words[i] in SCOPE_ENDS:
            break
        if words[i] in NEGATION_AFTER:
            return True
    return False


def comma_run_words(unit: Unit, is_keyword: list[bool], min_items: int = 3, max_item_words: int = 3) -> set[int]:
    """Word indexes of keywords written as an inline list: ``min_items``+ comma-separated terms in a row.

    In "we discussed the symptoms, diagnosis, treatment and medication" the
    short middle items ("diagnosis") hold a keyword each, the item before the run
    ends with one ("symptoms") and the item after starts with one, after an
    optional and/or ("treatment"): four listed terms, none used in a sentence.
    """
    items: list[list[int]] = []
    for index, clause in enumerate(unit.clause):
        if not items or unit.clause[items[-1][0]] != clause:
            items.append([])
        items[-1].append(index)
    flagged: set[int] = set()
    position = 0
    while position < len(items):
        end = position
        while end < len(items) and len(items[end]) <= max_item_words and any(is_keyword[i] for i in items[end]):
            end += 1
        if end == position:
            position += 1
            continue
        run = [i for item in items[position:end] for i in item if is_keyword[i]]
        count = end - position
        if position > 0 and is_keyword[items[position - 1][-1]]:
            run.append(items[position - 1][-1])
            count += 1
        if end < len(items):
            after = [i for i in items[end] if unit.words[i] not in ("and", "or")]
            if after and is_keyword[after[0]]:
                run.append(after[0])
                count += 1
        if count >= min_items:
            flagged.update(run)
        position = end
    return flagged
