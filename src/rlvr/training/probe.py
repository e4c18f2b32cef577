"""``rlvr probe``: before training, can GRPO move this model on this task?

GRPO learns only from groups whose completions earn different rewards: each completion's advantage is
its reward minus its group's mean. On the first N training prompts (the rows training draws first, in the
trainer's seeded order, after ``run.difficulty_filter``, rendered with the same template and exemplars) the
base model, LoRA not applied, is decoded as training decodes it, and the figures below say where the signal
will come from:

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

Per probed row, probe.json also keeps ``items``: greedy right or not, how many of the G samples were right,
and each fact's greedy yes/no and sampled count, for breaking the figures down by any grouping of items.

:func:`verdict` turns the figures into one word and the recipe change it suggests (a pure function).
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from rlvr.errors import RlvrError

#: Too long: more than this share of sampled completions hit the token limit without stopping, and because of it
#: the signal is blocked (most groups all wrong, or most completions without a well-formed answer). Checked first:
#: a cut completion never reaches its answer line, so its format and correctness say nothing about the model.
#: Where the completions that do finish still leave most groups with a right one, the cut ones are signal too
#: (finishing in time is rewarded): the CPU default cuts 43-54% of its samples at 32 tokens and gains +35 points.
TOO_LONG = 0.5
#: Format-bound: fewer than this share of sampled completions write a well-formed answer line. Then most groups
#: score 0 for form alone and GRPO first has to discover the format by luck (the CPU default's 0-exemplar plain
#: prompt wrote it 0 times in 128 samples; its chat prompt 8 times: learnable, slowly).
FORMAT_BOUND = 0.2
#: At chance (choice tasks): sampled pass@1 within this many standard errors (over the probed items) of 1/options.
CHANCE_Z = 2.0
#: Too hard: at least this share of groups has no right completion, so correctness gives no signal in them.
TOO_HARD = 0.8
#: Too easy: at least this share of groups is all right: nothing left to learn on those prompts.
TOO_EASY = 0.8
#: Constant-prone: always giving the train split's most common answer is right on at least this share of sampled
#: pass@1. Set from the first five panel trainings (BENCHMARKS.md, "A panel of tasks"), constant vs pass@1 on the
#: probed items: aiw (22% vs 23%) collapsed onto "3", family_relationships (25% vs 12%) drifted to 'son' and
#: 'husband', simple_equations (8% vs 6%) kept the base; needle_haystack (0% vs 12%) gained, color_cube_rotation
#: (3% vs 8%) +6 points, not significant.
CONSTANT_PRONE = 0.5
#: Computed: a probed gold answer is made of words of its own question on fewer than this share of items beyond
#: chance (:func:`answer_in_prompt`: the answer has to be worked out, not picked from the prompt), while at least
#: :data:`FORMED` of sampled completions already write a well-formed answer line (no gain in form left either).
#: Set from the 30 trained panel datasets (BENCHMARKS.md, "A panel of tasks"): none of the 21 below 0.5 gained at
#: its probed recipe, 5 of the 9 above did. No dataset of the second or third held-out set reached it: untested
#: out of sample.
#: And only while fewer than :data:`COMPUTED_MIXED` of groups mix right and wrong answers (by the judge; groups
#: that differ in form alone do not count): the walk-through's example (examples/your-task, two-number sums, with
#: ``verifier: math``) has computed answers and 95% form, but 62.5% of its groups (70.3% on 64 items) mix
#: right and wrong sums, and it gained +26 to +31.5 points on three seeds: where the base already samples the right
#: answer in most groups, GRPO turns those samples into greedy answers without a new skill. The four panel datasets
#: the rule called computed mixed in 19-50% of groups, so 0.6 is set from those and the example, in sample.
COMPUTED = 0.5
FORMED = 0.9
COMPUTED_MIXED = 0.6
#: A task is misconfigured when the verifier reads fewer than this share of the gold answers, written as the
#: answer line, as correct (wrong answer field, wrong verifier): training would reward nothing.
GOLD_READABLE = 0.5

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass
class Chance:
    """What guessing scores on a multiple-choice task (``verifier: choice``)."""

    options: float  # mean number of options per probed item
    options_from: str  # "the choices field" or "inferred from the gold letters A-D of the train split"
    chance: float  # mean 1/options: a guess's pass@1
    majority_letter: str | None  # the train split's most common gold letter
    majority_accuracy: float  # always answering it, on the probed items
    random_pass_at_g: float  # 1 - (1 - 1/options)^G: some guess in a group of G is right


@dataclass
class Figures:
    items: int
    group_size: int
    max_tokens: int
    greedy_accuracy: float
    greedy_format_rate: float | None
    pass_at_1: float
    pass_at_g: float
    format_rate: float | None  # sampled completions with a well-formed answer (None: the task has no form)
    truncated: float  # sampled completions cut at the token limit
    stopped_at_answer: float  # ended at the task's stop pattern (answer line)
    ended_eos: float  # ended by the model's own EOS
    mean_tokens: float
    groups_all_right: float  # by the task's judge
    groups_all_wrong: float
    zero_variance: float  # groups whose weighted total reward is equal across the group
    zero_variance_all_right: float
    zero_variance_all_wrong: float
    zero_variance_other: float
    chance: Chance | None = None
    #: Always giving the train split's most common answer, on the probed items: {"answer", "accuracy", "n"}
    #: (None: the task's items have no one gold answer).
    constant: dict[str, Any] | None = None
    #: Per yes/no fact of the task (``Task.item_flags``): {"greedy": rate, "pass_at_1": .., "pass_at_g": ..}.
    flags: dict[str, dict[str, float]] = field(default_factory=dict)
    #: How much more often a probed item's gold answer is made of words of its own question than of another
    #: item's (:func:`answer_in_prompt`, -1 to 1);
    #: None where items have no one gold answer, or for a choice task (its answer is always one of the options).
    answer_in_prompt: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Verdict:
    name: str  # too long, format-bound, at chance, too hard, too easy, constant-prone, computed, learnable
    figure: str  # the figure behind it, in words
    suggestion: str  # the recipe change it suggests

    def line(self) -> str:
        return f"{self.name}: {self.figure}; {self.suggestion}"


@dataclass
class Probe:
    """Figures, verdict and what was probed (written as probe.json)."""

    figures: Figures
    verdict: Verdict
    info: dict[str, Any] = field(default_factory=dict)
    items: list[dict[str, Any]] = field(default_factory=list)  # one record per probed row (item_records)

    def to_json(self) -> dict[str, Any]:
        return {**self.info, "verdict": asdict(self.verdict), "figures": self.figures.to_json(),
                "items": self.items}


# ----------------------------------------------------------------------------- verdict (pure)


def verdict(f: Figures, chat: bool = False) -> Verdict:
    """The one word for ``f``, checked in order: too long, format-bound, at chance, too hard, too easy,
    constant-prone, computed, learnable.

    Too long comes first because a cut completion also reads as unformatted and wrong; format before
    difficulty because an unformatted completion is judged wrong whatever it knows. ``chat``: the task's prompt
    is already the chat template (then format-bound does not suggest it).
    """
    signal = 1 - f.zero_variance
    if length_blocks_signal(f):
        return Verdict("too long", f"{f.truncated:.0%} of completions cut at {f.max_tokens} tokens",
                       "raise grpo.max_completion_length")
    if f.format_rate is not None and f.format_rate < FORMAT_BOUND:
        return Verdict("format-bound", f"a well-formed answer line in {f.format_rate:.0%} of completions",
                       "add exemplars (task.shots)" + ("" if chat else " or, for an instruct model, task.chat: true"))
    if f.chance is not None and at_chance(f.pass_at_1, f.chance, f.items):
        return Verdict("at chance", f"pass@1 {f.pass_at_1:.0%} vs chance {f.chance.chance:.0%} and "
                       f"{f.chance.majority_accuracy:.0%} always answering {f.chance.majority_letter}",
                       "more exemplars with reasoning (task.shots, task.reasoning) or a larger model")
    if f.groups_all_wrong >= TOO_HARD:
        return Verdict("too hard", f"{f.groups_all_wrong:.0%} of groups all wrong (pass@{f.group_size} "
                       f"{f.pass_at_g:.0%})", "more exemplars, easier items (rlvr filter), or a larger model")
    if f.groups_all_right >= TOO_EASY:
        return Verdict("too easy", f"{f.groups_all_right:.0%} of groups all right (pass@1 {f.pass_at_1:.0%})",
                       "harder items (rlvr filter, then run.difficulty_filter) or a harder task")
    if constant_prone(f):
        c = f.constant or {}
        return Verdict("constant-prone", f"always answering {c.get('answer')!r} is right on {c.get('accuracy', 0):.0%} "
                       f"of these items vs sampled pass@1 {f.pass_at_1:.0%}",
                       "GRPO's quickest reward is converging on that answer, not the skill: halve grpo.learning_rate "
                       "(the panel's aiw collapsed onto it at 5e-4 and gained at 2.5e-4), and judge the gain against it")
    if computed_answers(f):
        return Verdict("computed", f"the gold answers are words of their own question on {f.answer_in_prompt:.0%} "
                       f"of items beyond chance, {f.format_rate:.0%} of completions already write the answer line, "
                       f"and {mixed_groups(f):.0%} of groups mix right and wrong answers",
                       "the reward can pay only for computing better, which GRPO rarely teaches a small model at "
                       "this budget: expect little gain; a larger model, or exemplars that show the working (task.shots)")
    return Verdict("learnable", f"{signal:.0%} of groups carry signal (pass@1 {f.pass_at_1:.0%}, "
                   f"pass@{f.group_size} {f.pass_at_g:.0%})", "train as is")


def length_blocks_signal(f: Figures) -> bool:
    """Over :data:`TOO_LONG` of completions cut, leaving most groups all wrong or most completions unformatted."""
    blocked = f.groups_all_wrong >= TOO_HARD or (f.format_rate is not None and f.format_rate < FORMAT_BOUND)
    return f.truncated > TOO_LONG and blocked


def constant_prone(f: Figures) -> bool:
    """The constant answer is right on at least :data:`CONSTANT_PRONE` of the model's sampled pass@1."""
    if not f.constant or f.constant.get("accuracy") is None:
        return False
    return f.constant["accuracy"] > 0 and f.constant["accuracy"] >= CONSTANT_PRONE * f.pass_at_1


def computed_answers(f: Figures) -> bool:
    """Under :data:`COMPUTED` of the gold answers in their question, the form already there (:data:`FORMED`), and
    under :data:`COMPUTED_MIXED` of groups mixing right and wrong answers (most groups mixed: learnable)."""
    if f.answer_in_prompt is None or f.format_rate is None:
        return False
    return f.answer_in_prompt < COMPUTED and f.format_rate >= FORMED and mixed_groups(f) < COMPUTED_MIXED


def mixed_groups(f: Figures) -> float:
    """Share of groups with both a right and a wrong completion (by the task's judge)."""
    return max(0.0, 1 - f.groups_all_right - f.groups_all_wrong)


def at_chance(pass_at_1: float, chance: Chance, items: int) -> bool:
    """Sampled pass@1 within :data:`CHANCE_Z` standard errors of chance, or no better than the most common letter."""
    noise = CHANCE_Z * math.sqrt(chance.chance * (1 - chance.chance) / max(1, items))
    return pass_at_1 <= chance.chance + noise or pass_at_1 <= chance.majority_accuracy


# ----------------------------------------------------------------------------- figures (pure)


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


# ----------------------------------------------------------------------------- checks


def check_items(items: int, available: int, filtered: bool, option: str = "--items") -> None:
    """``items`` must lie in [1, the split's size]: one line otherwise (``option`` names where it was asked)."""
    if items < 1:
        raise RlvrError(f"{option} must be at least 1, got {items}.")
    if items > available:
        where = "after run.difficulty_filter" if filtered else "in its train split"
        raise RlvrError(f"{option} {items}: the task has {available} training rows {where}; ask for at most {available}.")


def answers_in_line(task: Any) -> bool:
    """Whether the task's completions end in the ``####`` answer line (math, file and reasoning-gym tasks)."""
    from rlvr.tasks.prompts import STOP_PATTERNS

    return STOP_PATTERNS[0] in (task.stop_patterns or [])


def check_gold(task: Any, rows: Sequence[Mapping[str, Any]]) -> int | None:
    """How many rows' gold answers, written as the answer line, the task judges correct (None: not an answer-line
    task). Raises one line when fewer than :data:`GOLD_READABLE` are: the verifier cannot read the gold."""
    from rlvr.tasks.answer_line import ANSWER_LINE, gold_as_answer_line

    if not answers_in_line(task):
        return None
    golds = [task.shown_gold(row) for row in rows]
    usable = [(row, gold) for row, gold in zip(rows, golds, strict=True) if gold is not None]
    outcomes = task.judge([gold_as_answer_line(gold) for _, gold in usable], [row for row, _ in usable])
    read = sum(o.correct for o in outcomes)
    if read < GOLD_READABLE * len(rows):
        first = next(((row, gold) for (row, gold), o in zip(usable, outcomes, strict=True) if not o.correct), None)
        example = f" (e.g. item {first[0].get('id', '?')}: gold {first[1]!r})" if first else ""
        raise RlvrError(f"task {task.name}: the verifier judges only {read} of {len(rows)} gold answers correct when "
                        f"written as '{ANSWER_LINE} <gold>'{example}; check the task's answer field and verifier.")
    return read


# ----------------------------------------------------------------------------- running


def training_order(size: int, grpo: Mapping[str, Any]) -> list[int]:
    """The order in which TRL's GRPOTrainer draws the train split's rows: its ``RepeatSampler`` takes
    ``torch.randperm`` with a generator seeded by ``GRPOConfig.seed`` (42 unless the recipe's ``grpo.seed`` says
    otherwise), or the split's own order under ``grpo.shuffle_dataset: false``."""
    if not grpo.get("shuffle_dataset", True):
        return list(range(size))
    import torch

    generator = torch.Generator()
    generator.manual_seed(int(grpo.get("seed", 42)))
    return torch.randperm(size, generator=generator).tolist()


def training_rows(task: Any, difficulty_filter: str | None, items: int, dataset: Any = None,
                  option: str = "--items", grpo: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The first ``items`` rows training sees: ``task.load("train")`` with ``run.difficulty_filter`` applied, in
    the order the trainer draws them (:func:`training_order` under the recipe's ``grpo`` settings)."""
    if dataset is None:
        dataset = task.load("train")
        if difficulty_filter:
            from rlvr.training.difficulty import apply_filter

            dataset = apply_filter(dataset, difficulty_filter)
    check_items(items, len(dataset), bool(difficulty_filter), option)
    return [dict(row) for row in dataset.select(training_order(len(dataset), grpo or {})[:items])]


def reward_totals(task: Any, recipe: Any, rows: Sequence[Mapping[str, Any]], texts: Sequence[Sequence[str]],
                  tokenizer: Any) -> list[list[float]]:
    """The weighted total reward of each sampled completion, called as TRL calls the recipe's reward functions."""
    funcs = task.reward_functions(recipe.rewards)
    weights = task.reward_weights(recipe.rewards, recipe.grpo.get("reward_weights"))
    prompts, completions, flat_rows = [], [], []
    for row, group in zip(rows, texts, strict=True):
        for text in group:
            chat = not isinstance(row["prompt"], str)
            prompts.append(row["prompt"])
            completions.append([{"role": "assistant", "content": text}] if chat else text)
            flat_rows.append(row)
    columns = {k: [r[k] for r in flat_rows] for k in (flat_rows[0] if flat_rows else {}) if k not in ("prompt", "completion")}
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for group in texts for t in group]
    totals = [0.0] * len(completions)
    for func, weight in zip(funcs, weights, strict=True):
        values = func(prompts=prompts, completions=completions, completion_ids=ids, trainer_state=None,
                      log_extra=_ignore, log_metric=_ignore, **columns)
        for i, value in enumerate(values):
            if value is not None and not (isinstance(value, float) and math.isnan(value)):
                totals[i] += weight * float(value)
    size = len(texts[0]) if texts else 0
    return [totals[i : i + size] for i in range(0, len(totals), size)] if size else []


def _ignore(*_: Any, **__: Any) -> None:
    return None


def generate(model: Any, tokenizer: Any, task: Any, recipe: Any, prompts: Sequence[Any], batch_size: int,
             progress: bool) -> tuple[list[Any], list[list[Any]]]:
    """(greedy generation per prompt, G sampled generations per prompt), decoded as training decodes rollouts."""
    from tqdm.auto import tqdm

    from rlvr.evaluation.backends import HFBackend, Sampling, render_prompts

    grpo = recipe.grpo
    limit = int(grpo.get("max_completion_length", 256))
    stops = task.stop_patterns if recipe.run.stop_at_answer else ()
    backend = HFBackend(model, tokenizer, stops, batch_size)  # no stop_strings: training keeps the text as cut
    texts = render_prompts(prompts, tokenizer)
    seed = int(grpo.get("seed", 42))
    sampled_setting = Sampling(int(grpo.get("num_generations", 8)), float(grpo.get("temperature", 1.0)),
                               float(grpo.get("top_p", 1.0)), limit, seed)
    if sampled_setting.greedy:
        raise RlvrError("rlvr probe samples at grpo.temperature; it is 0 (greedy), which GRPO cannot learn from.")
    with tqdm(total=len(texts), desc="probe: greedy", unit="prompt", file=sys.stderr, disable=not progress) as bar:
        greedy = [row[0] for row in backend.generate(texts, Sampling(1, 0.0, 1.0, limit, seed), bar)]
    with tqdm(total=len(texts), desc="probe: sampling", unit="prompt", file=sys.stderr, disable=not progress) as bar:
        sampled = backend.generate(texts, sampled_setting, bar)
    return greedy, sampled


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
        figures[name] = {"greedy": _share([fact(task, o, name) for o in judged.greedy]),
                         "pass_at_1": _share([h for group in held for h in group]),
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


def figures_from(task: Any, recipe: Any, rows: Sequence[Mapping[str, Any]], greedy: Sequence[Any],
                 sampled: Sequence[Sequence[Any]], totals: Sequence[Sequence[float]],
                 train_golds: Sequence[str] | None = None, judged: Judged | None = None) -> Figures:
    """The figures from generations (``.text``, ``.tokens``, ``.stopped``) and their reward totals
    (``judged``: their outcomes when already judged, by :func:`judge_generations`; ``train_golds``: the train
    split's gold answers, for the constant answer and a choice task's chance)."""
    import re

    g = len(sampled[0]) if sampled else 0
    if judged is None:
        judged = judge_generations(task, rows, greedy, sampled)
    greedy_outcomes = judged.greedy
    flat = [(row, x) for row, group in zip(rows, sampled, strict=True) for x in group]
    outcomes = [o for group in judged.sampled for o in group]
    correct = [[o.correct for o in group] for group in judged.sampled]
    stops = [re.compile(p, re.MULTILINE) for p in (task.stop_patterns if recipe.run.stop_at_answer else ())]
    at_answer = [x.stopped and any(p.search(x.text) for p in stops) for _, x in flat]
    n = max(1, len(flat))
    truncated = sum(not x.stopped for _, x in flat) / n
    zero = zero_variance_shares(totals, correct)
    chance = None
    if is_choice_task(task):
        chance = choice_chance([task.shown_gold(r) or "" for r in rows], train_golds or [], option_counts(task, rows), g)
    return Figures(
        items=len(rows), group_size=g, max_tokens=int(recipe.grpo.get("max_completion_length", 256)),
        greedy_accuracy=_share([o.correct for o in greedy_outcomes]),
        greedy_format_rate=_form_rate(greedy_outcomes),
        pass_at_1=_share([c for group in correct for c in group]), pass_at_g=pass_at_g(correct),
        format_rate=_form_rate(outcomes), truncated=truncated,
        stopped_at_answer=sum(at_answer) / n, ended_eos=1 - truncated - sum(at_answer) / n,
        mean_tokens=sum(x.tokens for _, x in flat) / n,
        groups_all_right=sum(all(c) for c in correct) / max(1, len(correct)),
        groups_all_wrong=sum(not any(c) for c in correct) / max(1, len(correct)),
        zero_variance=zero["zero_variance"], zero_variance_all_right=zero["all_right"],
        zero_variance_all_wrong=zero["all_wrong"], zero_variance_other=zero["other"], chance=chance,
        constant=constant_on(task, rows, train_golds), flags=flag_figures(task, judged),
        answer_in_prompt=answer_in_prompt(task, rows),
    )


def constant_on(task: Any, rows: Sequence[Mapping[str, Any]], train_golds: Sequence[str] | None) -> dict[str, Any] | None:
    """Always giving the train split's most common answer, on ``rows`` (the held-out verdict's baseline, here on
    the probed items); None where items have no one gold answer or the train answers are not known."""
    from rlvr.evaluation.baselines import constant_answer_accuracy

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
    return [str(g) for g in task.load("train")["final_answer"]]


def _share(values: Sequence[bool]) -> float:
    return sum(values) / len(values) if values else 0.0


def _form_rate(outcomes: Sequence[Any]) -> float | None:
    forms = [o.well_formed for o in outcomes if o.well_formed is not None]
    return sum(forms) / len(forms) if forms else None


def prepare(task: Any, recipe: Any, items: int, dataset: Any = None,
            option: str = "--items") -> tuple[list[dict[str, Any]], int | None]:
    """(the rows to probe, how many gold answers the verifier reads): the checks that need no model, done first."""
    task.reward_functions(recipe.rewards)  # a reward the task cannot serve fails now, not after generation
    rows = training_rows(task, recipe.run.difficulty_filter, items, dataset, option, recipe.grpo)
    return rows, check_gold(task, rows)


def probe(model: Any, tokenizer: Any, task: Any, recipe: Any, rows: Sequence[dict[str, Any]], batch_size: int,
          gold_read: int | None = None, progress: bool = False) -> Probe:
    """Probe ``model`` (the base) on ``rows``, the first training rows of ``recipe``'s task (:func:`prepare`)."""
    import time

    start = time.time()
    greedy, sampled = generate(model, tokenizer, task, recipe, [r["prompt"] for r in rows], batch_size, progress)
    texts = [[x.text for x in group] for group in sampled]
    totals = reward_totals(task, recipe, rows, texts, tokenizer)
    train_golds = train_answers(task, rows)
    judged = judge_generations(task, rows, greedy, sampled)
    figures = figures_from(task, recipe, rows, greedy, sampled, totals, train_golds, judged)
    filtered = " kept by run.difficulty_filter" if recipe.run.difficulty_filter else ""
    info = {
        "recipe": recipe.name, "model": recipe.model.name_or_path, "task": recipe.task_name,
        "rows": f"the first {len(rows)} training rows{filtered}, in the order training draws them",
        "gold_readable": gold_read,
        "seconds": round(time.time() - start, 1),
        "thresholds": {"too_long": TOO_LONG, "format_bound": FORMAT_BOUND, "chance_z": CHANCE_Z,
                       "too_hard": TOO_HARD, "too_easy": TOO_EASY, "constant_prone": CONSTANT_PRONE,
                       "computed": COMPUTED, "formed": FORMED, "computed_mixed": COMPUTED_MIXED,
                       "gold_readable": GOLD_READABLE},
    }
    return Probe(figures, verdict(figures, bool(getattr(task, "chat", False))), info, item_records(task, rows, judged))


# ----------------------------------------------------------------------------- showing


def table(result: Probe) -> str:
    """The console table: one figure a line."""
    f = result.figures
    g = f.group_size

    def pct(value: float | None) -> str:
        return "n/a (no answer form)" if value is None else f"{value:.1%}"

    lines = [
        f"rlvr probe: {result.info.get('rows', f'{f.items} training rows')}, base model, groups of {g}",
        f"  greedy accuracy           {pct(f.greedy_accuracy)}   format {pct(f.greedy_format_rate)}",
        f"  sampled pass@1            {pct(f.pass_at_1)}   pass@{g} {pct(f.pass_at_g)}   format {pct(f.format_rate)}",
        f"  completions               {f.mean_tokens:.1f} tokens mean; cut at {f.max_tokens}: {pct(f.truncated)}, "
        f"stopped at the answer: {pct(f.stopped_at_answer)}, ended by EOS: {pct(f.ended_eos)}",
        f"  groups (judge)            all right {pct(f.groups_all_right)}   all wrong {pct(f.groups_all_wrong)}",
        f"  zero-variance groups      {pct(f.zero_variance)} (all right {pct(f.zero_variance_all_right)}, "
        f"all wrong {pct(f.zero_variance_all_wrong)}, other {pct(f.zero_variance_other)})",
    ]
    lines += [f"  {name:<25} greedy {pct(x['greedy'])}   pass@1 {pct(x['pass_at_1'])}   "
              f"pass@{g} {pct(x['pass_at_g'])}" for name, x in f.flags.items()]
    if f.constant is not None:
        lines.append(f"  constant answer           {pct(f.constant['accuracy'])} always answering {f.constant['answer']!r} "
                     f"(the train split's most common)")
    if f.answer_in_prompt is not None:
        lines.append(f"  answers in the question   {pct(f.answer_in_prompt)} beyond chance (own question vs another's)")
    if f.chance is not None:
        c = f.chance
        lines.append(f"  chance                    {pct(c.chance)} ({c.options:.1f} options, {c.options_from}); "
                     f"always {c.majority_letter}: {pct(c.majority_accuracy)}; guessing pass@{g} {pct(c.random_pass_at_g)}")
    lines.append(f"  verdict                   {result.verdict.line()}")
    return "\n".join(lines)


def one_line(result: Probe) -> str:
    """The verdict and its figures in one line (``rlvr train`` with ``run.probe_items``)."""
    f = result.figures
    return (f"rlvr probe ({f.items} items): {result.verdict.line()} [greedy {f.greedy_accuracy:.0%}, pass@1 "
            f"{f.pass_at_1:.0%}, pass@{f.group_size} {f.pass_at_g:.0%}, zero-variance {f.zero_variance:.0%}, "
            f"cut {f.truncated:.0%}]")


# ----------------------------------------------------------------------------- before training (run.probe_items)


def before_training(trainer: Any, recipe: Any) -> dict[str, Any] | None:
    """``run.probe_items``: probe the trainer's model with its adapter disabled (the base) on the rows it trains on,
    print one line, and return probe.json's content for the summary (None: no probe).

    The rows are checked on every process (a bad count fails everywhere alike); the main process decodes while
    the others wait. Under DeepSpeed the weights are partitioned across processes: skipped, with a line.
    """
    import contextlib

    items = recipe.run.probe_items
    if not items:
        return None
    accelerator = trainer.accelerator
    if getattr(trainer, "is_deepspeed_enabled", False):
        if accelerator.is_main_process:
            print("rlvr: run.probe_items: skipped under DeepSpeed (partitioned weights); run `rlvr probe` on the "
                  "recipe before training instead.", flush=True)
        return None
    rows, gold_read = prepare(trainer.task, recipe, items, trainer.train_dataset, "run.probe_items")
    result = None
    if accelerator.is_main_process:
        import torch

        from rlvr.memory import release_memory
        from rlvr.training.evaluation import whole_model

        # fork_rng: sampling here seeds torch's generator; training's rollouts draw as they would without the probe.
        with torch.random.fork_rng(), whole_model(trainer) as model:
            base = model.disable_adapter() if hasattr(model, "disable_adapter") else contextlib.nullcontext()
            with base:
                result = probe(model, trainer.processing_class, trainer.task, recipe, rows, recipe.run.eval_batch_size,
                               gold_read)
        release_memory(collect=True)
        print(one_line(result), flush=True)
    accelerator.wait_for_everyone()
    return result.to_json() if result is not None else None
