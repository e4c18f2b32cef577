"""Write my.jsonl: 1000 small word problems with their answers, one JSON object per line.

Stands in for your own data: any JSONL with a question field and an answer field works the same way.
Each line also keeps the two numbers (a, b), which the checker and the reward read, and a worked
solution shown in the exemplar (the task's `reasoning` option).

    python make_data.py            # writes my.jsonl next to this script
"""

import json
import random
from pathlib import Path

PHRASINGS = [
    "A shop sold {a} apples in the morning and {b} in the afternoon. How many apples did it sell?",
    "Sam has {a} marbles and finds {b} more. How many marbles does Sam have now?",
    "A bus carries {a} people and {b} more get on. How many people are on the bus?",
    "A library has {a} red books and {b} blue books. How many books is that?",
]


def main(count: int = 1000, seed: int = 7) -> None:
    rng = random.Random(seed)
    lines, seen = [], set()
    while len(lines) < count:
        a, b, phrasing = rng.randint(2, 60), rng.randint(2, 40), rng.choice(PHRASINGS)
        question = phrasing.format(a=a, b=b)
        if question not in seen:
            seen.add(question)
            lines.append({"question": question, "answer": a + b, "a": a, "b": b, "solution": f"{a} + {b} = {a + b}."})
    out = Path(__file__).with_name("my.jsonl")
    out.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    print(f"wrote {len(lines)} lines to {out}")


if __name__ == "__main__":
    main()
