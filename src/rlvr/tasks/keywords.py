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
without a condition is judged by the rubric alone.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError
from rlvr.jsonl import read_jsonl
from rlvr.rewards.base import RewardFunc, completion_text
from rlvr.rewards.copying import FREE, copied_share
from rlvr.rewards.keywords import item_of, judge_completion, rubric_for
from rlvr.tasks.base import FULL_CREDIT, TASKS, Outcome, Task, check_split
from rlvr.tasks.clinical_vignettes import MAX_DRAWS, PER_CONDITION, generate_vignettes, select_conditions
from rlvr.tasks.note_exemplars import BUILTIN as BUILTIN_EXEMPLARS
from rlvr.tasks.note_exemplars import ExemplarNote, chat_prompt, load_exemplar_notes, plain_prompt
from rlvr.tasks.splits import disjoint_rows, normalize_question
from rlvr.verifiers.conditions import findings_in, known_condition, load_table
from rlvr.verifiers.keyword_rubric import Rubric, load_rubric
from rlvr.verifiers.keywords import WRITING_INDICATORS, Judgement

BUILTIN_PROMPTS = Path(__file__).resolve().parent.parent / "data" / "keywords" / "medical_prompts.jsonl"
#: ``prompts`` / ``test_prompts`` values naming the built-in sets rather than a file.
BUILTIN, GENERATED = "builtin", "generated"
#: The breakdown table of the per-item check (shares of the completions it judged).
PER_ITEM = "per-item diagnosis check (share of completions)"
#: With example notes shown: the details key of a note's share of word 4-grams found in them, its breakdown
#: table, and its per-item flag (a note copies the example from the share where ``example_copy`` starts to cost).
EXAMPLE_COPY, COPIED, COPIES_FLAG = "example_copy", "the example note copied (share of completions)", "copies the example note"


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
        self._check_generation_options()
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

    def _check_generation_options(self) -> None:
        """``conditions`` and ``vignettes_per_condition`` only with generated prompts, and valid (one-line errors)."""
        changed = [name for name, default in (("conditions", None), ("vignettes_per_condition", PER_CONDITION))
                   if getattr(self, name) != default]
        if changed and GENERATED not in (self.prompts, self.test_prompts):
            raise RlvrError(f"keywords {' and '.join(changed)} shape the generated vignettes only; set "
                            f"prompts: {GENERATED}, or drop {' and '.join(changed)}.")
        if isinstance(self.conditions, str):
            self.conditions = [slug.strip() for slug in self.conditions.split(",") if slug.strip()]
        if self.conditions is not None:
            select_conditions(self.conditions)
        if not 1 <= self.vignettes_per_condition <= MAX_DRAWS:
            raise RlvrError(f"keywords vignettes_per_condition must be an integer from 1 to {MAX_DRAWS} "
                            f"(default {PER_CONDITION}), got {self.vignettes_per_condition}.")

    def load(self, split: str) -> Any:
        from datasets import Dataset

        rows = self.rows(split)
        if self.limit is not None:
            rows = rows[: self.limit]
        return Dataset.from_list([self._record(index, row) for index, row in rows])

    def rows(self, split: str) -> list[tuple[int, dict[str, Any]]]:
        """(line index in its prompts file, row) for ``split``, before any limit."""
        check_split(split)
        source = self._source(self.prompts)
        carved = ("validation", "train") if self.test_prompts else ("test", "validation", "train")
        if len(source) < len(carved):
            raise RlvrError(f"{self._describe(self.prompts)} has {len(source)} prompts; the splits need at least {len(carved)}.")
        chosen = self._carve(source, carved)
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
                answer=_groups_shown(judgement),
                gold=_gold(rubric, row, self.per_item),
                details=details,
            ))
        return outcomes

    def breakdown(self, details: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
        """The share of completions covering each rubric group, and the share hit by each penalty."""
        groups: dict[str, list[bool]] = {}
        penalties: dict[str, list[bool]] = {}
        for detail in details:
            for name, verdict in (detail.get("groups") or {}).items():
                groups.setdefault(name, []).append(bool(verdict.get("covered")))
            for name, penalty in (detail.get("penalties") or {}).items():
                penalties.setdefault(name, []).append(float(penalty.get("factor", 1.0)) < 1.0)
        tables = {}
        if groups:
            tables["rubric group coverage"] = {name: sum(v) / len(v) for name, v in groups.items()}
        if penalties:
            tables["penalised (share of completions)"] = {name: sum(v) / len(details) for name, v in penalties.items()}
        checked = [detail["per_item"] for detail in details if detail.get("per_item")]
        if checked:
            tables[PER_ITEM] = {
                "diagnosis named correctly": sum(bool(c.get("diagnosis_correct")) for c in checked) / len(checked),
                "vignette's condition named": sum(bool(c.get("condition_named")) for c in checked) / len(checked),
                "another condition named": sum(bool(c.get("other_conditions")) for c in checked) / len(checked),
                "cites a vignette finding": sum(bool(c.get("findings_cited")) for c in checked) / len(checked),
            }
        indicators = _mean_indicators(details)
        if indicators:
            tables[WRITING_INDICATORS] = indicators
        copies = [detail for detail in details if detail.get(EXAMPLE_COPY) is not None]
        if copies:
            copied = [detail for detail in copies if detail[EXAMPLE_COPY] >= FREE]
            tables[COPIED] = {
                COPIES_FLAG: len(copied) / len(copies),
                "copies it and earns full credit": sum(float(d.get("score", 0)) >= FULL_CREDIT for d in copied) / len(copies),
                "mean share of its 4-grams in the note": sum(d[EXAMPLE_COPY] for d in copies) / len(copies),
            }
        return tables

    def item_flags(self, details: Mapping[str, Any]) -> dict[str, bool]:
        """Under the per-item check: whether the note named the right diagnosis (and no other), and cited a finding;
        with example notes shown: whether it copies them (from :data:`rlvr.rewards.copying.FREE` of its 4-grams)."""
        flags = {COPIES_FLAG: details[EXAMPLE_COPY] >= FREE} if details.get(EXAMPLE_COPY) is not None else {}
        checked = details.get("per_item")
        if not checked:
            return flags
        return {"diagnosis named correctly": bool(checked.get("diagnosis_correct")),
                "cites a vignette finding": bool(checked.get("findings_cited")) or not checked.get("findings"), **flags}

    def shown_gold(self, row: Mapping[str, Any]) -> str | None:
        return _gold(rubric_for(row.get("rubric"), self.default_rubric()), row, self.per_item)

    def reference_completions(self) -> dict[str, str]:
        """The hand-written clinical note of ``rlvr reward audit`` (full credit under the built-in medical rubric);
        none for the user's own rubric, which it was not written for."""
        if self.rubric is not None:
            return {}
        from rlvr.audit import HONEST_CORRECT, KEYWORD_PROBES

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
            record.update(_item_columns(row, record["id"]))
        return record

    def _carve(self, source: list[dict[str, Any]], carved: tuple[str, ...]) -> dict[str, list[int]]:
        """Row indices of each carved split: one seeded shuffle over all rows, or (``stratify``) over each
        condition's rows, each condition giving its own ``test_fraction`` and ``validation_fraction``."""
        strata: dict[str, list[int]] = {}
        for index, row in enumerate(source):
            key = str(row.get("condition") or "") if self.stratify else ""
            strata.setdefault(key, []).append(index)
        rng = random.Random(self.seed)
        chosen: dict[str, list[int]] = {name: [] for name in carved}
        for order in strata.values():
            rng.shuffle(order)
            size = len(order)
            if "test" in carved:
                test, order = _take(order, self.test_fraction, size)
                chosen["test"] += test
            validation, train = _take(order, self.validation_fraction, size)
            chosen["validation"] += validation
            chosen["train"] += train
        return chosen

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
            if prompts == GENERATED:
                cache[key] = generate_vignettes(conditions=self.conditions, per_condition=self.vignettes_per_condition)
            else:
                path = _prompts_path(prompts)
                if not path.is_file():
                    raise RlvrError(f"keywords prompts '{prompts}': no such file; use {BUILTIN}, {GENERATED} "
                                    "or the path of a JSONL file.")
                cache[key] = _read_prompts(path)
        return cache[key]

    @staticmethod
    def _describe(prompts: str | None) -> str:
        return "the generated vignettes" if prompts == GENERATED else str(_prompts_path(prompts))


def _prompts_path(prompts: str | None) -> Path:
    return BUILTIN_PROMPTS if prompts in (None, BUILTIN) else Path(str(prompts)).expanduser()


def _read_prompts(path: Path) -> list[dict[str, Any]]:
    rows = read_jsonl(path, required=("prompt",))
    for number, row in enumerate(rows, start=1):
        if not isinstance(row["prompt"], str) or not row["prompt"].strip():
            raise RlvrError(f"{path}: record {number} has an empty or non-text 'prompt'.")
        if row.get("rubric"):
            row["rubric"] = str((path.parent / str(row["rubric"])).expanduser().resolve())
            load_rubric(row["rubric"])
    return rows


def _gold(rubric: Rubric, row: Mapping[str, Any], per_item: bool) -> str:
    """``rubric NAME``, and with the per-item check the row's condition."""
    condition = row.get("condition") if per_item else None
    return f"rubric {rubric.name}; condition {condition}" if isinstance(condition, str) and condition else f"rubric {rubric.name}"


def _item_columns(row: Mapping[str, Any], row_id: str) -> dict[str, Any]:
    """The per-item check's columns of a prompts row: ``condition`` ("" when none) and ``findings`` (a list of
    key-finding labels: the row's own, else those its vignette states)."""
    condition = row.get("condition")
    if not isinstance(condition, str) or not condition.strip():
        return {"condition": "", "findings": []}
    condition = condition.strip()
    if not known_condition(condition):
        from rlvr.registry import unknown_name_message

        raise RlvrError(f"keywords prompt {row_id}: {unknown_name_message('condition', condition, list(load_table().conditions))}")
    findings = row.get("findings")
    if not isinstance(findings, list):
        findings = findings_in(str(row["prompt"]), condition)
    return {"condition": condition, "findings": [str(finding) for finding in findings]}


def _take(order: list[int], fraction: float, total: int) -> tuple[list[int], list[int]]:
    """The first ``fraction`` of ``total`` (at least one) from ``order``, and the rest."""
    count = max(1, round(total * fraction))
    return order[:count], order[count:]


def _mean_indicators(details: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Each stuffing indicator (:func:`rlvr.verifiers.keywords.writing_indicators`) averaged over the completions having it."""
    values: dict[str, list[float]] = {}
    for detail in details:
        for name, value in (detail.get("indicators") or {}).items():
            if value is not None:
                values.setdefault(name, []).append(float(value))
    return {name: sum(v) / len(v) for name, v in values.items()}


def _groups_shown(judgement: Judgement) -> str:
    """The rubric groups a completion covers, e.g. ``covered 2/3: diagnosis, treatment (missing: follow_up)``, and
    with the per-item check the conditions it names (``names pneumonia``)."""
    covered = [name for name, verdict in judgement.groups.items() if verdict["covered"]]
    missing = [name for name, verdict in judgement.groups.items() if not verdict["covered"]]
    text = f"covered {len(covered)}/{len(judgement.groups)}: {', '.join(covered) or 'none'}"
    text = f"{text} (missing: {', '.join(missing)})" if missing else text
    check = judgement.per_item
    if check is not None:
        named = ([check["condition"]] if check["condition_named"] else []) + list(check["other_conditions"])
        text += f"; names {', '.join(named) or 'no condition of the table'}"
    return text
