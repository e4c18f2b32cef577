"""Answer-line verifier on hostile 1 MB completions: seconds per completion (target: well under 1 s).

    python benchmarks/verifier_speed.py

Side by side with the published recipe's answer extraction (last number anywhere in the text) on the same inputs.
"""

from __future__ import annotations

import re
import time

from rlvr.verifiers.math import read_answer

MB = 1_000_000
INPUTS = {
    "letters": "a" * MB,
    "newlines": "\n" * MB,
    "spaces then #": " " * MB + "#",
    "answer line of spaces": "x\n#### " + " " * MB + "#",
    "number spam": "x\n#### " + "1 " * (MB // 2),
    "one huge number": "x\n#### " + "1" * MB,
    "comma run": "x\n#### " + "1," * (MB // 2),
    "hash marks": "#" * MB,
    "sign and currency run": "x\n####" + "-$" * (MB // 2),
    "honest + 1 MB ramble": "3 + 4 = 7.\n#### The final answer is 7\n" + "Question: more? " * (MB // 16),
}
PUBLISHED_LAST_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def seconds(func, text: str) -> float:
    start = time.perf_counter()
    func(text)
    return time.perf_counter() - start


def main() -> None:
    print(f"{'input (1 MB)':26}{'rlvr verifier s':>16}{'last-number regex s':>21}")
    worst = 0.0
    for name, text in INPUTS.items():
        ours = seconds(read_answer, text)
        theirs = seconds(PUBLISHED_LAST_NUMBER.findall, text)
        worst = max(worst, ours)
        print(f"{name:26}{ours:16.4f}{theirs:21.4f}")
    print(f"worst case: {worst:.4f} s per 1 MB completion")


if __name__ == "__main__":
    main()
