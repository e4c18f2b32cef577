"""Templated clinical vignettes: enough prompts for a verdict on the ``keywords`` task.

The 48 hand-written vignettes are too few to learn from and to judge on: a held-out
test split of 200 or more prompts needs several hundred. This module composes them
from a table of common conditions (``rlvr/data/keywords/conditions.yaml``, read by
:mod:`rlvr.tasks.vignette_conditions`): each
condition gives fitting ages and sexes, symptoms in two phrasings, examination and
test findings with plausible numbers, history and durations. A vignette draws an
opening frame, a subset of the symptoms in shuffled order, a subset of the findings
and maybe one history sentence, in the 2-4 sentence style of the hand-written ones,
never naming the diagnosis.

Vignettes are kept only when their words differ from every other's once numbers are
ignored, so splits made by text are disjoint in substance, not just in an age or a
heart rate; none matches a hand-written vignette, which stay a test set of their own.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from typing import Any

from rlvr.errors import RlvrError
from rlvr.tasks.vignette_conditions import (
    CONDITIONS_PATH,
    DATA,
    Condition,
    load_conditions,
    select_conditions,
)
from rlvr.verifiers.condition_mentions import findings_in

HANDWRITTEN_PATH = DATA / "medical_prompts.jsonl"

#: Vignettes per condition in the whole set (the default; ``per_condition`` of :func:`generate_vignettes`).
PER_CONDITION = 20
#: Draws per condition before giving up on finding enough distinct vignettes. Nearly every draw is distinct (each
#: condition of the table gives 4,900+ distinct vignettes in 5,000 draws), so this bounds ``per_condition`` too.
MAX_DRAWS = 5000
#: Chance that a vignette gets a history sentence, when its condition has any.
HISTORY_CHANCE = 0.6
#: Chance that two or more findings are split over two sentences.
SPLIT_FINDINGS_CHANCE = 0.4

PRONOUNS = {
    "male": {"he": "he", "his": "his", "him": "him"},
    "female": {"he": "she", "his": "her", "him": "her"},
}
NOUNS = {"male": ("man", "boy"), "female": ("woman", "girl")}
#: Openings by setting; {P} is the patient with an article, {S} the symptoms, {D} the duration.
FRAMES = {
    "any": [
        "{P} presents with {S} that began {D} ago.",
        "{P} has had {S} for {D}.",
        "{P} reports {D} of {S}.",
        "{D} ago, {p} developed {S}.",
        "{P} describes {S}, which started {D} ago.",
    ],
    "acute": [
        "{P} attends the emergency department with {D} of {S}.",
        "You are asked to see {p} because of {S} that started {D} ago.",
        "{P} is brought to the emergency department with {S} that came on {D} ago.",
    ],
    "clinic": [
        "You see {p} in clinic because of {S} that have gone on for {D}.",
        "{P} comes to the surgery with {D} of {S}.",
        "{P} books an appointment about {S}, which have lasted {D}.",
    ],
    "child": [
        "{P} is brought in by {his} {parent} with {S} that began {D} ago.",
        "The {parent} of {p} brings {him} in because of {D} of {S}.",
        "{P} has had {S} for {D}, according to {his} {parent}.",
        "You see {p} whose {parent} reports {S} lasting {D}.",
        "{P} presents with {D} of {S}.",
    ],
}
PARENTS = ["mother", "father", "grandmother"]
CHILD_BELOW_YEARS = 16
PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
RANGE = re.compile(r"(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)")


def normalise(text: str) -> str:
    """Lower-cased text with runs of whitespace made single spaces: the key prompts are compared by."""
    return " ".join(text.lower().split())


def skeleton(text: str) -> str:
    """``normalise`` with every number (and the article it may change) blanked: the words alone."""
    return re.sub(r"\ban\b", "a", re.sub(r"\d+(?:\.\d+)?", "#", normalise(text)))


def handwritten_prompts() -> list[str]:
    """The 48 hand-written vignettes of medical_prompts.jsonl."""
    lines = HANDWRITTEN_PATH.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["prompt"] for line in lines if line.strip()]


def _fill(text: str, rng: random.Random, words: dict[str, str]) -> str:
    """Replace pronoun and word placeholders from ``words`` and ``{a-b}`` by a number drawn in range."""

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key in words:
            return words[key]
        bounds = RANGE.fullmatch(key)
        if bounds is None:
            raise RlvrError(f"{CONDITIONS_PATH}: unknown placeholder {{{key}}} in {text!r}.")
        low, high = bounds.groups()
        decimals = len(low.partition(".")[2])
        steps = round((float(high) - float(low)) * 10**decimals)
        return f"{float(low) + rng.randint(0, steps) / 10**decimals:.{decimals}f}"

    return PLACEHOLDER.sub(value, text)


def _join(parts: list[str]) -> str:
    """'a, b and c'; with a comma before the last 'and' when a part has an 'and' of its own."""
    if len(parts) == 1:
        return parts[0]
    last = ", and " if any(" and " in part for part in parts) else " and "
    return ", ".join(parts[:-1]) + last + parts[-1]


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:]


def _pick(entry: Any, rng: random.Random) -> str:
    """An entry of findings or history: a string, or a list of alternatives to choose from."""
    return rng.choice(entry) if isinstance(entry, list) else entry


def _key_and_some(items: tuple[Any, ...], fewest: int, most: int, rng: random.Random) -> list[Any]:
    """The first (key) item plus a random few of the rest, ``fewest`` to ``most`` in all, shuffled."""
    rest = list(items[1:])
    chosen = [items[0], *rng.sample(rest, rng.randint(fewest - 1, min(most - 1, len(rest))))]
    rng.shuffle(chosen)
    return chosen


def _patient(condition: Condition, rng: random.Random) -> tuple[str, bool, str]:
    """(patient phrase such as 'a 45-year-old woman', whether a child, sex)."""
    sex = rng.choice(condition.sexes)
    age = rng.randint(*condition.ages)
    child = condition.in_months or age < CHILD_BELOW_YEARS
    unit = "month" if condition.in_months else "year"
    noun = NOUNS[sex][1 if condition.in_months or age < 18 else 0]
    article = "an" if str(age).startswith("8") or age in (11, 18) else "a"
    return f"{article} {age}-{unit}-old {noun}", child, sex


def compose(condition: Condition, rng: random.Random) -> str:
    """One vignette of ``condition`` drawn with ``rng``."""
    person, child, sex = _patient(condition, rng)
    words = dict(PRONOUNS[sex], parent=rng.choice(PARENTS))
    if condition.context:
        person += " " + rng.choice(condition.context)
    symptoms = [rng.choice(pair) for pair in _key_and_some(condition.symptoms, 2, 4, rng)]
    setting = condition.setting if condition.setting != "any" else rng.choice(("acute", "clinic"))
    frames = FRAMES["child"] if child else FRAMES["any"] + FRAMES[setting]
    opening = rng.choice(frames).replace("{P}", _sentence(person)).replace("{p}", person)
    opening = opening.replace("{S}", _join(symptoms)).replace("{D}", rng.choice(condition.durations))
    if opening[0].isdigit():  # "18 months ago, ..." reads badly as a sentence start
        opening = "About " + opening
    sentences = [opening]
    if condition.history and rng.random() < HISTORY_CHANCE:
        sentences.append(_pick(rng.choice(condition.history), rng))
    findings = [_pick(entry, rng) for entry in _key_and_some(condition.findings, 1, 3, rng)]
    cut = (
        rng.randint(1, len(findings) - 1)
        if len(findings) > 1 and rng.random() < SPLIT_FINDINGS_CHANCE
        else len(findings)
    )
    sentences += [_join(part) + "." for part in (findings[:cut], findings[cut:]) if part]
    return " ".join(_sentence(_fill(sentence, rng, words)) for sentence in sentences)


def _condition_prompts(
    condition: Condition, seed: int, taken: set[str], per_condition: int = PER_CONDITION
) -> list[str]:
    """``per_condition`` vignettes of ``condition`` whose words differ from everything in ``taken`` (updated).

    The condition's own seeded stream: asking for more continues it, so the first vignettes stay the same.
    """
    rng = random.Random(f"{seed}:{condition.name}")
    prompts: list[str] = []
    for _ in range(MAX_DRAWS):
        prompt = compose(condition, rng)
        if skeleton(prompt) not in taken:
            taken.add(skeleton(prompt))
            prompts.append(prompt)
            if len(prompts) == per_condition:
                return prompts
    raise RlvrError(
        f"clinical vignettes: condition {condition.name!r} gives only {len(prompts)} distinct vignettes in "
        f"{MAX_DRAWS} draws, fewer than the {per_condition} asked for; use vignettes_per_condition: {len(prompts)} "
        "or fewer."
    )


def generate_vignettes(
    count: int | None = None,
    seed: int = 0,
    conditions: Sequence[str] | None = None,
    per_condition: int = PER_CONDITION,
) -> list[dict[str, str]]:
    """``count`` templated vignettes (None: all), the same for the same arguments.

    Rows are ``{"id", "specialty", "condition", "prompt", "findings"}``, interleaved
    across conditions in a seeded order, so any prefix of ``len(conditions)`` rows
    covers every condition once. ``findings`` lists the condition's key findings
    (``key_findings`` in the table) that the vignette states, for the per-item check
    of the ``keywords`` task.

    ``conditions`` (slugs of the table; None: all) keeps only those conditions and
    ``per_condition`` sets how many vignettes each gets. Neither changes a condition's
    own vignettes: each is drawn from the condition's own seeded stream, and a subset
    is the whole set's rows of those conditions in the same order (the interleaving
    shuffles the whole table each round and skips the conditions left out). Asking for
    more per condition continues each stream, so the first ``PER_CONDITION`` rounds
    are the default set's rows. (Vignettes are kept distinct from every earlier one,
    of any condition; no two conditions' vignettes come near sharing their words, so
    that never drops one in practice: a test checks it.)
    """
    chosen = select_conditions(conditions)
    if (
        isinstance(per_condition, bool)
        or not isinstance(per_condition, int)
        or not 1 <= per_condition <= MAX_DRAWS
    ):
        raise RlvrError(
            f"keywords vignettes_per_condition must be an integer from 1 to {MAX_DRAWS} "
            f"(default {PER_CONDITION}), got {per_condition!r}."
        )
    total = per_condition * len(chosen)
    if count is not None and not 0 <= count <= total:
        raise RlvrError(f"clinical vignettes: asked for {count}, but there are 0 to {total} distinct ones.")
    taken = {skeleton(prompt) for prompt in handwritten_prompts()}
    prompts = {
        condition.name: _condition_prompts(condition, seed, taken, per_condition) for condition in chosen
    }
    table = load_conditions()
    order_rng = random.Random(f"{seed}:order")
    rows = []
    for number in range(per_condition):
        for condition in order_rng.sample(table, len(table)):
            if condition.name not in prompts:
                continue
            rows.append(
                {
                    "id": f"gen-{condition.name}-{number + 1}",
                    "specialty": condition.specialty,
                    "condition": condition.name,
                    "prompt": prompts[condition.name][number],
                    "findings": findings_in(prompts[condition.name][number], condition.name),
                }
            )
    return rows if count is None else rows[:count]
