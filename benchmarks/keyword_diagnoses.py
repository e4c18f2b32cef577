"""Does a keywords run name the right condition? A check the rubric does not make.

The keyword rubric rewards the terms of a clinical assessment in real sentences, not a correct diagnosis.
This script reads the before/after test samples of `rlvr train keywords-cpu-smollm2` runs (generated
vignettes, whose ids carry the condition: ``gen-<condition>-<n>``) and counts the completions that name
the vignette's condition by one of its usual names (table below), before and after training, with
McNemar's exact test. A name the vignette itself uses does not count for that row (a restated symptom such
as "back pain" is not a diagnosis). The names are regular expressions matched anywhere in the completion,
so a note that lists several diagnoses counts when one is right: an upper bound on "right diagnosis".

    python benchmarks/keyword_diagnoses.py RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from rlvr.evaluation.stats import mcnemar_exact, paired_counts

NAMES = {
    "acute-coronary-syndrome": [
        r"acute coronary syndrome",
        r"myocardial infarction",
        r"heart attack",
        r"n?stemi\b",
        r"unstable angina",
        r"\bacs\b",
    ],
    "heart-failure": [r"heart failure", r"cardiac failure", r"\bchf\b"],
    "atrial-fibrillation": [r"atrial fibrillation", r"\baf\b", r"a-?fib\b"],
    "community-acquired-pneumonia": [r"pneumonia"],
    "asthma-exacerbation": [r"asthma"],
    "copd-exacerbation": [r"\bcopd\b", r"chronic obstructive", r"emphysema", r"chronic bronchitis"],
    "pulmonary-embolism": [r"pulmonary embol", r"\bpe\b"],
    "acute-appendicitis": [r"appendicitis"],
    "peptic-ulcer-disease": [r"ulcer"],
    "acute-pancreatitis": [r"pancreatitis"],
    "acute-cholecystitis": [r"cholecystitis", r"gallstone", r"biliary colic"],
    "type-2-diabetes": [r"diabet"],
    "diabetic-ketoacidosis": [r"ketoacidosis", r"\bdka\b"],
    "hypothyroidism": [r"hypothyroid"],
    "hyperthyroidism": [r"hyperthyroid", r"thyrotoxicosis", r"graves"],
    "ischaemic-stroke": [r"stroke", r"cerebrovascular accident", r"transient isch(a)?emic", r"\btia\b"],
    "migraine": [r"migraine"],
    "parkinsons-disease": [r"parkinson"],
    "subarachnoid-haemorrhage": [
        r"subarachnoid",
        r"\bsah\b",
        r"(brain|intracranial|cerebral) (ha)?emorrhage",
        r"aneurysm",
    ],
    "lower-urinary-tract-infection": [r"urinary tract infection", r"\buti\b", r"cystitis"],
    "cellulitis": [r"cellulitis"],
    "meningococcal-disease": [r"meningococc", r"meningitis", r"septic(a)?emia", r"sepsis"],
    "streptococcal-tonsillitis": [r"tonsillitis", r"strep throat", r"pharyngitis", r"streptococc"],
    "renal-colic": [
        r"renal colic",
        r"kidney stone",
        r"renal stone",
        r"ureteric (stone|colic)",
        r"nephrolithiasis",
        r"urolithiasis",
    ],
    "benign-prostatic-hyperplasia": [
        r"prostatic (hyperplasia|hypertrophy|enlargement)",
        r"enlarged prostate",
        r"\bbph\b",
    ],
    "gout": [r"\bgout"],
    "knee-osteoarthritis": [r"osteoarthritis"],
    "rheumatoid-arthritis": [r"rheumatoid"],
    "mechanical-low-back-pain": [r"back pain", r"back strain", r"lumbar strain", r"mechanical"],
    "iron-deficiency-anaemia": [r"an(a)?emia"],
    "acne-vulgaris": [r"\bacne"],
    "psoriasis": [r"psoria"],
    "atopic-eczema": [r"eczema", r"atopic dermatitis"],
    "depression": [r"depressi"],
    "generalised-anxiety-disorder": [r"anxiety"],
    "croup": [r"\bcroup", r"laryngotracheobronchitis"],
    "bronchiolitis": [r"bronchiolitis"],
    "acute-otitis-media": [r"otitis", r"ear infection"],
    "pre-eclampsia": [r"pre-?eclampsia", r"gestational hypertension", r"pregnancy-induced hypertension"],
    "ectopic-pregnancy": [r"ectopic"],
    "acute-angle-closure-glaucoma": [r"glaucoma"],
    "anaphylaxis": [r"anaphyla"],
}
_ID = re.compile(r"^gen-(.+)-\d+$")


def names_condition(condition: str, vignette: str, completion: str) -> bool:
    """Whether ``completion`` names ``condition`` by a name that ``vignette`` does not already use."""
    names = [n for n in NAMES[condition] if not re.search(n, vignette, re.I)]
    return any(re.search(n, completion, re.I) for n in names)


def named_by_step(samples: Path) -> dict[int, dict[str, bool]]:
    """Per evaluation step, per test row id: whether its completion names the row's condition."""
    by_step: dict[int, dict[str, bool]] = {}
    for number, line in enumerate(samples.read_text().splitlines(), 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise SystemExit(f"{samples}:{number}: not a JSON object ({error.msg})") from None
        match = _ID.match(str(row.get("id", "")))
        if not match:
            continue  # a hand-written or user vignette: no condition in its id
        if match.group(1) not in NAMES:
            raise SystemExit(f"condition {match.group(1)!r} has no names in the NAMES table: add them")
        named = names_condition(match.group(1), row.get("question") or "", row.get("completion") or "")
        by_step.setdefault(row["step"], {})[row["id"]] = named
    return by_step


def report(run: Path) -> str:
    samples = run / "test_samples.jsonl"
    if not samples.is_file():
        raise SystemExit(
            f"{samples} not found: give the output directory of an `rlvr train` run of the keywords task"
        )
    by_step = named_by_step(samples)
    if len(by_step) < 2:
        return f"{run}: needs a before and an after evaluation of generated vignettes"
    first, last = min(by_step), max(by_step)
    ids = sorted(set(by_step[first]) & set(by_step[last]))
    before = [by_step[first][i] for i in ids]
    after = [by_step[last][i] for i in ids]
    _, lost, gained, _ = paired_counts(before, after)
    p = mcnemar_exact(gained, lost)
    return (
        f"{run}: names the condition {sum(before) / len(ids):.1%} -> {sum(after) / len(ids):.1%} of {len(ids)} "
        f"(now right {gained} / now wrong {lost}, McNemar p = {p:.2g})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="output directories of keywords runs")
    for run in parser.parse_args(argv).runs:
        print(report(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
