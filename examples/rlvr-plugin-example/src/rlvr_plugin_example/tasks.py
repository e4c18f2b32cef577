"""A whole task: put the letters of a short word in alphabetical order ("sort the letters of 'cab'": abc).

It generates its items (no data file), keeps train, validation and test disjoint by word, and is judged
by rlvr's exact-answer verifier on the ``#### The final answer is X`` line, so rlvr's ``format`` and
``correctness`` rewards, evaluation, health and reports all work on it unchanged.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlvr.errors import RlvrError
from rlvr.tasks.answer_line import AnswerLineTask, Shot, instruction_for, render_plain
from rlvr.tasks.base import check_split
from rlvr.verifiers.answers import ExactVerifier, Verdict


@dataclass
class LetterSortTask(AnswerLineTask):
    """Sort the letters of a word of ``letters`` distinct letters (options are the dataclass fields)."""

    letters: int = 3
    train_size: int = 500
    validation_size: int = 50
    test_size: int = 100
    shots: int = 1
    seed: int = 0
    limit: int | None = None

    name = "letter-sort"

    def __post_init__(self) -> None:
        if not 2 <= self.letters <= 6:
            raise RlvrError("letter-sort letters must be from 2 to 6.")

    def load(self, split: str) -> Any:
        from datasets import Dataset

        check_split(split)
        words = self._words()[split][: self.limit]
        verifier = ExactVerifier()
        shots = [Shot(f"Question: Sort the letters of '{w}' alphabetically.", "", "".join(sorted(w)))
                 for w in self._words()["exemplars"][: self.shots]]
        rows = []
        for index, word in enumerate(words):
            text = f"Question: Sort the letters of '{word}' alphabetically."
            rows.append({"id": f"letter-sort-{split}-{index}", "question": text,
                         "prompt": render_plain(instruction_for(verifier.answer_form), shots, text),
                         "final_answer": "".join(sorted(word))})
        return Dataset.from_list(rows)

    def _words(self) -> dict[str, list[str]]:
        """Distinct words drawn once and dealt to exemplars, test, validation, train: no word in two splits."""
        pool = ["".join(p) for p in itertools.permutations("abcdefghij", self.letters)]
        random.Random(self.seed).shuffle(pool)
        sizes = {"exemplars": 8, "test": self.test_size, "validation": self.validation_size, "train": self.train_size}
        if sum(sizes.values()) > len(pool):
            raise RlvrError(f"letter-sort: only {len(pool)} words of {self.letters} letters; lower the split sizes.")
        out, start = {}, 0
        for name, size in sizes.items():
            out[name], start = pool[start : start + size], start + size
        return out

    def verify(self, text: str, row: Mapping[str, Any]) -> Verdict:
        return ExactVerifier().verify(text, row.get("final_answer"), row)

    def well_formed(self, text: str) -> bool:
        return ExactVerifier().form(text)
