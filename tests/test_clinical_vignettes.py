"""Templated clinical vignettes: deterministic, distinct, sensible for each condition, apart from the 48."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from rlvr.errors import RlvrError
from rlvr.tasks import clinical_vignettes
from rlvr.tasks.clinical_vignettes import (
    PER_CONDITION,
    generate_vignettes,
    handwritten_prompts,
    normalise,
    skeleton,
)
from rlvr.tasks.vignette_conditions import load_conditions

PATIENT = re.compile(r"\b([Aa]n?) (\d+)-(year|month)-old (man|woman|boy|girl)\b")
MALE_WORDS = re.compile(r"\b(he|his|him|himself)\b", re.IGNORECASE)
FEMALE_WORDS = re.compile(r"\b(she|her|hers|herself)\b", re.IGNORECASE)
SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z]|$)")


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return generate_vignettes()


@pytest.fixture(scope="module")
def conditions() -> dict:
    return {condition.name: condition for condition in load_conditions()}


def patient(prompt: str) -> tuple[str, int, str, str]:
    """(article, age, unit, noun) of the patient a vignette is about."""
    found = PATIENT.search(prompt)
    assert found, prompt
    article, age, unit, noun = found.groups()
    return article, int(age), unit, noun


def test_same_seed_gives_the_same_rows(rows):
    assert generate_vignettes(seed=0) == rows


def test_another_seed_gives_other_prompts(rows):
    other = generate_vignettes(seed=1)
    assert [row["prompt"] for row in other] != [row["prompt"] for row in rows]
    assert {row["prompt"] for row in other} != {row["prompt"] for row in rows}


def test_whole_set_allows_a_test_split_of_200_and_more(rows, conditions):
    assert len(rows) == PER_CONDITION * len(conditions)
    assert 600 <= len(rows) <= 900


def test_prompts_are_distinct_by_normalised_text(rows):
    assert len({normalise(row["prompt"]) for row in rows}) == len(rows)


def test_prompts_differ_in_words_not_only_in_numbers(rows):
    blanked = {re.sub(r"\d+(\.\d+)?", "#", normalise(row["prompt"])) for row in rows}
    assert len(blanked) == len(rows)


def test_count_gives_the_first_rows_of_the_whole_set(rows):
    assert generate_vignettes(count=50) == rows[:50]


@pytest.mark.parametrize("count", [-1, 10_000])
def test_count_out_of_range_is_a_one_line_error(count):
    with pytest.raises(RlvrError) as error:
        generate_vignettes(count=count)
    assert "\n" not in str(error.value) and str(count) in str(error.value)


def test_every_condition_appears_within_the_first_two_rounds(rows, conditions):
    assert {row["condition"] for row in rows[: 2 * len(conditions)]} == set(conditions)


def test_no_prompt_repeats_a_handwritten_one(rows):
    handwritten = {normalise(prompt) for prompt in handwritten_prompts()}
    assert len(handwritten) == 48
    assert not handwritten & {normalise(row["prompt"]) for row in rows}


def test_rows_have_their_fields_and_unique_ids(rows, conditions):
    for row in rows:
        assert set(row) == {"id", "specialty", "condition", "prompt", "findings"}
        assert row["id"].startswith(f"gen-{row['condition']}-")
        assert row["specialty"] == conditions[row["condition"]].specialty
    assert len({row["id"] for row in rows}) == len(rows)


def test_ages_fit_the_condition(rows, conditions):
    for row in rows:
        condition = conditions[row["condition"]]
        _, age, unit, _ = patient(row["prompt"])
        assert unit == ("month" if condition.in_months else "year"), row
        assert condition.ages[0] <= age <= condition.ages[1], row


def test_sexes_fit_the_condition(rows, conditions):
    for row in rows:
        _, _, _, noun = patient(row["prompt"])
        sex = "male" if noun in ("man", "boy") else "female"
        assert sex in conditions[row["condition"]].sexes, row


def test_pronouns_follow_the_patients_sex(rows):
    for row in rows:
        _, _, _, noun = patient(row["prompt"])
        wrong = FEMALE_WORDS if noun in ("man", "boy") else MALE_WORDS
        assert not wrong.search(row["prompt"]), row


def test_pregnancy_and_periods_only_in_women(rows):
    for row in rows:
        if re.search(r"pregnan|period", row["prompt"]):
            _, age, _, noun = patient(row["prompt"])
            assert noun == "woman" and age >= 18, row


def test_paediatric_conditions_are_about_children(rows):
    children = [row for row in rows if row["specialty"] == "paediatrics"]
    assert children
    for row in children:
        _, age, unit, noun = patient(row["prompt"])
        assert noun in ("boy", "girl") and (unit == "month" or age < 16), row


def test_adults_are_called_men_and_women(rows):
    for row in rows:
        _, age, unit, noun = patient(row["prompt"])
        assert (noun in ("man", "woman")) == (unit == "year" and age >= 18), row


def test_article_fits_the_age(rows):
    for row in rows:
        article, age, _, _ = patient(row["prompt"])
        vowel_sound = str(age).startswith("8") or age in (11, 18)
        assert article.lower() == ("an" if vowel_sound else "a"), row


def test_no_prompt_names_its_condition(rows):
    for row in rows:
        assert row["condition"].replace("-", " ") not in row["prompt"].lower(), row


def test_prompts_are_two_to_four_filled_sentences(rows):
    for row in rows:
        prompt = row["prompt"]
        assert 2 <= len(SENTENCE_END.findall(prompt)) <= 4, prompt
        assert "{" not in prompt and "}" not in prompt and prompt[0].isupper(), prompt


# ------------------------------------------------------------- a subset of conditions, more vignettes each

SUBSET = ["acne-vulgaris", "gout", "croup"]


def test_a_subset_gives_only_its_conditions_rows_as_in_the_whole_set(rows):
    subset = generate_vignettes(conditions=SUBSET)
    assert subset == [row for row in rows if row["condition"] in SUBSET]  # the same vignettes, ids and order


def test_a_subset_gives_per_condition_rows_for_each_of_its_conditions():
    subset = generate_vignettes(conditions=SUBSET, per_condition=7)
    assert len(subset) == len(SUBSET) * 7
    assert Counter(row["condition"] for row in subset) == dict.fromkeys(SUBSET, 7)


def test_an_unknown_condition_is_a_one_line_error_naming_the_nearest():
    with pytest.raises(RlvrError) as error:
        generate_vignettes(conditions=["gout", "acne"])
    assert "\n" not in str(error.value) and "'acne'" in str(error.value) and "acne-vulgaris" in str(error.value)


@pytest.mark.parametrize(("conditions", "message"), [([], "non-empty list"), (["gout", "gout"], "'gout' twice")])
def test_an_empty_or_repeating_condition_list_is_an_error(conditions, message):
    with pytest.raises(RlvrError, match=message):
        generate_vignettes(conditions=conditions)


def test_more_per_condition_continues_each_condition_with_words_distinct_from_all(rows):
    more = generate_vignettes(conditions=SUBSET, per_condition=60)
    assert len(more) == 60 * len(SUBSET) and len({skeleton(row["prompt"]) for row in more}) == len(more)
    first = [row for row in more if int(row["id"].rsplit("-", 1)[1]) <= PER_CONDITION]
    assert first == [row for row in rows if row["condition"] in SUBSET]  # the first 20 of each are the default's


def test_no_two_conditions_come_near_sharing_a_vignette():
    """Vignettes are kept distinct across conditions, so a subset could only change a kept condition's vignettes if
    two conditions shared words; drawn each on its own, none does, even with 100 vignettes each."""
    handwritten = {skeleton(prompt) for prompt in handwritten_prompts()}
    drawn = [skeleton(prompt) for condition in load_conditions()
             for prompt in clinical_vignettes._condition_prompts(condition, 0, set(handwritten), 100)]
    assert len(set(drawn)) == len(drawn) == 100 * len(load_conditions())


def test_a_condition_short_of_distinct_vignettes_says_which_and_how_many(monkeypatch):
    monkeypatch.setattr(clinical_vignettes, "compose", lambda condition, rng: f"{condition.name} {'ab'[rng.randint(0, 1)]}.")
    with pytest.raises(RlvrError) as error:
        generate_vignettes(conditions=["gout"], per_condition=3)
    message = str(error.value)
    assert "\n" not in message and "'gout' gives only 2 distinct" in message and "vignettes_per_condition: 2" in message
