"""GSM8K: grade-school math word problems, answered as ``#### The final answer is N``.

Data comes from the hub (``openai/gsm8k``, config ``main``) or from a local
directory holding ``train.jsonl`` / ``test.jsonl`` (or a single JSONL file) in
GSM8K's format: ``question``, and ``answer`` ending with a ``#### N`` line.

Splits: ``train`` and ``validation`` are a seeded 90/10 split of GSM8K's train
split; ``test`` is GSM8K's test split, reserved for evaluation. A question that
occurs in more than one split (normalised text) is kept in test, else in
validation, and dropped from the others; ``dropped_overlaps`` counts the drops.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError
from rlvr.jsonl import read_jsonl
from rlvr.tasks.base import TASKS, check_split
from rlvr.tasks.exemplars import BUILTIN_EXEMPLARS, load_exemplars
from rlvr.tasks.numeric import NumericAnswerTask
from rlvr.tasks.prompts import (
    STOP_PATTERNS,
    Exemplar,
    check_prompt_format,
    check_shot_options,
    choose_exemplars,
    render_chat,
    render_prompt,
    shots_for_row,
)
from rlvr.tasks.splits import disjoint_rows
from rlvr.verifiers.math import find_answer_line

HUB_ID = "openai/gsm8k"
_CALCULATOR = re.compile(r"<<[^<>]*>>")


def strip_calculator(text: str) -> str:
    """Remove GSM8K's calculator annotations: ``48/2 = <<48/2=24>>24`` -> ``48/2 = 24``."""
    return _CALCULATOR.sub("", text)


def split_solution(answer: str) -> tuple[str, str]:
    """(reasoning without annotations, final answer string) of a GSM8K reference solution."""
    found = find_answer_line(answer)
    if found is None:
        raise ValueError("no '#### N' line")
    before, line = found
    final = line[4:].strip()
    return strip_calculator(before).strip(), final


@TASKS.register("gsm8k")
@dataclass
class GSM8KTask(NumericAnswerTask):
    """GSM8K with the published recipe's k-shot chain-of-thought prompt."""

    #: Hub dataset id, a directory with train.jsonl/test.jsonl, or one JSONL file.
    data: str = HUB_ID
    #: Number of exemplars before each question (0-8).
    shots: int = 8
    #: Exemplar counts for train and validation rows, cycled row by row (e.g. [0, 1, 2]); test rows keep `shots`.
    #: None: every row gets `shots`.
    shots_mix: list[int] | None = None
    #: Where exemplars come from: "builtin" (the 8 written for rlvr), "train" (drawn from the train split), or a
    #: JSONL file with question, reasoning, answer per line (used in file order).
    exemplars: str = "builtin"
    #: "per_row": each row draws its own exemplars (seeded) when shots < 8; "fixed": every row gets the first
    #: `shots` exemplars in order (the published prompt, built once for the whole dataset).
    exemplar_order: str = "per_row"
    #: "rlvr": exemplars and question as written; "published": rendered as the published code did (reasoning lines
    #: joined with '. ', a period appended, '..' collapsed, the question ending in "step by step. " with a space).
    prompt_format: str = "rlvr"
    #: Seed for exemplar sampling and the train/validation split.
    seed: int = 42
    #: Share of GSM8K's train split held out as validation.
    validation_fraction: float = 0.1
    #: Render prompts as chat messages (for instruct models with a chat template).
    chat: bool = False
    #: Keep only the first N rows of a split (None: all).
    limit: int | None = None

    name = "gsm8k"
    default_rewards = [{"name": "format", "weight": 0.5}, {"name": "correctness", "weight": 1.0}]
    stop_patterns = STOP_PATTERNS

    def __post_init__(self) -> None:
        self.shots_mix = check_shot_options(self.shots, self.shots_mix, self.exemplar_order)
        check_prompt_format(self.prompt_format)
        if self.chat and self.prompt_format == "published":
            raise RlvrError("gsm8k prompt_format 'published' is a plain-text prompt; it cannot be combined with chat: true.")
        if self.exemplars not in ("builtin", "train") and not Path(str(self.exemplars)).expanduser().is_file():
            raise RlvrError(
                f"gsm8k exemplars must be 'builtin', 'train' or a JSONL file (question, reasoning, answer per line); "
                f"no such file: {self.exemplars!r}."
            )
        if not 0 < self.validation_fraction < 1:
            raise RlvrError("gsm8k validation_fraction must lie strictly between 0 and 1.")
        if self.limit is not None and self.limit < 1:
            raise RlvrError("gsm8k limit must be a positive integer.")

    def load(self, split: str) -> Any:
        from datasets import Dataset

        rows = self.rows(split)
        if self.limit is not None:
            rows = rows[: self.limit]
        pool = self._exemplar_pool()
        records = [self._record(index, row, split, pool) for index, row in rows]
        if not records:
            hint = " (every question in it is also in the test split: a single file serves every split)" if split != "test" and Path(self.data).expanduser().is_file() else ""
            raise RlvrError(f"gsm8k split '{split}' is empty{hint}.")
        return Dataset.from_list(records)

    def rows(self, split: str) -> list[tuple[int, dict[str, Any]]]:
        """(index in the source split, raw row) for ``split``, before any limit, without cross-split duplicates."""
        check_split(split)
        if split == "test":  # kept whole: it needs no other split
            return list(enumerate(self._source("test")))
        cache = self.__dict__.setdefault("_cache", {})
        if "splits" not in cache:
            cache["splits"], self.dropped_overlaps = disjoint_rows(self._raw_splits(), lambda pair: pair[1]["question"])
        return cache["splits"][split]

    def _raw_splits(self) -> dict[str, list[tuple[int, dict[str, Any]]]]:
        source = self._source("train")
        order = list(range(len(source)))
        random.Random(self.seed).shuffle(order)
        cut = max(1, round(len(order) * self.validation_fraction))
        try:
            test = list(enumerate(self._source("test")))
        except RlvrError:  # a directory without test.jsonl: nothing to keep apart from
            test = []
        return {
            "test": test,
            "validation": [(i, source[i]) for i in sorted(order[:cut])],
            "train": [(i, source[i]) for i in sorted(order[cut:])],
        }

    def _record(self, index: int, row: dict[str, Any], split: str, pool: list[Exemplar]) -> dict[str, Any]:
        try:
            _, final = split_solution(row["answer"])
        except (KeyError, TypeError, ValueError):
            raise RlvrError(f"gsm8k row {index} of split '{split}' has no 'answer' ending in a '#### N' line.") from None
        question = str(row["question"]).strip()
        count = shots_for_row(self.shots, self.shots_mix, split, index)
        shots = choose_exemplars(pool, count, self.seed, index, self.exemplar_order)
        prompt: Any = render_chat(question, shots) if self.chat else render_prompt(question, shots, self.prompt_format)
        return {
            "id": f"gsm8k-{split}-{index}",
            "prompt": prompt,
            "question": question,
            "final_answer": final,
            "reference_solution": row["answer"],
            "exemplar_count": count,
        }

    def _exemplar_pool(self) -> list[Exemplar]:
        most = max([self.shots, *(self.shots_mix or [])])
        if self.exemplars == "builtin" or most == 0:
            return BUILTIN_EXEMPLARS
        if self.exemplars != "train":
            pool = load_exemplars(Path(self.exemplars).expanduser())
            if most > len(pool):
                raise RlvrError(f"gsm8k asks for {most} exemplars but {self.exemplars} holds {len(pool)}.")
            return pool
        # Drawn from the training portion only, never from validation or test.
        rows = self.rows("train")
        picks = random.Random(f"exemplars:{self.seed}").sample(rows, min(8, len(rows)))
        pool = []
        for _, row in picks:
            reasoning, final = split_solution(row["answer"])
            pool.append(Exemplar(row["question"].strip(), reasoning.replace("\n", " "), final))
        return pool

    def _source(self, split: str) -> list[dict[str, Any]]:
        cache = self.__dict__.setdefault("_cache", {})
        if split not in cache:
            cache[split] = _load_source(self.data, split)
        return cache[split]


def _load_source(data: str, split: str) -> list[dict[str, Any]]:
    path = Path(data).expanduser()
    if path.is_dir():
        file = path / f"{split}.jsonl"
        if not file.is_file():
            raise RlvrError(f"{path} has no {split}.jsonl (expected GSM8K-format train.jsonl and test.jsonl).")
        return read_jsonl(file, required=("question", "answer"))
    if path.is_file():
        return read_jsonl(path, required=("question", "answer"))
    if data.startswith((".", "/", "~")) or data.endswith(".jsonl"):
        raise RlvrError(f"data path not found: {data}")
    return _load_hub(data, split)


def _load_hub(hub_id: str, split: str) -> list[dict[str, Any]]:
    try:
        from datasets import load_dataset

        dataset = load_dataset(hub_id, "main", split=split)
    except Exception as error:  # offline, unknown id, no such split: all end the same way for the user
        reason = str(error).splitlines()[0][:160] if str(error) else type(error).__name__
        raise RlvrError(
            f"could not load '{hub_id}' ({split}) from the Hugging Face Hub: {reason}. "
            "Offline? Point task.data at a local copy, e.g. --set task.data=path/to/gsm8k"
        ) from None
    return [dict(row) for row in dataset]
