"""The program an exemplar's question stands for, for reasoning-gym datasets whose exemplars carry no working.

reasoning-gym exemplars are a question and its answer, with no computation written out, so there is nothing in
them to turn into a tool call (:mod:`rlvr.tools.exemplars`). For the datasets below the question itself names
the computation; :func:`question_program` writes it as the expression (for the calculator) or the Python
snippet (for the ``python`` tool) that computes the answer. Every exemplar made this way is run through the tool
and kept only when the tool prints the gold answer, so a pattern that misreads a question costs an exemplar,
never teaches a wrong call. Datasets not listed keep plain exemplars.
"""

from __future__ import annotations

import re

_NUMBER_LIST = r"((?:-?\d+\s*,\s*)+-?\d+)"
_ARITHMETIC = r"([-+*/() 0-9.]+?)"

#: (dataset it was written for, question pattern, what the expression is, Python program from the match)
PATTERNS: list[tuple[str, re.Pattern[str], str, str]] = [
    ("products", re.compile(r"multiplication:\s*" + _ARITHMETIC + r"\.\s"), "{0}", "print({0})"),
    ("chain_sum", re.compile(r"arithmetic problem:\s*" + _ARITHMETIC + r"\s*=\s*$"), "{0}", "print({0})"),
    ("basic_arithmetic", re.compile(r"^Calculate\s+" + _ARITHMETIC + r"\.\s*$"), "{0}", "print({0})"),
    ("lcm", re.compile(r"\(LCM\) of these numbers:\s*" + _NUMBER_LIST), "",
     "import math\nprint(math.lcm({0}))"),
    ("gcd", re.compile(r"\(GCD\) of these numbers:\s*" + _NUMBER_LIST), "",
     "import math\nprint(math.gcd({0}))"),
    ("prime_factorization", re.compile(r"prime factorization of (\d+)\."), "",
     "n = {0}\nf = []\nd = 2\nwhile n > 1:\n    while n % d == 0:\n        f.append(d)\n        n //= d\n"
     "    d += 1\nprint(' × '.join(map(str, f)))"),
    ("bitwise_arithmetic", re.compile(r"\n(\(.*\))\s*$"), "", "print(hex({0}))"),
    ("count_bits", re.compile(r"binary representation of the number (\d+)\?"), "", "print(bin({0}).count('1'))"),
]


def question_program(question: str, tool_name: str) -> dict[str, str] | None:
    """The tool arguments that compute ``question``'s answer, from the first pattern that reads it; else None."""
    for _, pattern, expression, program in PATTERNS:
        match = pattern.search(question.strip())
        if match is None:
            continue
        found = match.group(1).strip()
        if tool_name == "calculator":
            return {"expression": expression.format(found)} if expression else None
        if tool_name == "python":
            return {"code": program.format(found)}
        return None
    return None
