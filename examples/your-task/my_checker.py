"""A checker: is the completion's answer the sum of the line's two numbers?

rlvr calls ``check(completion, row)`` for every completion it judges: ``completion`` is the text the
model wrote, ``row`` is the completion's line of my.jsonl as a dict. Return True/False (or a score
in [0, 1]). If it raises on some item, rlvr judges that item wrong, counts it and goes on.
"""

import re

ANSWER_LINE = re.compile(r"^[ \t]*####(.*)$", re.MULTILINE)
NUMBER = re.compile(r"-?\d+")


def check(completion: str, row: dict) -> bool:
    line = ANSWER_LINE.search(completion)  # the first '####' line only: no second chances
    if line is None:
        return False
    numbers = NUMBER.findall(line.group(1))
    return len(numbers) == 1 and int(numbers[0]) == row["a"] + row["b"]  # "48 or 49" is not an answer
