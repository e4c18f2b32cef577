"""The 8 built-in GSM8K-style exemplars (written for rlvr; same topics and answers as the published recipe),
and exemplars read from a JSONL file."""

from __future__ import annotations

from pathlib import Path

from rlvr.errors import RlvrError
from rlvr.jsonl import read_jsonl
from rlvr.tasks.prompts import Exemplar

#: The fields of an exemplar file's lines.
FILE_FIELDS = ("question", "reasoning", "answer")

BUILTIN_EXEMPLARS = [
    Exemplar(
        "Tom has 3 boxes of pencils. Each box holds 15 pencils. How many pencils does Tom have?",
        "Each box holds 15 pencils and there are 3 boxes, so Tom has 3 * 15 = 45 pencils.",
        "45",
    ),
    Exemplar(
        "A fruit stand has 18 apples and twice as many oranges as apples. After selling 4 oranges, "
        "how many pieces of fruit are left?",
        "There are 2 * 18 = 36 oranges. After selling 4, 36 - 4 = 32 oranges are left. "
        "Together with the apples that is 18 + 32 = 50 pieces of fruit.",
        "50",
    ),
    Exemplar(
        "Maria had 52 marbles. She gave 8 to her sister and 5 to her cousin. How many marbles does she have now?",
        "She gave away 8 + 5 = 13 marbles. She has 52 - 13 = 39 marbles left.",
        "39",
    ),
    Exemplar(
        "A book has 96 pages. Ben reads 8 pages every day. How many days does it take him to finish the book?",
        "Ben needs 96 / 8 = 12 days to read all the pages.",
        "12",
    ),
    Exemplar(
        "Pencils are sold in packs of 4. A teacher buys 7 packs. How many pencils does she buy?",
        "Each pack has 4 pencils, so 7 packs have 7 * 4 = 28 pencils.",
        "28",
    ),
    Exemplar(
        "Lena baked 30 cookies. She ate 6 and shared the rest equally among 3 friends. How many cookies did each friend get?",
        "After eating 6 she had 30 - 6 = 24 cookies. Each friend got 24 / 3 = 8 cookies.",
        "8",
    ),
    Exemplar(
        "A classroom has 4 rows of desks with 6 desks in each row. 18 students sit down, one at each desk. "
        "How many desks are empty?",
        "There are 4 * 6 = 24 desks. With 18 students seated, 24 - 18 = 6 desks are empty.",
        "6",
    ),
    Exemplar(
        "A toy costs $20. The store gives a 25% discount. How much does the toy cost after the discount?",
        "The discount is 20 * 25 / 100 = 5 dollars. The toy costs 20 - 5 = 15 dollars.",
        "15",
    ),
]


def load_exemplars(path: str | Path) -> list[Exemplar]:
    """Exemplars from a JSONL file, one ``{"question", "reasoning", "answer"}`` object per line, in file order.

    Texts are used as written: each renders as ``Question: {question}`` / ``Solution: Let's think step by step.
    {reasoning}`` / ``#### The final answer is {answer}``.
    """
    records = read_jsonl(path, required=FILE_FIELDS)
    exemplars = []
    for number, record in enumerate(records, start=1):
        values = []
        for key in FILE_FIELDS:
            value = record[key]
            if isinstance(value, bool) or not isinstance(value, (str, int, float)) or not str(value).strip():
                raise RlvrError(f"{path}: exemplar {number}: '{key}' must be non-empty text (or a number for answer).")
            if key != "answer" and not isinstance(value, str):
                raise RlvrError(f"{path}: exemplar {number}: '{key}' must be text.")
            values.append(str(value))
        exemplars.append(Exemplar(*values))
    return exemplars
