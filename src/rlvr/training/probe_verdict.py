"""``rlvr probe``'s verdict: the figures it measures, the thresholds, and the rules that turn figures into one word.

:func:`verdict` turns the figures into one word and the recipe change it suggests (a pure function: no model, no
I/O, so a recorded probe.json can be judged again by today's rules). The figures are measured by
:mod:`rlvr.training.probe` and counted by :mod:`rlvr.training.probe_figures`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

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


def verdict(f: Figures, chat: bool = False, easier: str | None = None) -> Verdict:
    """The one word for ``f``, checked in order: too long, format-bound, at chance, too hard, too easy,
    constant-prone, computed, learnable.

    Too long comes first because a cut completion also reads as unformatted and wrong; format before
    difficulty because an unformatted completion is judged wrong whatever it knows. ``chat``: the task's prompt
    is already the chat template (then format-bound does not suggest it). ``easier``: what too hard suggests first
    (:func:`easier_start`).
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
                       f"{f.pass_at_g:.0%})", (f"{easier}; or " if easier else "")
                       + "more exemplars, easier items (rlvr filter), or a larger model")
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


def easier_start(task: Any, recipe: Any) -> str:
    """Too hard's first suggestion: the task's curriculum where it has one it does not use (reasoning-gym), else
    online prompt selection where the recipe does not draw by it (:mod:`rlvr.training.prompt_selection`)."""
    if getattr(task, "curriculum_possible", None) and task.level_plans() is None and task.curriculum_possible():
        return (f"train through {task.label}'s curriculum, its easier levels first (task.curriculum: on; the last "
                "level is this config)")
    if recipe.run.prompt_selection != "online":
        return "draw the prompts that give mixed groups (run.prompt_selection: online)"
    return ""


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
