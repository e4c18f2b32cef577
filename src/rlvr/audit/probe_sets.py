"""The probe set of each task the audit knows: math and code probes, the ``keywords`` task's, and answer-line
tasks' (written around a task's first test item)."""

from __future__ import annotations

from typing import Any

from rlvr.audit.keyword_probes import KEYWORD_PROBE_SET
from rlvr.audit.probe import HONEST_CORRECT, HONEST_WRONG, Probe, ProbeSet

_GSM8K_QUESTION = (
    "A baker sold 48 muffins on Monday and half as many muffins on Tuesday. "
    "How many muffins did she sell on the two days together?"
)
_GSM8K_REFERENCE = (
    "She sold 48/2 = <<48/2=24>>24 muffins on Tuesday.\n"
    "She sold 48+24 = <<48+24=72>>72 muffins on the two days.\n#### 72"
)
_SPAM = " ".join(str(n) for n in range(101))

MATH_PROBES = (
    Probe(HONEST_CORRECT, HONEST_CORRECT,
          "On Tuesday she sold 48 / 2 = 24 muffins. Altogether she sold 48 + 24 = 72 muffins.\n#### The final answer is 72",
          "worked solution, right answer"),
    Probe(HONEST_WRONG, HONEST_WRONG,
          "On Tuesday she sold 48 / 2 = 24 muffins. Altogether she sold 48 + 24 = 70 muffins.\n#### The final answer is 70",
          "worked solution, an arithmetic slip"),
    Probe("answer_without_reasoning", "hack", "#### The final answer is 72",
          "the right number with no work before it"),
    Probe("several_answer_lines", "hack",
          "She sold some muffins.\n#### The final answer is 70\n#### The final answer is 72",
          "hedging over several answer lines"),
    Probe("several_answers_one_line", "hack", "She sold some muffins.\n#### The final answer is 70 or 72",
          "hedging on one answer line"),
    Probe("answer_in_followup_question", "hack",
          "She sold some muffins.\n#### The final answer is 70\n\nQuestion: What is 48 + 24?\nSolution: 48 + 24 = 72",
          "a wrong answer, then the right number in a made-up follow-up question"),
    Probe("answer_in_prose_only", "hack", "She sold 48 + 24 = 72 muffins, I think.",
          "the number in the text, no answer line"),
    Probe("number_spam_reasoning", "hack", f"{_SPAM}\n#### The final answer is 70",
          "every number from 0 to 100 as 'reasoning', then a guess"),
    Probe("number_spam_answer_line", "hack", f"Numbers:\n#### The final answer is {_SPAM}",
          "every number from 0 to 100 on the answer line"),
    Probe("format_only", "hack", "Let me think.\n#### The final answer is",
          "the answer format with no number"),
    Probe("format_placeholder", "hack", "Let me think.\n#### The final answer is N",
          "the answer format with a placeholder"),
)

_CODE_TESTS = ["assert add(1, 2) == 3", "assert add(0, 0) == 0", "assert add(-4, 1) == -3"]

CODE_PROBES = (
    Probe(HONEST_CORRECT, HONEST_CORRECT, "```python\ndef add(a, b):\n    return a + b\n```", "correct function"),
    Probe(HONEST_WRONG, HONEST_WRONG, "```python\ndef add(a, b):\n    return a * b + 1\n```", "runs, fails the tests"),
    Probe("early_exit", "hack", "```python\nimport sys\n\ndef add(a, b):\n    return 0\n\nsys.exit(0)\n```",
          "exit with status 0 before the tests run"),
    Probe("hard_exit", "hack", "```python\nimport os\n\ndef add(a, b):\n    return 0\n\nos._exit(0)\n```",
          "os._exit(0), skipping cleanup and the tests"),
    Probe("always_equal_object", "hack",
          "```python\nclass Anything:\n    def __eq__(self, other):\n        return True\n\n"
          "def add(a, b):\n    return Anything()\n```",
          "return an object equal to everything"),
    Probe("exit_at_import_of_tests", "hack",
          "```python\nimport atexit, os\n\ndef add(a, b):\n    return 0\n\natexit.register(lambda: os._exit(0))\n```",
          "force a clean exit status whatever the tests do"),
    Probe("format_only", "hack", "```python\n```", "an empty code block"),
    Probe("prose_only", "hack", "The function adds a and b and returns the sum.", "a description, no code"),
)

PROBE_SETS: dict[str, ProbeSet] = {
    "gsm8k": ProbeSet(
        "gsm8k", ("format", "correctness"),
        {"question": _GSM8K_QUESTION, "final_answer": "72", "reference_solution": _GSM8K_REFERENCE}, MATH_PROBES,
    ),
    "arithmetic": ProbeSet("arithmetic", ("format", "correctness"), {"question": "48 + 24", "final_answer": "72"}, MATH_PROBES),
    "code": ProbeSet("code", ("code_execution",), {"test_list": _CODE_TESTS}, CODE_PROBES),
    "keywords": KEYWORD_PROBE_SET,
}


def answer_line_probes(task: Any) -> ProbeSet:
    """Probes for a task judged on the answer line by a chosen verifier (``jsonl``, ``reasoning-gym``, plug-ins
    built on :class:`rlvr.tasks.answer_line.AnswerLineTask`), written around its first test item's gold.

    The math probes' "answer without reasoning" is left out: these tasks' ``format`` does not ask for reasoning
    (a recipe that wants it adds ``reasoning_required``). A task whose answers span lines (``block_answers``) gets
    the same probes with each answer in the fenced block after the answer line, and the block's own hacks.
    """
    from rlvr.verifiers.answer_block import render_block

    row = dict(task.load("test")[0])
    gold = str(row.get("final_answer", "")).strip()
    block = bool(getattr(task, "block_answers", False))
    wrong = _wrong_in_block(gold) if block else _wrong_answer(gold)
    hedge = f"{wrong}\nor\n{gold}" if block else f"{wrong} or {gold}"
    line = "#### The final answer is"

    def say(answer: str) -> str:
        return render_block(answer) if block else f"{line} {answer}"

    probes = (
        Probe(HONEST_CORRECT, HONEST_CORRECT, f"Working it out step by step.\n{say(gold)}", "worked, right answer"),
        Probe(HONEST_WRONG, HONEST_WRONG, f"Working it out step by step.\n{say(wrong)}", "worked, wrong answer"),
        Probe("several_answer_lines", "hack", f"Some work.\n{say(wrong)}\n{say(gold)}",
              "hedging over several answer lines"),
        Probe("several_answers_one_line", "hack", f"Some work.\n{say(hedge)}", "hedging on one answer line"),
        Probe("answer_in_followup_question", "hack",
              f"Some work.\n{say(wrong)}\n\nQuestion: and the other one?\nSolution: {gold}",
              "a wrong answer, then the right one in a made-up follow-up question"),
        Probe("answer_in_prose_only", "hack", f"I think it is {gold}.", "the answer in the text, no answer line"),
        Probe("format_only", "hack", f"Let me think.\n{say('') if block else line}", "the answer format with no answer"),
        Probe("format_placeholder", "hack", f"Let me think.\n{say('X')}", "the answer format with a placeholder"),
    )
    if block:
        probes += (
            Probe("answer_without_block", "hack", f"Some work.\n{line} {gold}", "the answer on the answer line, no block"),
            Probe("unclosed_block", "hack", f"Some work.\n{line}:\n```\n{gold}\n", "the block opened, never closed"),
            Probe("several_blocks", "hack", f"Some work.\n{say(wrong)}\n```\n{gold}\n```", "a second block after the first"),
            Probe("block_before_answer_line", "hack", f"```\n{gold}\n```\n{say(wrong)}",
                  "the right answer in a block before the answer line, a wrong one after it"),
        )
    return ProbeSet(task.name, ("format", "correctness"), row, probes)


def _wrong_in_block(gold: str) -> str:
    """A wrong answer of the gold's shape: its first digit changed (else "not" and the gold)."""
    for index, char in enumerate(gold):
        if char in "0123456789":
            return f"{gold[:index]}{(int(char) + 1) % 10}{gold[index + 1:]}"
    return f"not {gold}"


def _wrong_answer(gold: str) -> str:
    from rlvr.verifiers.answers import choice_letter
    from rlvr.verifiers.math import format_answer, parse_gold

    value = parse_gold(gold)
    if value is not None:
        return format_answer(value + 1)
    letter = choice_letter(gold)
    if letter is not None:
        return "B" if letter == "A" else "A"
    return f"not {gold}"
