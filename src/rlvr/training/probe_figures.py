"""``rlvr probe``'s figures, counted from the judged generations (no model, no recipe).

GRPO learns only from groups whose completions earn different rewards: each completion's advantage is its reward
minus its group's mean. The figures say where the signal will come from:

* **greedy accuracy and format rate**: what the model knows and whether it writes the answer line at all
  (the verdict on the test split measures greedy accuracy; the format rate is ``Outcome.well_formed``);
* **sampled pass@1 and pass@G** at the recipe's group size, temperature, top-p, token limit and seed,
  stopped at the answer line as training is (``run.stop_at_answer``): pass@1 is the mean correctness
  rollouts start from; pass@G is the share of groups with at least one right completion, the groups
  where correctness can pull the policy up;
* **truncation, stop rate, mean tokens**: completions cut at ``grpo.max_completion_length`` never reach
  the answer line, so they score as unformatted however good their reasoning;
* **zero-variance groups**, from the recipe's own reward functions and weights on the sampled groups (what
  TRL's advantages see): such a group is a full rollout for no gradient. Split by the task's judge into
  all right, all wrong and other (mixed verdicts, or none, with equal totals);
* where each item has one gold answer, **the constant answer**: always giving the train split's most common
  answer, on the probed items (as the held-out verdict's baseline). Where it is right about as often as the
  model's own samples, the quickest way up GRPO's reward is to converge on it, not to learn the skill;
* for ``choice`` tasks, **chance** (1/options), always answering the train split's most common gold letter,
  and random guessing's pass@G: a multiple-choice model can look learnable while it guesses;
* for tasks with yes/no facts per item (:meth:`rlvr.tasks.base.Task.item_flags`, e.g. keywords' "diagnosis
  named correctly"), the same greedy rate, pass@1 and pass@G per fact: whether the substance has headroom.

Per probed row, probe.json also keeps ``items`` (:func:`item_records`): greedy right or not, how many of the G
samples were right, and each fact's greedy yes/no and sampled count, for breaking the figures down by any
grouping of items. :func:`rlvr.training.probe.figures_from` puts them together.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlvr.training.probe_verdict import Chance

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def pass_at_g(correct: Sequence[Sequence[bool]]) -> float:
    """Share of groups with at least one right completion."""
    return sum(any(group) for group in correct) / max(1, len(correct))


def zero_variance_shares(totals: Sequence[Sequence[float]], correct: Sequence[Sequence[bool]]) -> dict[str, float]:
    """Shares of groups whose weighted total rewards are all equal (as TRL's advantages see them: None as 0),
    split by the judge into all right, all wrong and other."""
    import torch

    from rlvr.training.controls import zero_variance_groups

    if not totals:
        return {"zero_variance": 0.0, "all_right": 0.0, "all_wrong": 0.0, "other": 0.0}
    size = len(totals[0])
    values = torch.tensor([[math.nan if v is None else float(v) for v in group] for group in totals])
    flat = zero_variance_groups(values.view(-1), size).tolist()
    n = len(totals)
    right = sum(z and all(c) for z, c in zip(flat, correct, strict=True))
    wrong = sum(z and not any(c) for z, c in zip(flat, correct, strict=True))
    zero = sum(flat)
    return {"zero_variance": zero / n, "all_right": right / n, "all_wrong": wrong / n, "other": (zero - right - wrong) / n}


def choice_chance(golds: Sequence[str], train_golds: Sequence[str], options: Sequence[int] | None,
                  group_size: int) -> Chance:
    """Chance figures for a choice task; ``options``: each probed item's option count (None: inferred from the
    gold letters of the train split, the highest letter seen being the last option)."""
    from rlvr.verifiers.answers import choice_letter

    train = [letter for g in train_golds if (letter := choice_letter(str(g)))]
    if options is None:
        highest = max((LETTERS.index(letter) for letter in train), default=1)
        k = max(2, highest + 1)
        options, source = [k] * len(golds), f"inferred from the gold letters A-{LETTERS[k - 1]} of the train split"
    else:
        source = "the choices field"
    options = [max(1, k) for k in options]
    majority = Counter(train).most_common(1)[0][0] if train else None
    hits = sum(choice_letter(str(g)) == majority for g in golds) if majority else 0
    n = max(1, len(golds))
    return Chance(
        options=sum(options) / n, options_from=source, chance=sum(1 / k for k in options) / n,
        majority_letter=majority, majority_accuracy=hits / n,
        random_pass_at_g=sum(1 - (1 - 1 / k) ** group_size for k in options) / n,
    )


def option_counts(task: Any, rows: Sequence[Mapping[str, Any]]) -> list[int] | None:
    """Each row's option count from the jsonl task's ``choices`` field (None: the task has no such field)."""
    import json

    field_name = getattr(task, "choices", None)
    if not field_name:
        return None
    counts = []
    for row in rows:
        try:
            record = json.loads(row.get("record") or "{}")
        except ValueError:
            return None
        value = record.get(field_name)
        if not isinstance(value, (list, tuple)) or not value:
            return None
        counts.append(len(value))
    return counts


def is_choice_task(task: Any) -> bool:
    return getattr(task, "verifier", None) == "choice"


@dataclass
class Judged:
    """The task's outcomes of the probe's generations: one greedy per row, G sampled per row."""

    greedy: list[Any]
    sampled: list[list[Any]]


def judge_generations(task: Any, rows: Sequence[Mapping[str, Any]], greedy: Sequence[Any],
                      sampled: Sequence[Sequence[Any]]) -> Judged:
    """Judge the greedy and the sampled generations (one call each, as the task judges batches)."""
    g = len(sampled[0]) if sampled else 0
    greedy_outcomes = task.judge([x.text for x in greedy], list(rows))
    flat = [(row, x) for row, group in zip(rows, sampled, strict=True) for x in group]
    outcomes = task.judge([x.text for _, x in flat], [row for row, _ in flat])
    return Judged(list(greedy_outcomes), [list(outcomes[i * g : (i + 1) * g]) for i in range(len(rows))])


def fact_names(task: Any, judged: Judged) -> list[str]:
    """The yes/no facts the task records on any of the outcomes, in first-seen order (none: [])."""
    names: dict[str, None] = {}
    for o in [*judged.greedy, *(o for group in judged.sampled for o in group)]:
        names.update(dict.fromkeys(task.item_flags(o.details or {})))
    return list(names)


def fact(task: Any, outcome: Any, name: str) -> bool:
    """Whether the fact ``name`` holds for one outcome (absent from its details: no)."""
    return bool(task.item_flags(outcome.details or {}).get(name))


def flag_figures(task: Any, judged: Judged) -> dict[str, dict[str, float]]:
    """Per fact: its greedy rate, sampled pass@1 and pass@G, as for correctness."""
    figures = {}
    for name in fact_names(task, judged):
        held = [[fact(task, o, name) for o in group] for group in judged.sampled]
        figures[name] = {"greedy": share([fact(task, o, name) for o in judged.greedy]),
                         "pass_at_1": share([h for group in held for h in group]),
                         "pass_at_g": pass_at_g(held)}
    return figures


def item_records(task: Any, rows: Sequence[Mapping[str, Any]], judged: Judged) -> list[dict[str, Any]]:
    """One compact record per probed row (its ``id``, else its index): greedy right, how many samples right,
    and per fact its greedy yes/no and how many samples it holds for."""
    names = fact_names(task, judged)
    rows_judged = zip(rows, judged.greedy, judged.sampled, strict=True)
    return [{"id": row.get("id", index), "greedy_correct": bool(first.correct),
             "sampled_correct": sum(bool(o.correct) for o in group),
             "flags": {name: {"greedy": fact(task, first, name),
                              "sampled": sum(fact(task, o, name) for o in group)} for name in names}}
            for index, (row, first, group) in enumerate(rows_judged)]


def constant_on(task: Any, rows: Sequence[Mapping[str, Any]], train_golds: Sequence[str] | None) -> dict[str, Any] | None:
    """Always giving the train split's most common answer, on ``rows`` (the held-out verdict's baseline, here on
    the probed items); None where items have no one gold answer or the train answers are not known."""
    from rlvr.verifiers.answer_keys import constant_answer_accuracy

    if not train_golds or not rows or not task.single_gold_answer or "final_answer" not in rows[0]:
        return None
    baseline = constant_answer_accuracy(train_golds, [row["final_answer"] for row in rows])
    return {key: baseline[key] for key in ("answer", "accuracy", "n")}


def answer_in_prompt(task: Any, rows: Sequence[Mapping[str, Any]]) -> float | None:
    """How much more often a row's gold answer is made of words of its own question than of another row's: the
    share of ``rows`` whose answer's words (runs of letters and digits, any case) all occur in their question,
    less the same share over every (question, another row's answer) pair. High for an answer to select, copy or
    reorder ("Zaak" from a list of statements, [23, 7] from the numbers given); near 0 for one to compute ("12"),
    and for a small answer set every question spells out (the same four names in every puzzle, a digit among a
    grid's digits). None where rows carry no question and one gold answer, or for a choice task."""
    import re
    from collections import Counter

    if len(rows) < 2 or not getattr(task, "single_gold_answer", False) or is_choice_task(task):
        return None
    if any(not isinstance(row.get("question"), str) or row.get("final_answer") is None for row in rows):
        return None
    word = re.compile(r"[^\W_]+")
    questions = [set(word.findall(row["question"].lower())) for row in rows]
    answers = [frozenset(word.findall(str(row["final_answer"]).lower())) for row in rows]
    own = sum(bool(a) and a <= q for q, a in zip(questions, answers, strict=True))
    every = sum(n * sum(bool(a) and a <= q for q in questions) for a, n in Counter(answers).items())
    return round(own / len(rows) - (every - own) / (len(rows) * (len(rows) - 1)), 4)


def train_answers(task: Any, rows: Sequence[Mapping[str, Any]]) -> list[str] | None:
    """The whole train split's gold answers, where rows carry them: the held-out verdict's constant baseline learns
    from the same (before any ``run.difficulty_filter``)."""
    if not rows or "final_answer" not in rows[0]:
        return None
    return [str(g) for g in task.train_answers()]


def share(values: Sequence[bool]) -> float:
    return sum(values) / len(values) if values else 0.0


def form_rate(outcomes: Sequence[Any]) -> float | None:
    forms = [o.well_formed for o in outcomes if o.well_formed is not None]
    return sum(forms) / len(forms) if forms else None
