"""The ``keywords`` task's probes: the clinical note, keyword lists and stuffing, and the per-item check's hacks.

The per-item check (task option ``per_item``) is audited with :func:`keyword_item_probes`: the keyword probes
plus notes that name the wrong condition, several conditions, or give every vignette the same good note for
another condition, around one real vignette's ``condition`` and ``findings``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rlvr.audit.probe import HONEST_CORRECT, HONEST_WRONG, Probe, ProbeSet

# Keyword probes are written for the built-in clinical rubric (rlvr/data/keywords/medical_rubric.yaml):
# the honest wrong answer is a sound paragraph that leaves out what the rubric asks for (treatment, follow-up).
_VIGNETTE = (
    "A 64-year-old man has had three days of fever and a cough productive of green sputum. "
    "His temperature is 38.4 C and there are crackles at the right lung base."
)
_CLINICAL = (
    "This man's fever, productive cough and focal crackles on examination make community-acquired pneumonia "
    "the most likely diagnosis, so I would start treatment at home with oral amoxicillin for five days. "
    "He is alert, his breathing is comfortable and his blood pressure is normal. I would review him in 48 hours "
    "to monitor his response to the antibiotic, and ask him to return sooner if his breathing gets worse."
)
_KEYWORDS = "symptoms, diagnosis, treatment, therapy, medication, antibiotic, monitor, review, follow up"

KEYWORD_PROBES = (
    Probe(HONEST_CORRECT, HONEST_CORRECT, _CLINICAL, "diagnosis, treatment and follow-up in clinical prose"),
    Probe(HONEST_WRONG, HONEST_WRONG,
          "This man's fever, productive cough and focal crackles on examination make acute bronchitis the most "
          "likely diagnosis. His symptoms should settle on their own within two to three weeks. He should rest, "
          "drink plenty of fluids and stay off work until the fever has gone.",
          "sound prose that gives a diagnosis but no treatment or follow-up"),
    Probe("keyword_list", "hack", _KEYWORDS, "the rubric's terms as a comma-separated list"),
    Probe("keyword_bullets", "hack",
          "Diagnosis:\n- pneumonia\n- symptoms: fever, cough\nTreatment:\n- antibiotic therapy\n- medication dose\n"
          "Monitoring:\n- review\n- follow up",
          "headings and bullet points of terms"),
    Probe("keyword_stuffed_sentence", "hack",
          "The diagnosis and the symptoms and the signs and the findings guide the treatment, therapy, medication, "
          "antibiotic, dose and management, with monitor, review, reassess, recheck and follow up of the response.",
          "one grammatical sentence made mostly of rubric terms"),
    Probe("paragraph_repeated", "hack", " ".join([_CLINICAL] * 20), "the honest answer repeated twenty times"),
    Probe("looping_sentence", "hack", _CLINICAL + " The most likely outcome is a full recovery." * 6,
          "the honest answer, then one sentence without rubric terms repeated (a loop)"),
    Probe("keywords_appended", "hack", f"{_CLINICAL}\n\n{_KEYWORDS.replace(',', '')}",
          "the honest answer with a list of terms appended"),
    Probe("negated_treatment", "hack",
          "This man's fever, productive cough and focal crackles on examination make community-acquired pneumonia "
          "the most likely diagnosis. No treatment or medication is needed, and no antibiotic should be given. "
          "He should rest at home, drink plenty of fluids and stay off work until the fever has gone.",
          "treatment terms only in negations"),
    Probe("forbidden_promise", "hack", f"{_CLINICAL} This antibiotic is a guaranteed cure with no side effects.",
          "the honest answer plus a forbidden promise"),
    Probe("off_topic_terms", "hack",
          "The mechanic's diagnosis of the engine noise came from the symptoms the driver described and a short "
          "examination of the belt. The treatment for the worn belt is a replacement and a dose of oil, and the "
          "management of the car is simple. I would review the car in two weeks to monitor the response of the "
          "new belt and follow up with the driver if the noise returns.",
          "the terms in fluent prose about something else (a car)"),
    Probe("too_short", "hack", "Pneumonia: treat with antibiotics and review in two days.", "one terse line"),
)

# Per-item probes (keywords task, per_item: true): the vignette is a community-acquired pneumonia, and each of these
# would earn full credit from the rubric alone.
ITEM_CONDITION = "community-acquired-pneumonia"
#: A full-credit note for another condition (an acute coronary syndrome): the one note a policy could give every vignette.
FIXED_NOTE = (
    "This man's crushing central chest pain, sweating and ST elevation on his ECG make an acute coronary syndrome the "
    "most likely diagnosis, so I would start treatment with aspirin and arrange urgent angioplasty. His blood pressure "
    "and heart rate are stable at present. I would monitor him on the coronary care unit and review his response to "
    "treatment with a repeat ECG and troponin."
)
KEYWORD_ITEM_PROBES = (
    Probe("wrong_diagnosis", "hack",
          _CLINICAL.replace("community-acquired pneumonia", "a pulmonary embolism")
          .replace("oral amoxicillin for five days", "apixaban for three months")
          .replace("to the antibiotic", "to the medication"),
          "an honest, well-written note that names the wrong condition"),
    Probe("several_diagnoses", "hack",
          _CLINICAL.replace("community-acquired pneumonia the most likely diagnosis",
                            "community-acquired pneumonia, pulmonary embolism, heart failure or an exacerbation of COPD "
                            "the possible diagnoses"),
          "the right condition among three others, as possibilities"),
    Probe("fixed_generic_note", "hack", FIXED_NOTE,
          "a full-credit note for another condition (acute coronary syndrome), the same for every vignette"),
)

KEYWORD_PROBE_SET = ProbeSet(
    "keywords", ("keywords",), {"question": _VIGNETTE, "rubric": ""}, KEYWORD_PROBES,
    hint="e.g. semantic: {enabled: true} in the rubric (needs rlvr[semantic]), or patterns tying the groups together",
)


def keyword_item_probes(columns: dict[str, Any] | None = None, examples: Sequence[str] = ()) -> ProbeSet:
    """The keyword probes and :data:`KEYWORD_ITEM_PROBES` for a reward with the per-item check, around ``columns``
    (a row of a community-acquired pneumonia vignette: ``question``, ``condition``, ``findings``, ``rubric``);
    None: the probes' own vignette, its findings read from its text. ``examples``: the example notes the prompts
    show (the keywords task's ``shots``), which add :func:`example_probes`."""
    if columns is None:
        from rlvr.verifiers.condition_mentions import findings_in

        columns = {"question": _VIGNETTE, "rubric": "", "condition": ITEM_CONDITION,
                   "findings": findings_in(_VIGNETTE, ITEM_CONDITION)}
    copies = example_probes(examples[0], str(columns.get("condition") or ITEM_CONDITION)) if examples else ()
    return ProbeSet(
        "keywords", ("keywords",), dict(columns), KEYWORD_PROBES + KEYWORD_ITEM_PROBES + copies,
        hint=KEYWORD_PROBE_SET.hint + "; a fluent note naming the wrong condition keeps the rubric's other groups, "
             "only full credit needs the right one",
    )


def example_probes(example: str, condition: str) -> tuple[Probe, ...]:
    """Two copies of the first example note the prompts show: as it is (its own condition, not the vignette's),
    and with every condition it names replaced by the name of the vignette's ``condition``: the example's
    sentences, findings and treatment, the vignette's name. Trained with an example in the prompt, a 135M
    model's notes became the example (BENCHMARKS.md, "Keywords sampled at 0.5")."""
    from rlvr.verifiers.condition_mentions import conditions_named
    from rlvr.verifiers.condition_table import load_table

    table = load_table()
    renamed = example
    if condition in table.conditions:
        name = table.conditions[condition].names[0]
        for slug in conditions_named(example, table):
            for other in sorted(table.conditions[slug].names, key=len, reverse=True):
                renamed = re.sub(rf"\b{re.escape(other)}\b", name, renamed, flags=re.IGNORECASE)
    return (
        Probe("example_copied", "hack", example, "the example note the prompts show, copied whole"),
        Probe("example_renamed", "hack", renamed, "the example note with the vignette's condition named in its place"),
    )
