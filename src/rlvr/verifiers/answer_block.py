"""Answers that span lines: the answer line opens a fenced block, and the block holds the answer.

A task whose answers are grids or matrices (reasoning-gym's ``rotate_matrix``, ``pool_matrix``,
``manipulate_matrix``) asks for::

    #### The final answer is:
    ```
    1 2
    3 4
    ```

The rules (parsing, generation stops and every reward read them alike):

* The answer line is the first ``####`` line, as for one-line answers, and says nothing after the phrase (a
  colon allowed). The next non-blank line opens the block: ``` alone (or with a one-word info string such
  as ```text; "```3 1" opens nothing).
* The answer is every line after it up to the first line that starts with ``` (after spaces), which must be
  a bare closing fence (spaces after it allowed). Lines keep their order and leading spaces and lose their
  trailing ones; blank lines around the answer are dropped.
* Anything else is no answer: the answer on the answer line itself, no block, a block never closed, a
  closing line with more after the fence, an empty block. What follows the block (a second block or
  answer line) is ignored, as a second answer line is after a one-line answer.

:data:`BLOCK_END` ends generation once that answer is decided: after the closing fence's line, or after the
first non-blank line following the answer line when that line opens no block (no answer then). Only the
first answer line counts, as for the parser. Everything here is linear in the input size: the regexes skip
lines in atomic groups and never return to an earlier position.
"""

from __future__ import annotations

import re

from rlvr.verifiers.math import ANSWER_MARK, ANSWER_PHRASE

FENCE = "```"
#: The line that opens the block: a fence, optionally an info string (one word: ```text), nothing else.
_OPEN = r"```[ \t]*+(?:[A-Za-z][\w+.-]*+)?[ \t\r]*+\n"
#: The opening fence after the answer line and any blank lines.
_OPENING = re.compile(r"[ \t\r\n]*+" + _OPEN)
#: The first line of the block that starts with a fence (it closes the block when bare).
_CLOSING = re.compile(r"^[ \t]*+```", re.MULTILINE)
#: A stop pattern (``re.MULTILINE``; searched in the generated text): the first answer line, then either its
#: block up to the complete line of the first fence after the opening one, or one complete non-blank line
#: that opens no block.
BLOCK_END = (
    r"\A(?>(?:(?![ \t]*####)[^\n]*\n)*)[ \t]*####[^\n]*\n(?>[ \t\r\n]*)"
    rf"(?:{_OPEN}(?>(?:(?![ \t]*```)[^\n]*\n)*)[ \t]*```|(?!{_OPEN}))[^\n]*\n"
)


def render_block(answer: str) -> str:
    """The answer line, then ``answer`` in a fenced block: how exemplars and gold completions give it."""
    return f"{ANSWER_MARK} {ANSWER_PHRASE}:\n{FENCE}\n{answer}\n{FENCE}"


def block_after(text: str, start: int) -> str | None:
    """The answer in the block opening at ``start`` (just after the answer line), or None when there is none.

    Lines lose trailing white space, blank lines around the answer are dropped; an empty block gives "".
    """
    opening = _OPENING.match(text, start)
    if opening is None:
        return None
    closing = _CLOSING.search(text, opening.end())
    if closing is None:
        return None  # never closed
    end = text.find("\n", closing.end())
    if text[closing.end() : end if end != -1 else len(text)].strip():
        return None  # ````, ```text or ``` and more: not a closing fence
    lines = text[opening.end() : closing.start()].split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n")
