"""Answers that span lines: the answer line opens a fenced block (issue 53, item 4). The parser and the stop
pattern on strings; one-line answers read as before."""

import re

import pytest

from rlvr.tasks.answer_line import (
    BLOCK_STOP_PATTERNS,
    Shot,
    answer_lines,
    gold_as_answer_line,
    instruction_for,
    render_plain,
)
from rlvr.tasks.prompts import STOP_PATTERNS
from rlvr.verifiers.answers import answer_text

BLOCK = "Rotating it.\n#### The final answer is:\n```\n3 1\n4 2\n```\n"


def block(text):
    return answer_text(text, block=True)


def stop_end(text):
    """Where generation is cut: the end of the first stop-pattern match, None when it goes on."""
    ends = [m.end() for p in BLOCK_STOP_PATTERNS if (m := re.compile(p, re.MULTILINE).search(text))]
    return min(ends) if ends else None


@pytest.mark.parametrize("text", [
    BLOCK,
    "#### The final answer is\n```\n3 1\n4 2\n```",  # no colon, no newline after the closing fence
    "#### **The final answer is:**\n\n```text\n3 1   \n4 2\t\n```  \n",  # markup, blank line, info string, spaces
    "#### The final answer is:\n  ```\n\n3 1\n4 2\n\n  ```\n",  # indented fences, blank lines around the answer
])
def test_fenced_answer_is_the_blocks_lines(text):
    assert block(text) == ("3 1\n4 2", True)


def test_leading_spaces_and_inner_blank_lines_are_kept():
    assert block("#### The final answer is:\n```\n  x\n\n y\n```")[0] == "  x\n\n y"


@pytest.mark.parametrize("text", [
    "Rotating it.\n#### The final answer is:\n```\n3 1\n4 2\n",  # never closed
    "#### The final answer is:\n```\n3 1\n4 2\n```text\n",  # closing line with more after the fence
    "#### The final answer is:\n```\n3 1\n4 2\n````\n",
    "#### The final answer is 3 1\n4 2\n```\n3 1\n4 2\n```",  # an answer on the answer line
    "#### The final answer is:\n3 1\n4 2\n",  # no block
    "#### The final answer is:\n```3 1\n4 2\n```",  # the fence on the answer's first line
    "#### The final answer is:",
])
def test_unclosed_or_missing_fence_is_not_an_answer(text):
    assert block(text)[0] is None


def test_an_empty_block_is_an_empty_answer():
    assert block("#### The final answer is:\n```\n\n```\n") == ("", True)


def test_only_the_first_answer_line_and_its_first_block_count():
    first = "#### The final answer is:\n```\n1\n```\n```\n2\n```\n#### The final answer is:\n```\n3\n```"
    assert block(first)[0] == "1"
    assert block("```\n2\n```\n" + first)[0] == "1"  # a block before the answer line is not the answer


@pytest.mark.parametrize(("text", "expected"), [
    ("work\n#### The final answer is 42.", ("42", True)), ("#### **7**", ("7", False)),
    ("no answer line", (None, False)), (BLOCK, ("", True)),  # a block is not read: the answer line is empty
])
def test_single_line_answers_read_as_before(text, expected):
    assert answer_text(text) == answer_text(text, block=False) == expected


def test_single_line_rendering_and_stops_are_unchanged():
    shots = [Shot("Question: 1 + 2", "", "3")]
    prompt = render_plain(instruction_for("the answer alone"), shots, "Question: 2 + 2")
    assert prompt == ("Answer the question. End with a line '#### The final answer is X', where X is the answer alone.\n\n"
                      "Question: 1 + 2\nSolution: Let's think step by step.\n#### The final answer is 3\n\n"
                      "Question: 2 + 2\nSolution: Let's think step by step.")
    assert gold_as_answer_line(4) == "Let's think step by step.\n#### The final answer is 4\n"
    assert STOP_PATTERNS == [r"^[ \t]*####[^\n]*\n", r"\nQuestion:"]


def test_block_rendering_gives_the_gold_in_its_fence():
    assert answer_lines("1 2\n3 4", block=True) == "#### The final answer is:\n```\n1 2\n3 4\n```"
    assert block(gold_as_answer_line("1 2\n3 4", block=True)) == ("1 2\n3 4", True)
    assert "a line '#### The final answer is:', then a line '```'" in instruction_for("a grid", block=True)


def test_generation_stops_after_the_closing_fence_not_at_the_answer_line():
    assert stop_end(BLOCK) == len(BLOCK)
    assert stop_end(BLOCK + "And more.\nQuestion: next") == len(BLOCK)
    for cut in range(len(BLOCK)):  # at the answer line's end, inside the block, on the fence itself: goes on
        assert stop_end(BLOCK[:cut]) is None, BLOCK[:cut]


def test_generation_stops_after_a_line_that_opens_no_block():
    inline = "Rotating it.\n#### The final answer is 3 1\n4 2\n```\n"
    assert stop_end(inline) == inline.index("4 2\n") + len("4 2\n")
    assert stop_end("#### The final answer is:\n\n   \n") is None  # blank lines: the block may still come
    assert stop_end("#### The final answer is:\n```3 1\n4 2\n```\n") == len("#### The final answer is:\n```3 1\n")


def test_the_stop_reads_only_the_first_answer_line():
    text = "#### Step 1\nadd\n#### The final answer is:\n```\n1\n```\n"
    assert stop_end(text) == len("#### Step 1\nadd\n")


def test_stop_matching_is_monotone_and_agrees_with_the_parser():
    texts = [BLOCK + "tail\n", "#### The final answer is:\n```\n1\n```text\nx\n", "a\n#### The final answer is:\n  \n```\n```\n"]
    for text in texts:
        ends = [stop_end(text[:n]) for n in range(len(text) + 1)]
        first = next(n for n, end in enumerate(ends) if end is not None)
        assert all(end == first for end in ends[first:])  # once stopped, the cut never moves
        assert block(text[:first]) == block(text)  # what the cut keeps is judged as the whole
