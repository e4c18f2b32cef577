"""Offline arithmetic problems from reasoning-gym, in the GSM8K answer format.

This is the embedded default's task: it needs no download, and with one-digit
operands a 135M model starts with a success rate GRPO can work with (neither 0
nor 1). Problems are generated from a seed per split, and splits never share a
question: exemplars are drawn first, then test, validation and train, each
skipping every question (normalised text) an earlier one took
(:class:`rlvr.tasks.splits.QuestionPool`). A generator whose problem space is too
small for the sizes asked is an error, not a silent overlap.

reasoning-gym's own ``score_answer`` is not used: it gives partial credit when
the gold string is a substring of the answer. The shared math rewards judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rlvr.errors import RlvrError
from rlvr.tasks.base import TASKS, check_split
from rlvr.tasks.numeric import NumericAnswerTask
from rlvr.tasks.prompts import (
    STOP_PATTERNS,
    Exemplar,
    check_shot_options,
    choose_exemplars,
    render_chat,
    render_prompt,
    shots_for_row,
)
from rlvr.tasks.splits import PRIORITY, QuestionPool

_SPLIT_OFFSETS = {"train": 0, "validation": 1_000_003, "test": 2_000_003}
_EXEMPLAR_OFFSET = 3_000_017
_EXEMPLARS = 8
#: Candidates drawn per requested item before a split is declared impossible (small problem spaces).
_DRAWS_PER_ITEM = 40


@TASKS.register("arithmetic")
@dataclass
class ArithmeticTask(NumericAnswerTask):
    """Generated arithmetic (reasoning-gym) with a k-shot prompt in the GSM8K format."""

    #: reasoning-gym dataset name, e.g. basic_arithmetic, chain_sum, products.
    generator: str = "basic_arithmetic"
    #: Options passed to the generator (difficulty): see reasoning-gym's config for it.
    generator_config: dict[str, Any] = field(
        default_factory=lambda: {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}
    )
    #: Rows per split.
    train_size: int = 2000
    validation_size: int = 100
    test_size: int = 200
    #: Exemplars before each question (0-8), generated from their own stream.
    shots: int = 4
    #: Exemplar counts for train and validation rows, cycled row by row (e.g. [0, 1, 2]); test rows keep `shots`.
    #: None: every row gets `shots`.
    shots_mix: list[int] | None = None
    #: "per_row": each row draws its own exemplars (seeded); "fixed": every row gets the first `shots` in order.
    exemplar_order: str = "per_row"
    seed: int = 42
    chat: bool = False
    limit: int | None = None

    name = "arithmetic"
    default_rewards = [{"name": "format", "weight": 0.5}, {"name": "correctness", "weight": 1.0}]
    stop_patterns = STOP_PATTERNS

    def __post_init__(self) -> None:
        self.shots_mix = check_shot_options(self.shots, self.shots_mix, self.exemplar_order)
        for name in ("train_size", "validation_size", "test_size"):
            if getattr(self, name) < 1:
                raise RlvrError(f"arithmetic {name} must be a positive integer.")

    def load(self, split: str) -> Any:
        from datasets import Dataset

        check_split(split)
        items = self._splits()[split]
        if self.limit is not None:
            items = items[: self.limit]
        pool = self.exemplar_pool()
        records = []
        for index, item in enumerate(items):
            count = shots_for_row(self.shots, self.shots_mix, split, index)
            shots = choose_exemplars(pool, count, self.seed, index, self.exemplar_order)
            question = item["question"]
            prompt: Any = render_chat(question, shots) if self.chat else render_prompt(question, shots)
            records.append({"id": f"{self.generator}-{split}-{index}", "prompt": prompt, "question": question,
                            "final_answer": str(item["answer"]), "exemplar_count": count})
        return Dataset.from_list(records)

    def exemplar_pool(self) -> list[Exemplar]:
        items = self._splits()["exemplars"]
        return [Exemplar(item["question"], _reasoning(item), str(item["answer"])) for item in items]

    def _splits(self) -> dict[str, list[dict[str, Any]]]:
        """Exemplars, test, validation, train: each drawn from its own stream around the questions before it."""
        cache = self.__dict__.setdefault("_cache", {})
        if not cache:
            taken = QuestionPool()
            cache["exemplars"] = taken.draw(self._stream(_EXEMPLARS, _EXEMPLAR_OFFSET), _EXEMPLARS, "arithmetic exemplars")
            for split in PRIORITY:
                size = getattr(self, f"{split}_size")
                cache[split] = taken.draw(self._stream(size, _SPLIT_OFFSETS[split]), size, f"arithmetic {split} split")
        return cache

    def _stream(self, size: int, offset: int) -> Any:
        """Items of the generator's stream for ``seed + offset``, generated lazily as they are read."""
        try:
            import reasoning_gym
        except ImportError:
            raise RlvrError("the arithmetic task needs reasoning-gym: pip install reasoning-gym") from None
        try:
            dataset = reasoning_gym.create_dataset(
                self.generator, size=size * _DRAWS_PER_ITEM + 100, seed=self.seed + offset, **self.generator_config
            )
            yield from (dict(item) for item in dataset)
        except (ValueError, TypeError, AssertionError, KeyError) as error:
            raise RlvrError(f"reasoning-gym generator '{self.generator}' rejected its options: {error}") from None


def _reasoning(item: dict[str, Any]) -> str:
    expression = str(item.get("metadata", {}).get("expression", "")).strip().rstrip("=").strip()
    return f"{expression} = {item['answer']}." if expression else f"The result is {item['answer']}."
