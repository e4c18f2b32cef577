"""Templated clinical vignettes: deterministic, distinct, sensible for each condition, apart from the 48."""

from __future__ import annotations

import re

import pytest

from rlvr.errors import RlvrError
from rlvr.tasks.clinical_vignettes import (
    PER_CONDITION,
    generate_vignettes,
    handwritten_prompts,
    load_conditions,
    normalise,
)

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
