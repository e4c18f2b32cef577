"""Adversarial inputs for every parser of model output, and a watchdog that times each call.

A model's completion reaches the verifiers' and the code reward's regexes unfiltered; one quadratic
pattern (``^\\s*`` over 30,000 newlines) stalls a whole training step. :func:`adversarial_texts` builds
1 MB inputs of every character class and of the tokens the parsers look for, repeated;
:data:`PARSERS` names every function that reads model output; :func:`time_parsers` runs each in a
forked child and reports the slowest call, stopping a call that exceeds ``limit`` seconds (so a
stall is reported, not waited for). Used by ``tests/test_parsing_fuzz.py`` and
``benchmarks/verifier_speed.py``.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import time
from collections.abc import Callable, Iterator

MB = 1_000_000
#: Single characters, one per class: letters, digits, every kind of white space, the punctuation the
#: parsers treat specially, non-ASCII letters, signs and spaces, control characters, astral plane.
CHARACTERS = (
    "a", "Z", "0", "7", " ", "\t", "\n", "\r", "\x0b", "\x0c", "\x00", "\x1b", "\u00a0", "\u2028", "\u3000",
    "#", "`", "*", "\\", "$", "€", "-", "\u2212", "+", ",", ".", "/", "%", ":", ";", "{", "}", "(", ")", "[",
    "]", "<", ">", "=", "_", "\"", "'", "’", "!", "?", "|", "&", "^", "~", "@", "é", "ß", "中", "😀",
)
#: Multi-character tokens the parsers search for, each repeated to 1 MB.
TOKENS = (
    "```\n", "```python\n", "```py ", "``` \n", "####", "#### ", "####\n", " ####", "#### 1", "1,", "1, ", ",1",
    "1 ", "1.", ".1", "1/", "1/1 ", "-$", "$-", "- ", "+-", "\\boxed{", "\\boxed{1", "**", "**1", "\\(", "\\$",
    "<<", "<<1=", "<<1=1>>", "=1>>", "def f(", "\ndef ", "def ", "\n    ", " \n", "\n ", "\n#", "\nassert ",
    "\nprint(", "\nclass ", "\nif ", "\"\"\"", "a.", "a. ", "1) ", "- a\n", "* a\n", "> ", "Question:",
    "\nQuestion:", "The final answer is ", "the final answer is", "not ", "a, b, ", "e.g. ", "Dr. ",
    "... ", "?!", "\n\n", "\r\n", "a\n", "async def f(",
)


def adversarial_texts(size: int = MB, seed: int = 0) -> Iterator[tuple[str, str]]:
    """(name, text) pairs, each about ``size`` characters."""
    for char in CHARACTERS:
        yield f"char {char!r}", char * size
    for token in TOKENS:
        yield f"token {token!r}", token * (size // len(token))
    rng = random.Random(seed)
    alphabet = "".join(CHARACTERS) + "".join(TOKENS)
    yield "random mix", "".join(rng.choice(alphabet) for _ in range(size))
    yield "answer line then newlines", "reasoning\n#### 7" + "\n" * size
    yield "newlines then answer line", "\n" * size + "#### 7"
    yield "spaces then answer", " " * size + "#### The final answer is 7"
    yield "open fences", ("```python\n" + "x = 1\n") * (size // 16)
    yield "unclosed answer block", "#### The final answer is:\n```\n" + "1 2\n" * (size // 4)
    yield "answer lines opening blocks", "####\n```x\n" * (size // 9)
    yield "indented defs", ("\n" + " " * 40 + "def") * (size // 44)


def _code_targets() -> dict[str, Callable[[str], object]]:
    from rlvr.rewards.code import CodeScorer, assemble_program, extract_code

    row = {"code_prefix": "def f(x):\n", "test": "def check(candidate):\n    assert candidate(1) == 1\n", "entry_point": "f"}
    return {
        "code.extract_code": extract_code,
        "code.assemble_program": lambda text: assemble_program(text, "def f(x):\n", "f"),
        "code.program_and_suite": lambda text: CodeScorer._program_and_suite(text, row),
    }


def _math_targets() -> dict[str, Callable[[str], object]]:
    from rlvr.rewards.math import correctness_score, format_score
    from rlvr.rewards.penalties import skipped_reasoning
    from rlvr.rewards.process import step_credit
    from rlvr.verifiers.answers import answer_text
    from rlvr.verifiers.math import parse_gold, read_answer

    reference = "4*6=<<4*6=24>>24 goats.\n#### 24"
    return {
        "math.read_answer": read_answer,
        "math.parse_gold": parse_gold,
        "answers.answer_text_block": lambda text: answer_text(text, block=True),
        "math.format_score": format_score,
        "math.correctness_score": lambda text: correctness_score(text, "24"),
        "process.step_credit": lambda text: step_credit(text, reference),
        "penalties.skipped_reasoning": skipped_reasoning,
    }


def _keyword_targets() -> dict[str, Callable[[str], object]]:
    from rlvr.verifiers.conditions import make_item
    from rlvr.verifiers.keyword_rubric_loader import load_rubric
    from rlvr.verifiers.keywords import judge
    from rlvr.verifiers.sentences import split_units

    rubric = load_rubric()
    item = make_item("community-acquired-pneumonia", None, "Fever, a productive cough and crackles at the right base.")
    return {"keywords.judge": lambda text: judge(text, rubric, semantic=False), "sentences.split_units": split_units,
            "keywords.judge_per_item": lambda text: judge(text, rubric, semantic=False, item=item)}


def _stop_targets() -> dict[str, Callable[[str], object]]:
    import re

    from rlvr.tasks.answer_line import BLOCK_STOP_PATTERNS
    from rlvr.tasks.code import BODY_STOPS, CHAT_STOPS, PROGRAM_STOPS
    from rlvr.tasks.prompts import STOP_PATTERNS

    patterns = {"math": STOP_PATTERNS, "answer-block": BLOCK_STOP_PATTERNS, "code-body": BODY_STOPS,
                "code-program": PROGRAM_STOPS, "code-chat": CHAT_STOPS}
    targets = {}
    for name, group in patterns.items():
        compiled = [re.compile(p, re.MULTILINE) for p in group]
        targets[f"stop.{name}"] = lambda text, compiled=compiled: [p.search(text) for p in compiled]
    return targets


def parsers() -> dict[str, Callable[[str], object]]:
    """Every function that reads model output, by name."""
    return {**_math_targets(), **_code_targets(), **_keyword_targets(), **_stop_targets()}


def time_parsers(targets: dict[str, Callable[[str], object]], texts: list[tuple[str, str]],
                 limit: float = 5.0) -> dict[str, tuple[float, str]]:
    """Per target: (seconds of its slowest call, that input's name); ``inf`` when a call passed ``limit``."""
    return {name: _time_one(func, texts, limit) for name, func in targets.items()}


def _time_one(func: Callable[[str], object], texts: list[tuple[str, str]], limit: float) -> tuple[float, str]:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child runs the calls; a stalled regex cannot be interrupted, only killed
        os.close(read_fd)
        with os.fdopen(write_fd, "w", buffering=1) as out:
            for label, text in texts:
                out.write(json.dumps({"start": label}) + "\n")
                began = time.perf_counter()
                try:
                    func(text)
                except Exception:  # a parser that raises is another test's business; only time matters here
                    pass
                out.write(json.dumps({"done": label, "s": time.perf_counter() - began}) + "\n")
        os._exit(0)
    os.close(write_fd)
    worst: tuple[float, str] = (0.0, "")
    current = ""
    with os.fdopen(read_fd) as stream:
        while True:
            ready, _, _ = select.select([stream], [], [], limit)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                worst = (float("inf"), current)
                break
            line = stream.readline()
            if not line:
                break
            event = json.loads(line)
            if "start" in event:
                current = event["start"]
            elif event["s"] > worst[0]:
                worst = (event["s"], event["done"])
    os.waitpid(pid, 0)
    return worst
