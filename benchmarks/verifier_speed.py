"""Answer-line verifier on hostile 1 MB completions: seconds per completion (target: under 50 ms).

    python benchmarks/verifier_speed.py [--all-parsers]

Side by side with the published recipe's answer extraction (last number anywhere in the text) on the same inputs,
then the worst case of the verifier over the fuzz battery (``rlvr.fuzz``: 1 MB of every character class and of
every token the parsers look for). ``--all-parsers`` also times every other parser of model output on the battery
(code extraction, process and keyword rewards, stop patterns), each call in a watchdog child (a stall shows as inf).
"""

from __future__ import annotations

import argparse
import re
import time

from rlvr.fuzz import adversarial_texts, parsers, time_parsers
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all-parsers", action="store_true")
    args = parser.parse_args()
    print(f"{'input (1 MB)':26}{'rlvr verifier s':>16}{'last-number regex s':>21}")
    worst = 0.0
    for name, text in INPUTS.items():
        ours = seconds(read_answer, text)
        theirs = seconds(PUBLISHED_LAST_NUMBER.findall, text)
        worst = max(worst, ours)
        print(f"{name:26}{ours:16.4f}{theirs:21.4f}")
    print(f"worst case: {worst:.4f} s per 1 MB completion")
    battery = list(adversarial_texts())
    slowest = max((seconds(read_answer, text), name) for name, text in battery)
    print(f"fuzz battery ({len(battery)} inputs of 1 MB): worst verifier case {slowest[0]:.4f} s ({slowest[1]})")
    if args.all_parsers:
        print(f"{'parser':30}{'worst s':>9}  input")
        for name, (worst_s, label) in time_parsers(parsers(), battery, limit=30.0).items():
            print(f"{name:30}{worst_s:9.4f}  {label}")


if __name__ == "__main__":
    main()
