"""Domain writing judged by a keyword rubric: the right terminology, used in real sentences.

The built-in prompt set is 48 clinical vignettes written for rlvr
(``rlvr/data/keywords/medical_prompts.jsonl``), judged by the medical rubric
beside it. Users bring their own with ``prompts: my_prompts.jsonl`` (one
``{"prompt": ...}`` object per line; optional ``id`` and ``rubric``, a rubric
path relative to the JSONL file for rows judged differently) and
``rubric: my_rubric.yaml``.

``prompts: generated`` uses the templated vignettes of
:mod:`rlvr.tasks.clinical_vignettes` instead: several hundred, so a test split
of 200+ prompts leaves enough to train on. Two options shape them (and are an
error with any other prompts source): ``conditions``, the condition slugs to
generate vignettes for (null: all 42 of the table), and
``vignettes_per_condition`` (default 20). Fewer conditions with more vignettes
each keep a test split of 200+ where a small model has headroom.

Splits are a seeded shuffle of the prompts: ``test`` and ``validation`` take
``test_fraction`` and ``validation_fraction`` of them, ``train`` the rest.
``test_prompts`` names a second prompts file (``builtin``: the 48 hand-written
vignettes) that is the test split, whole; prompts sharing its text are then
dropped from train and validation.

``shots: N`` puts N worked example notes (a vignette and a full-credit note each,
from ``exemplars``: the built-in cellulitis and gout notes, findings first or
``name-first``, or a JSONL file) before every prompt as earlier turns
(:mod:`rlvr.tasks.note_exemplars`).

``per_item: true`` makes full credit also depend on the vignette: the note must
name the row's condition (a ``condition`` field: a slug of the condition table,
``rlvr/data/keywords/conditions.yaml``; generated vignettes and most hand-written
ones carry one), name no other condition of the table, and cite one of the
vignette's key findings (see :mod:`rlvr.verifiers.conditions`). Rows then carry
``condition`` and ``findings`` columns, which the reward and the judge read; a row
without a condition is judged by the rubric alone, and one line on stderr says how many
rows of the prompts lack one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlvr.errors import RlvrError
from rlvr.rewards.base import RewardFunc, completion_text
from rlvr.rewards.copying import copied_share
from rlvr.rewards.keywords import item_of, judge_completion, rubric_for
from rlvr.tasks.base import FULL_CREDIT, TASKS, Outcome, Task, check_split
from rlvr.tasks.clinical_vignettes import PER_CONDITION
from rlvr.tasks.keyword_outcomes import EXAMPLE_COPY, breakdown_tables, gold_shown, groups_shown, note_flags
from rlvr.tasks.keyword_prompts import (
    GENERATED,
    carve_indices,
    check_generation_options,
    describe_source,
    item_columns,
    load_source,
    say_rows_without_condition,
)
from rlvr.tasks.note_exemplars import BUILTIN as BUILTIN_EXEMPLARS
from rlvr.tasks.note_exemplars import ExemplarNote, chat_prompt, load_exemplar_notes, plain_prompt
from rlvr.tasks.splits import disjoint_rows, normalize_question
from rlvr.verifiers.keyword_rubric import Rubric
from rlvr.verifiers.keyword_rubric_loader import load_rubric


@TASKS.register("keywords")
@dataclass
class KeywordsTask(Task):
    """Prompts answered in prose, rewarded by a keyword rubric that resists keyword stuffing."""

    #: Prompts JSONL; None: the 48 built-in clinical vignettes; "generated": the templated ones (several hundred).
    prompts: str | None = None
    #: A prompts JSONL used whole as the test split ("builtin": the 48 hand-written vignettes); None: carve it from prompts.
    test_prompts: str | None = None
    #: Rubric YAML judging every row without its own (None: the built-in medical rubric).
    rubric: str | None = None
    #: Render prompts as chat messages (for instruct models); else plain text ending in "Answer:".
    chat: bool = True
    #: Switch the rubric's semantic context check on or off (None: as the rubric says).
    semantic: bool | None = None
    seed: int = 42
    validation_fraction: float = 0.1
    test_fraction: float = 0.2
    #: Keep only the first N rows of a split (None: all).
    limit: int | None = None
    #: The per-item check: full credit also needs the row's condition named (and no other) and a vignette finding
    #: cited; rows carry ``condition`` and ``findings`` columns. False: the rubric alone, the same for every row.
    per_item: bool = False
    #: With ``per_item``: the vignette's condition, named in a sentence, counts as a mention of the rubric's
    #: ``diagnosis`` group (its coverage and its patterns), so "This is migraine, so I would start a triptan" states
    #: the diagnosis with its treatment without the word "diagnosis". False: the group also needs one of its terms.
    name_is_diagnosis: bool = False
    #: Carve the test and validation splits from each condition alike (rows without a condition form one group),
    #: so every condition holds its share of the test split and a fixed note naming one condition can earn full
    #: credit on at most about 1/len(conditions) of it. False: one shuffle over all rows.
    stratify: bool = False
    #: With prompts "generated": the condition slugs of the table to generate vignettes for (a list, or a
    #: comma-separated string; order does not matter; null: all). Each condition keeps its own vignettes.
    conditions: list[str] | None = None
    #: With prompts "generated": vignettes per condition (the first 20 are the default set's).
    vignettes_per_condition: int = PER_CONDITION
    #: Worked example notes before each prompt, as earlier turns of the conversation (0: none): a vignette and a
    #: full-credit note each, taken in order from ``exemplars``. Rows whose prompt is an example's are dropped.
    shots: int = 0
    #: Where the example notes come from: "builtin" (two written for rlvr, of cellulitis and gout, findings
    #: first), "name-first" (the same notes opening with the diagnosis) or a JSONL file with a prompt and a
    #: completion per line.
    exemplars: str = BUILTIN_EXEMPLARS

    name = "keywords"
    default_rewards = [{"name": "keywords", "weight": 1.0}]
    accuracy_name = "full credit"
    judged_by = "keywords"
    takes_shots = True  # example notes (``shots``); `rlvr eval --shots 0,1` compares them

    def __post_init__(self) -> None:
        for name in ("validation_fraction", "test_fraction"):
            if not 0 < getattr(self, name) < 0.5:
                raise RlvrError(f"keywords {name} must lie strictly between 0 and 0.5.")
        if self.limit is not None and self.limit < 1:
            raise RlvrError("keywords limit must be a positive integer.")
        load_rubric(self.rubric)  # a broken rubric fails now, naming what to fix
        if self.name_is_diagnosis and not self.per_item:
            raise RlvrError("keywords name_is_diagnosis counts the vignette's condition named, which only the "
                            "per-item check knows; set task.per_item: true, or drop name_is_diagnosis.")
        self.conditions = check_generation_options(self.prompts, self.test_prompts, self.conditions,
                                                   self.vignettes_per_condition)
        self._check_shots()

    def _check_shots(self) -> None:
        """``shots`` a whole number no larger than the example notes ``exemplars`` holds (one-line errors); keeps
        the first ``shots`` notes for the prompts."""
        if isinstance(self.shots, bool) or not isinstance(self.shots, int) or self.shots < 0:
            raise RlvrError(f"keywords shots must be a whole number of example notes (0: none), got {self.shots!r}.")
        notes = load_exemplar_notes(self.exemplars) if self.shots else []
        if self.shots > len(notes):
            raise RlvrError(f"keywords shots {self.shots}: exemplars '{self.exemplars}' holds {len(notes)} "
                            f"example note{'s' if len(notes) != 1 else ''}; lower shots or add notes.")
        self._notes = notes[: self.shots]

    def load(self, split: str) -> Any:
        from datasets import Dataset

        rows = self.rows(split)
        if self.per_item:
            source = self.test_prompts if split == "test" and self.test_prompts else self.prompts
            say_rows_without_condition(self._source(source), describe_source(source))
        if self.limit is not None:
            rows = rows[: self.limit]
        return Dataset.from_list([self._record(index, row) for index, row in rows])

    def rows(self, split: str) -> list[tuple[int, dict[str, Any]]]:
        """(line index in its prompts file, row) for ``split``, before any limit."""
        check_split(split)
        source = self._source(self.prompts)
        carved = ("validation", "train") if self.test_prompts else ("test", "validation", "train")
        if len(source) < len(carved):
            raise RlvrError(f"{describe_source(self.prompts)} has {len(source)} prompts; the splits need at least {len(carved)}.")
        chosen = carve_indices(source, carved, self.seed, self.test_fraction, self.validation_fraction,
                               self.stratify)
        by_split = {name: [(i, source[i]) for i in sorted(indices)] for name, indices in chosen.items()}
        if self.test_prompts:
            by_split["test"] = list(enumerate(self._source(self.test_prompts)))
        kept, self.dropped_overlaps = disjoint_rows(by_split, lambda pair: str(pair[1]["prompt"]))
        shown = {normalize_question(note.prompt) for note in self.shown_notes()}
        return [pair for pair in kept[split] if normalize_question(str(pair[1]["prompt"])) not in shown]

    def reward_functions(self, specs: list[dict[str, Any]] | None = None) -> list[RewardFunc]:
        """As the base class, with this task's options filled in (:meth:`reward_specs`)."""
        return super().reward_functions(self.reward_specs(specs))

    def reward_specs(self, specs: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """Copies of ``specs`` (default: this task's rewards) with this task's rubric, semantic and per-item options
        filled into ``keywords`` and ``diagnosis`` rewards and its shown example notes into ``example_copy``, as
        training and ``rlvr reward audit`` build them; one clear line for a reward the options cannot feed."""
        specs = [dict(spec) for spec in (specs or self.default_rewards)]
        for spec in specs:
            if spec.get("name") == "keywords":
                spec.setdefault("rubric", self.rubric)
                spec.setdefault("semantic", self.semantic)
                if self.per_item:
                    spec.setdefault("per_item", True)
                    spec.setdefault("name_is_diagnosis", self.name_is_diagnosis)
                elif spec.get("per_item"):
                    raise RlvrError("reward keywords: per_item reads the condition and findings columns that the "
                                    "keywords task adds with its own per_item option; set task.per_item: true.")
            elif spec.get("name") == "diagnosis":
                if not self.per_item:
                    raise RlvrError("reward diagnosis reads the condition of each vignette, which the keywords task "
                                    "adds with its per_item option; set task.per_item: true.")
                spec.setdefault("rubric", self.rubric)
            elif spec.get("name") == "example_copy" and "examples" not in spec:
                spec["examples"] = [note.completion for note in self.shown_notes()]
        return specs

    def score_records(self, records: list[dict[str, Any]], rewards: list[RewardFunc] | None = None,
                      weights: list[float] | None = None) -> list[dict[str, Any]]:
        """``{"reward": score, "explanation": {...}}`` per record; a record's ``rubric`` field overrides the task's."""
        if rewards:
            return super().score_records(records, rewards, weights)
        default = self.default_rubric()
        results = []
        for record in records:
            judgement = judge_completion(record.get("completion", ""), rubric_for(record.get("rubric"), default), self.semantic,
                                         self._item(record))
            results.append({"reward": judgement.score, "explanation": judgement.explanation()})
        return results

    def default_rubric(self) -> Rubric:
        return load_rubric(self.rubric)

    def _item(self, row: Mapping[str, Any]) -> Any:
        """The per-item check's item of a row (None without the check, or for a row without a condition)."""
        return item_of(row, self.name_is_diagnosis) if self.per_item else None

    # ------------------------------------------------------------------ correctness

    def judge(self, completions: Sequence[Any], rows: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        """Correct at full rubric credit (score 1.0); the score is the rubric score, details its explanation (and,
        when the prompts show example notes, the share of the note's word 4-grams found in them)."""
        default = self.default_rubric()
        examples = [note.completion for note in self.shown_notes()]
        outcomes = []
        for completion, row in zip(completions, rows, strict=True):
            rubric = rubric_for(row.get("rubric"), default)
            judgement = judge_completion(completion, rubric, self.semantic, self._item(row))
            details = judgement.explanation()
            if examples:
                details[EXAMPLE_COPY] = round(copied_share(completion_text(completion), examples), 4)
            outcomes.append(Outcome(
                correct=judgement.score >= FULL_CREDIT,
                score=judgement.score,
                answer=groups_shown(judgement),
                gold=gold_shown(rubric, row, self.per_item),
                details=details,
            ))
        return outcomes

    def breakdown(self, details: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
        """The share of completions covering each rubric group, and the share hit by each penalty."""
        return breakdown_tables(details)

    def item_flags(self, details: Mapping[str, Any]) -> dict[str, bool]:
        """Under the per-item check: whether the note named the right diagnosis (and no other), and cited a finding;
        with example notes shown: whether it copies them (from :data:`rlvr.rewards.copying.FREE` of its 4-grams)."""
        return note_flags(details)

    def shown_gold(self, row: Mapping[str, Any]) -> str | None:
        return gold_shown(rubric_for(row.get("rubric"), self.default_rubric()), row, self.per_item)

    def reference_completions(self) -> dict[str, str]:
        """The hand-written clinical note of ``rlvr reward audit`` (full credit under the built-in medical rubric);
        none for the user's own rubric, which it was not written for."""
        if self.rubric is not None:
            return {}
        from rlvr.audit.keyword_probes import KEYWORD_PROBES
        from rlvr.audit.probe import HONEST_CORRECT

        note = next(probe.completion for probe in KEYWORD_PROBES if probe.kind == HONEST_CORRECT)
        return {"the audit's hand-written full-credit note": note}

    def _record(self, index: int, row: dict[str, Any]) -> dict[str, Any]:
        own = row.get("rubric") or ""
        rubric = load_rubric(own) if own else self.default_rubric()
        text, notes = str(row["prompt"]).strip(), self.shown_notes()
        record = {
            "id": str(row.get("id") or f"keywords-{index}"),
            "prompt": (chat_prompt if self.chat else plain_prompt)(notes, text, rubric.instructions),
            "question": str(row["prompt"]).strip(),
            "rubric": own,
        }
        if self.per_item:
            record.update(item_columns(row, record["id"]))
        return record

    def shown_notes(self) -> list[ExemplarNote]:
        """The first ``shots`` example notes, read when the task was built."""
        return self._notes

    def _source(self, prompts: str | None) -> list[dict[str, Any]]:
        """The rows of a prompts source: None or "builtin" (the 48 vignettes), "generated", or a JSONL path."""
        cache = self.__dict__.setdefault("_cache", {})
        key: Any = prompts
        if prompts == GENERATED:
            key = (prompts, tuple(self.conditions) if self.conditions else None, self.vignettes_per_condition)
        if key not in cache:
            cache[key] = load_source(prompts, self.conditions, self.vignettes_per_condition)
        return cache[key]
