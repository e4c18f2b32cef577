"""Any reasoning-gym dataset, or a weighted mixture of them, as a task judged by the dataset's own scorer.

::

    task: {name: reasoning-gym, dataset: lcm, config: {min_value: 1, max_value: 12}}
    task: {name: reasoning-gym, datasets: [{name: lcm, weight: 1}, {name: chain_sum, weight: 2, config: {...}}]}

Items are generated offline, as in the ``arithmetic`` task: exemplars, test, validation and train each
from their own seed stream, every split skipping the questions (normalised text) an earlier one took
(:class:`rlvr.tasks.splits.QuestionPool`), so splits are disjoint by question text. A mixture is
reasoning-gym's ``composite`` dataset.

The model answers on the answer line (``#### The final answer is X``, stated in the prompt beside the
dataset's own instructions); the text of that line goes to the dataset's ``score_answer`` with the item.
Its score is the ``correctness`` reward (reasoning-gym's partial credit included) and the outcome's score;
"correct" is full credit only. Many of these datasets have lopsided answers (a few values most of the
time): the verdict of ``rlvr train`` reports the constant-answer baseline beside any gain.

Datasets whose answers span lines (grids, matrices: any generated gold answer holds a newline, or
``answer_block: true``) take the answer in a fenced block after the answer line
(:mod:`rlvr.verifiers.answer_block`); the block's lines go to ``score_answer``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlvr.errors import RlvrError
from rlvr.tasks.answer_line import AnswerLineTask, Shot, instruction_for, render_messages, render_plain
from rlvr.tasks.base import TASKS, check_split
from rlvr.tasks.curriculum_levels import LevelPlan, check_settings, resolve
from rlvr.tasks.prompts import check_shots
from rlvr.tasks.splits import PRIORITY, QuestionPool
from rlvr.verifiers.answers import Verdict, answer_text

_SPLIT_OFFSETS = {"train": 0, "validation": 1_000_003, "test": 2_000_003}
_EXEMPLAR_OFFSET = 3_000_017
_EXEMPLARS = 8
#: Candidates drawn per requested item before a split is declared impossible (small problem spaces).
_DRAWS_PER_ITEM = 40
_FORM = "the answer alone, in the form the question asks for"


def reasoning_gym() -> Any:
    try:
        import reasoning_gym as module
    except ImportError:
        raise RlvrError("the reasoning-gym task needs reasoning-gym: pip install reasoning-gym") from None
    return module


def dataset_names() -> list[str]:
    from reasoning_gym.factory import DATASETS

    return sorted(name for name in DATASETS if name != "composite")


def check_name(name: Any) -> str:
    """``name`` if reasoning-gym has that dataset, else an error naming the closest ones."""
    reasoning_gym()
    names = dataset_names()
    if name in names:
        return name
    import difflib

    near = difflib.get_close_matches(str(name), names, n=3, cutoff=0.5)
    hint = f" Closest: {', '.join(near)}." if near else ""
    raise RlvrError(f"reasoning-gym has no dataset '{name}'.{hint} {len(names)} datasets: see `python -c \"from "
                    "reasoning_gym.factory import DATASETS; print(sorted(DATASETS))\"`.")


#: What reasoning-gym raises for options it cannot use (aiw's task_types given as strings: AttributeError).
_REJECTED = (ValueError, TypeError, AssertionError, KeyError, AttributeError)

@TASKS.register("reasoning-gym")
@dataclass
class ReasoningGymTask(AnswerLineTask):
    """A reasoning-gym dataset (or a weighted mixture), judged by that dataset's own score_answer."""

    #: One reasoning-gym dataset, e.g. lcm, chain_sum, letter_counting.
    dataset: str | None = None
    #: Its options (difficulty), as reasoning-gym's config for it names them.
    config: dict[str, Any] = field(default_factory=dict)
    #: A mixture instead: [{name: lcm, weight: 1, config: {...}}, ...] (weights are relative).
    datasets: list[dict[str, Any]] | None = None
    #: Rows per split.
    train_size: int = 2000
    validation_size: int = 100
    test_size: int = 200
    #: Exemplars before each question (0-8), generated from their own stream.
    shots: int = 1
    seed: int = 42
    chat: bool = False
    limit: int | None = None
    #: The answer in a fenced block after the answer line: None (default) when any gold answer spans lines.
    answer_block: bool | None = None
    #: Train through the dataset's curriculum levels up to config (rlvr.tasks.curriculum_levels): auto (where every
    #: dataset has one and a target lies above its first level), on, off. train_size rows per level (a mixture: its
    #: share per level); a level is raised when its last curriculum_window groups pass curriculum_threshold.
    curriculum: str | bool = "auto"  # YAML reads a bare on / off as true / false: taken as on / off
    curriculum_threshold: float = 0.5
    curriculum_window: int = 16

    name = "reasoning-gym"

    def __post_init__(self) -> None:
        check_shots(self.shots)
        if isinstance(self.curriculum, bool):
            self.curriculum = "on" if self.curriculum else "off"
        check_settings(self.curriculum, self.curriculum_threshold, self.curriculum_window)
        if (self.dataset is None) == (self.datasets is None):
            raise RlvrError("task reasoning-gym needs one of dataset (a name) or datasets (a weighted mixture).")
        if self.dataset is not None:
            check_name(self.dataset)
            if not isinstance(self.config, dict):
                raise RlvrError(f"reasoning-gym config must be a mapping of {self.dataset}'s options.")
        else:
            self._specs()
        for name in ("train_size", "validation_size", "test_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RlvrError(f"reasoning-gym {name} must be a positive integer.")
        if self.curriculum == "on":
            self.level_plans()  # no curriculum to climb: said now, in one line

    def _specs(self) -> list[Any]:
        from reasoning_gym.composite import DatasetSpec

        if not isinstance(self.datasets, list) or not self.datasets:
            raise RlvrError("reasoning-gym datasets must be a list like [{name: lcm, weight: 1}, {name: gcd, weight: 2}].")
        specs = []
        for entry in self.datasets:
            entry = {"name": entry} if isinstance(entry, str) else entry
            if not isinstance(entry, dict) or "name" not in entry:
                raise RlvrError(f"reasoning-gym datasets: each entry needs a name, got {entry!r}.")
            unknown = sorted(set(entry) - {"name", "weight", "config"})
            if unknown:
                raise RlvrError(f"reasoning-gym datasets: unknown key '{unknown[0]}' (an entry has name, weight, config).")
            weight = entry.get("weight", 1.0)
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0:
                raise RlvrError(f"reasoning-gym datasets: weight of '{entry['name']}' must be a positive number.")
            specs.append(DatasetSpec(check_name(entry["name"]), float(weight), dict(entry.get("config") or {})))
        return specs

    @property
    def block_answers(self) -> bool:  # type: ignore[override]
        """``answer_block``, else whether any generated gold answer (exemplars and every split) spans lines."""
        if self.answer_block is not None:
            return self.answer_block
        if "_block" not in self.__dict__:
            items = (item for key, split in self._splits().items() if key != "train_levels" for item in split)
            self.__dict__["_block"] = any("\n" in str(item["answer"]) for item in items)
        return self.__dict__["_block"]

    @property
    def label(self) -> str:
        return self.dataset or "+".join(str(e["name"] if isinstance(e, dict) else e) for e in self.datasets or [])

    # ----------------------------------------------------------------------------- data

    def load(self, split: str) -> Any:
        from datasets import Dataset

        check_split(split)
        items = self._splits()[split]
        if self.limit is not None:
            items = items[: self.limit]
        shots = [Shot(f"Question: {e['question']}", "", str(e["answer"])) for e in self._splits()["exemplars"][: self.shots]]
        block = self.block_answers
        instruction = instruction_for(_FORM, block)
        records = []
        for index, item in enumerate(items):
            text = f"Question: {item['question']}"
            prompt: Any = (render_messages(instruction, shots, text, block) if self.chat
                           else render_plain(instruction, shots, text, block))
            records.append({
                "id": f"{self.label}-{split}-{index}",
                "prompt": prompt,
                "question": item["question"],
                "final_answer": str(item["answer"]),
                "source_dataset": str(item.get("metadata", {}).get("source_dataset", self.dataset)),
                "entry": json.dumps(item, default=str, ensure_ascii=False),
                **({"level": self._splits()["train_levels"][index]} if split == "train" and self.level_plans() else {}),
            })
        return Dataset.from_list(records)

    def _splits(self) -> dict[str, list[dict[str, Any]]]:
        """Exemplars, test, validation, train: each drawn from its own stream around the questions before it."""
        cache = self.__dict__.setdefault("_cache", {})
        if not cache:
            taken = QuestionPool()
            cache["exemplars"] = taken.draw(self._stream(_EXEMPLARS, _EXEMPLAR_OFFSET), _EXEMPLARS,
                                            f"reasoning-gym {self.label} exemplars")
            for split in PRIORITY:
                size = getattr(self, f"{split}_size")
                if split == "train" and self.level_plans():
                    cache["train"], cache["train_levels"] = self._level_rows(taken)
                    continue
                cache[split] = taken.draw(self._stream(size, _SPLIT_OFFSETS[split]), size,
                                          f"reasoning-gym {self.label} {split} split")
        return cache

    # ----------------------------------------------------------------------------- curriculum

    def level_plans(self) -> dict[str, LevelPlan] | None:
        """Each dataset's curriculum levels up to its config (None: trained on the config alone)."""
        if "_plans" not in self.__dict__:
            self.__dict__["_plans"], self.__dict__["curriculum_note"] = resolve(
                self.curriculum, self._components(), self.curriculum_threshold, self.curriculum_window)
        return self.__dict__["_plans"]

    def train_answers(self) -> list[Any]:
        """Under a curriculum, the answers of the train rows at each dataset's target level only: the test items'
        configuration, so the constant baseline is not learnt from easier levels' answers."""
        rows = self.load("train")
        plans = self.level_plans()
        if not plans or "level" not in rows.column_names:
            return list(rows["final_answer"])
        tops = {name: plan.top for name, plan in plans.items()}
        return [answer for answer, level, name in zip(rows["final_answer"], rows["level"], rows["source_dataset"],
                                                      strict=True) if level == tops.get(name, level)]

    def curriculum_possible(self) -> bool:
        """Whether ``curriculum: auto`` would train through levels, whatever this task's setting."""
        return resolve("auto", self._components(), self.curriculum_threshold, self.curriculum_window)[0] is not None

    def _components(self) -> list[tuple[str, dict[str, Any]]]:
        return [(self.dataset, self.config)] if self.dataset else [(s.name, s.config) for s in self._specs()]

    def _level_rows(self, taken: QuestionPool) -> tuple[list[dict[str, Any]], list[int]]:
        """Train rows of every level of every dataset (a mixture's by weight), each from its own seed stream, drawn
        after test and validation (target config) so no level shares a question with them."""
        weights = {s.name: s.weight for s in self._specs()} if self.datasets is not None else {self.dataset: 1.0}
        items, levels = [], []
        for component, (name, plan) in enumerate((self.level_plans() or {}).items()):
            size = max(1, round(self.train_size * weights[name] / sum(weights.values())))
            for level, config in enumerate(plan.configs):
                seed = self.seed + _SPLIT_OFFSETS["train"] + 4_000_037 * (1 + level) + 7_919 * component
                stream = self._stream(size, 0, lambda n, s, name=name, config=config: self._create(n, s, name, config),
                                      seed)
                drawn = taken.draw(stream, size, f"reasoning-gym {name} level {level} train split",
                                   None if level == plan.top else 1)  # an easy level may hold fewer questions
                items, levels = items + drawn, levels + [level] * len(drawn)
        return items, levels

    def _create(self, size: int, seed: int, name: str | None = None, config: dict[str, Any] | None = None) -> Any:
        try:
            if name is not None or self.dataset is not None:
                return reasoning_gym().create_dataset(name or self.dataset, size=size, seed=seed,
                                                      **(self.config if config is None else config))
            return reasoning_gym().create_dataset("composite", size=size, seed=seed, datasets=self._specs())
        except _REJECTED as error:
            raise RlvrError(f"reasoning-gym dataset '{self.label}' rejected its options: {error}") from None

    def _stream(self, size: int, offset: int, create: Any = None, seed: int | None = None) -> Any:
        dataset = (create or self._create)(size * _DRAWS_PER_ITEM + 100, self.seed + offset if seed is None else seed)
        try:
            yield from (dict(item) for item in dataset)
        except _REJECTED as error:
            raise RlvrError(f"reasoning-gym dataset '{self.label}' rejected its options: {error}") from None

    def _scorer(self) -> Any:
        """A dataset object of the same name and options: its ``score_answer`` judges every item."""
        if "_scoring_dataset" not in self.__dict__:
            self.__dict__["_scoring_dataset"] = self._create(1, self.seed)
        return self.__dict__["_scoring_dataset"]

    # ----------------------------------------------------------------------------- judging

    def verify(self, text: str, row: Mapping[str, Any]) -> Verdict:
        answer, phrase = answer_text(text, self.block_answers)
        if not answer:
            return Verdict(0.0, answer, False)
        try:
            entry = json.loads(row["entry"]) if isinstance(row.get("entry"), str) else _entry_of(row)
            score = float(self._scorer().score_answer(answer, entry))
        except Exception as error:  # noqa: BLE001 (reasoning-gym's scorer on model output: judged wrong, counted)
            return Verdict(0.0, answer, phrase, f"score_answer raised {type(error).__name__}: {str(error)[:100]}")
        score = min(1.0, max(0.0, score)) if score == score else 0.0
        return Verdict(score, answer, phrase)

    def well_formed(self, text: str) -> bool:
        answer, phrase = answer_text(text, self.block_answers)
        return bool(answer) and phrase


def _entry_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """A reasoning-gym entry from a row without one (records scored by ``rlvr reward score``): its gold answer."""
    return {"question": row.get("question", ""), "answer": str(row.get("final_answer", row.get("answer", ""))),
            "metadata": {}}
