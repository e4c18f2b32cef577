"""The user's own data as a task, without code: a JSONL file of questions and gold answers.

::

    task: {name: jsonl, path: my.jsonl, question: q, answer: a, verifier: exact}

``path`` is one JSONL file, or a directory holding ``train.jsonl`` and optionally ``test.jsonl`` and
``validation.jsonl``. Splits missing from it are carved off (seeded) from what there is: from one file,
``test_fraction`` for test and ``validation_fraction`` for validation; from a directory without
``validation.jsonl``, validation from train; without ``test.jsonl``, test from train too
(:mod:`rlvr.tasks.jsonl_lines`). Splits are disjoint by normalised question text as everywhere in rlvr
(:mod:`rlvr.tasks.splits`): a question repeated inside a file is kept once (the drops are counted and
said), and a test file is kept whole while validation and train lose the questions an earlier split holds.

``verifier`` decides "correct" (:mod:`rlvr.verifiers.answers`): ``math``, ``exact``, ``choice``,
``regex:PATTERN`` or the user's ``module:function`` / ``file.py:function`` checker. The prompt states the
answer line the verifier reads, so the ``format`` and ``correctness`` rewards work unchanged
(:mod:`rlvr.tasks.answer_line`). ``template`` shows an item (``{question}``, ``{choices}`` and any other
field of the line); ``shots`` exemplars are drawn once from the train split and taken out of it.
"""

from __future__ import annotations

import json
import random
import string
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError
from rlvr.jsonl import iter_jsonl
from rlvr.tasks.answer_line import AnswerLineTask, Shot, instruction_for, render_messages, render_plain
from rlvr.tasks.base import TASKS, check_split
from rlvr.tasks.jsonl_lines import Line, carve_lines, is_blank, options_of, scalar_fields, split_files
from rlvr.tasks.prompts import check_shots
from rlvr.tasks.splits import disjoint_rows, normalize_question
from rlvr.verifiers.answers import Verdict, choice_letter
from rlvr.verifiers.checker import CheckerVerifier
from rlvr.verifiers.select import build_verifier

#: Files whose repeated questions were already reported in this process (each is said once).
_REPORTED: set[str] = set()


@TASKS.register("jsonl")
@dataclass
class JsonlTask(AnswerLineTask):
    """Questions and gold answers from the user's JSONL file(s), judged by the chosen verifier."""

    #: A JSONL file, or a directory with train.jsonl and optionally test.jsonl and validation.jsonl.
    path: str = ""
    #: The field holding the question.
    question: str = "question"
    #: The field holding the gold answer.
    answer: str = "answer"
    #: math, exact, choice, regex:PATTERN, module:function or path/to/file.py:function.
    verifier: str = "exact"
    #: How an item is shown: {question}, {choices} (with the choices option) and any field of the line.
    template: str = "Question: {question}"
    #: The text before the exemplars and the item (None: one sentence stating the answer line the verifier reads).
    instruction: str | None = None
    #: choice: the field holding the options (a list), shown as lettered lines by {choices}; a gold equal to
    #: one option's text is read as that option's letter.
    choices: str | None = None
    #: A field with a worked solution, shown in exemplars before their answer line (None: answer line only).
    reasoning: str | None = None
    #: Exemplars before each item (0-8), drawn once from the train split (seeded) and taken out of it.
    shots: int = 0
    #: Render prompts as chat messages (for instruct models with a chat template).
    chat: bool = False
    #: Share of the lines held out as test when there is no test.jsonl.
    test_fraction: float = 0.2
    #: Share of the lines held out as validation when there is no validation.jsonl.
    validation_fraction: float = 0.1
    #: Seed of the carving and of the exemplar draw.
    seed: int = 42
    #: Keep only the first N rows of a split (None: all).
    limit: int | None = None

    name = "jsonl"

    def __post_init__(self) -> None:
        if not self.path:
            raise RlvrError("task jsonl needs a path: a JSONL file or a directory with train.jsonl "
                            "(e.g. task: {name: jsonl, path: my.jsonl}).")
        check_shots(self.shots)
        for name in ("test_fraction", "validation_fraction"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
                raise RlvrError(f"jsonl {name} must lie strictly between 0 and 1, got {value!r}.")
        if self.limit is not None and self.limit < 1:
            raise RlvrError("jsonl limit must be a positive integer.")
        if self.choices and self.verifier != "choice":
            raise RlvrError("jsonl choices shows lettered options for verifier 'choice'; set verifier: choice.")
        fields = [f for _, f, _, _ in string.Formatter().parse(self.template) if f is not None]
        if "question" not in fields and self.question not in fields:
            raise RlvrError(f"jsonl template {self.template!r} never shows the question: put {{question}} in it.")
        if "choices" in fields and not self.choices:
            raise RlvrError("jsonl template uses {choices}: set the choices option to the field holding the options.")
        self._verifier = build_verifier(self.verifier)

    # ----------------------------------------------------------------------------- data

    def load(self, split: str) -> Any:
        from datasets import Dataset

        check_split(split)
        lines = self._splits()[split]
        if self.limit is not None:
            lines = lines[: self.limit]
        if not lines:
            raise RlvrError(f"jsonl split '{split}' is empty ({self._sizes()}); {self._empty_hint(split)}")
        shots = self._shots()
        scalar = self._scalar_fields()
        records = []
        for line in lines:
            text = self._render(line)
            prompt: Any = (render_messages(self._instruction(), shots, text) if self.chat
                           else render_plain(self._instruction(), shots, text))
            row = {"id": f"{line.source}-{line.number}", "prompt": prompt, "question": line.question,
                   "final_answer": line.gold, "record": json.dumps(line.record, ensure_ascii=False)}
            row.update({name: line.record.get(name) for name in scalar})
            records.append(row)
        return Dataset.from_list(records)

    def _splits(self) -> dict[str, list[Line]]:
        cache = self.__dict__.setdefault("_cache", {})
        if "splits" not in cache:
            files = split_files(self.path)
            lines = {split: self._read(path) for split, path in files.items()}
            carved = carve_lines(lines, self.seed, self.test_fraction, self.validation_fraction)
            cache["splits"], dropped = disjoint_rows(carved, lambda line: line.question)
            duplicates = self.__dict__.get("_duplicates", {})
            self.dropped_overlaps = {**dropped, "duplicates within files": sum(duplicates.values())}
            used = cache["splits"]["train"]
            cache["exemplars"] = []
            if self.shots:
                order = list(range(len(used)))
                random.Random(f"exemplars:{self.seed}").shuffle(order)
                picked = sorted(order[: self.shots])
                cache["exemplars"] = [used[i] for i in picked]
                cache["splits"]["train"] = [line for i, line in enumerate(used) if i not in set(picked)]
        return cache["splits"]

    def _read(self, path: Path) -> list[Line]:
        """The file's lines, checked (both fields on every line, gold of the verifier's form), repeats dropped."""
        records = [(number, record) for number, record in iter_jsonl(path)]
        if not records:
            raise RlvrError(f"{path} has no records.")
        for field in (self.question, self.answer) + ((self.choices,) if self.choices else ()):
            lacking = [number for number, record in records if is_blank(record.get(field))]
            if lacking:
                example = records[[n for n, _ in records].index(lacking[0])][1]
                raise RlvrError(
                    f"{path}:{lacking[0]}: no field '{field}' (the first of {len(lacking)} line(s) lacking it; "
                    f"that line has: {', '.join(example) or 'no fields'}). Set task.{self._option_of(field)} "
                    "to the field that holds it.")
        lines, seen, repeats, first_repeat = [], set(), 0, None
        for number, record in records:
            question = str(record[self.question]).strip()
            key = normalize_question(question)
            if key in seen:
                repeats += 1
                first_repeat = first_repeat or number
                continue
            seen.add(key)
            lines.append(Line(path.stem, number, record, question, self._gold(path, number, record)))
        if repeats:
            self.__dict__.setdefault("_duplicates", {})[str(path)] = repeats
        if repeats and str(path.resolve()) not in _REPORTED:
            _REPORTED.add(str(path.resolve()))
            print(f"rlvr: {path}: {repeats} line(s) repeat an earlier question (first at line {first_repeat}); "
                  "dropped, each question kept once.", file=sys.stderr, flush=True)
        return lines

    def _gold(self, path: Path, number: int, record: Mapping[str, Any]) -> str:
        gold = record[self.answer]
        if self.choices and choice_letter(str(gold)) is None:
            options = options_of(record.get(self.choices))
            texts = [str(o).strip() for o in options]
            if str(gold).strip() in texts:
                gold = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[texts.index(str(gold).strip())]
        gold_text = gold if isinstance(gold, str) else json.dumps(gold)
        problem = self._verifier.check_gold(gold_text)
        if problem:
            raise RlvrError(f"{path}:{number}: answer {gold_text!r} {problem} (verifier {self.verifier}).")
        return gold_text.strip()

    def _sizes(self) -> str:
        splits = self.__dict__.get("_cache", {}).get("splits", {})
        return ", ".join(f"{split} {len(splits.get(split, []))}" for split in ("train", "validation", "test"))

    def _empty_hint(self, split: str) -> str:
        if split == "train" and self.shots:
            return "the exemplars (shots) took the rest: add lines or lower shots."
        return "add lines, or give the split its own file (a directory with train.jsonl, test.jsonl)."

    def _option_of(self, field: str) -> str:
        return {self.question: "question", self.answer: "answer"}.get(field, "choices")

    # ----------------------------------------------------------------------------- prompts

    def _instruction(self) -> str:
        return self.instruction if self.instruction is not None else instruction_for(self._verifier.answer_form)

    def _render(self, line: Line) -> str:
        values = {k: (v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)) for k, v in line.record.items()}
        values["question"] = line.question
        if self.choices:
            options = options_of(line.record.get(self.choices))
            values["choices"] = "\n".join(f"{'ABCDEFGHIJKLMNOPQRSTUVWXYZ'[i]}. {o}" for i, o in enumerate(options))
        try:
            return self.template.format_map(values)
        except KeyError as error:
            raise RlvrError(f"{line.source}.jsonl:{line.number}: the template names field {error} that the line "
                            "lacks.") from None
        except (ValueError, IndexError) as error:
            raise RlvrError(f"jsonl template {self.template!r} is not a valid format string: {error}.") from None

    def _shots(self) -> list[Shot]:
        self._splits()
        shots = []
        for line in self.__dict__["_cache"]["exemplars"]:
            reasoning = str(line.record.get(self.reasoning) or "") if self.reasoning else ""
            shots.append(Shot(self._render(line), reasoning, line.gold))
        return shots

    def _scalar_fields(self) -> list[str]:
        """The fields of every split's lines that become columns (:func:`scalar_fields`), found once."""
        cache = self.__dict__["_cache"]
        if "scalar" not in cache:
            lines = [line for split in cache["splits"].values() for line in split]
            cache["scalar"] = scalar_fields(lines)
        return cache["scalar"]

    # ----------------------------------------------------------------------------- judging

    @property
    def single_gold_answer(self) -> bool:
        """False with the user's checker: it judges answers its own way, so matching the gold text says nothing."""
        return not isinstance(self._verifier, CheckerVerifier)

    def verify(self, text: str, row: Mapping[str, Any]) -> Verdict:
        record = row.get("record")
        try:
            original = json.loads(record) if isinstance(record, str) else dict(row)
        except ValueError:
            original = dict(row)
        gold = row.get("final_answer") if row.get("final_answer") is not None else original.get(self.answer)
        return self._verifier.verify(text, gold, original)

    def well_formed(self, text: str) -> bool:
        return self._verifier.form(text)
