"""The few-shot answer format shared by the math tasks.

Each exemplar renders as::

    Question: {question}
    Solution: Let's think step by step. {reasoning}
    #### The final answer is {answer}

followed by a blank line; the target ends with ``Solution: Let's think step by
step. `` so the model continues with reasoning and an answer line.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from rlvr.errors import RlvrError

MAX_SHOTS = 8
COT_LEAD = "Let's think step by step."
#: Generation of a row stops once its first answer line is complete, or when it starts a new question.
STOP_PATTERNS = [r"^[ \t]*####[^\n]*\n", r"\nQuestion:"]
#: How rows get their exemplars: "per_row" draws each row's own subset (seeded) when shots < pool size;
#: "fixed" gives every row the first ``shots`` exemplars of the pool, in pool order (the published prompt).
EXEMPLAR_ORDERS = ("per_row", "fixed")


@dataclass(frozen=True)
class Exemplar:
    question: str
    reasoning: str
    answer: str


def render_exemplar(example: Exemplar) -> str:
    return (
        f"Question: {example.question}\n"
        f"Solution: {COT_LEAD} {example.reasoning}\n"
        f"#### The final answer is {example.answer}\n\n"
    )


def render_target(question: str) -> str:
    return f"Question: {question}\nSolution: {COT_LEAD}"


def render_prompt(question: str, exemplars: list[Exemplar], style: str = "rlvr") -> str:
    """The plain-text k-shot prompt for ``question``; ``style="published"``: the published code's rendering."""
    if check_prompt_format(style) == "published":
        return "".join(published_example(e.question, e.reasoning, e.answer) for e in exemplars) + published_example(question)
    return "".join(render_exemplar(e) for e in exemplars) + render_target(question)


#: "rlvr": exemplars and question as written; "published": the published code's ``format_example``.
PROMPT_FORMATS = ("rlvr", "published")


def check_prompt_format(style: str) -> str:
    if style not in PROMPT_FORMATS:
        raise RlvrError(f"prompt_format must be one of {', '.join(PROMPT_FORMATS)}, got {style!r}.")
    return style


def published_example(question: str, reasoning: str | None = None, answer: str | None = None) -> str:
    """One block as the published recipe's ``GSM8K.format_example`` (with ``cot=True``) rendered it.

    Reasoning lines are joined with ``". "``, calculator annotations ``<<...>>`` removed and a period
    appended; then every ``..`` in the block (question included) becomes ``.``; the answer line and a
    blank line follow. Without reasoning and answer this is the question to be answered, ending in
    ``Let's think step by step. `` (with the trailing space).
    """
    text = f"Question: {question}\nSolution: {COT_LEAD} "
    if reasoning is not None:
        text += re.sub(r"<<.*?>>", "", ". ".join(reasoning.split("\n"))) + ".\n"
    text = text.replace("..", ".")
    if answer is not None:
        text += f"#### The final answer is {answer}\n\n"
    return text


def render_chat(question: str, exemplars: list[Exemplar]) -> list[dict[str, str]]:
    """The same prompt as chat turns, for instruct models with a chat template."""
    messages: list[dict[str, str]] = []
    for example in exemplars:
        messages.append({"role": "user", "content": f"Question: {example.question}"})
        messages.append(
            {"role": "assistant", "content": f"{COT_LEAD} {example.reasoning}\n#### The final answer is {example.answer}"}
        )
    instruction = "Solve the problem step by step, then end with a line '#### The final answer is N'."
    messages.append({"role": "user", "content": f"{instruction}\nQuestion: {question}"})
    return messages


def check_shots(shots: int) -> int:
    if not isinstance(shots, int) or isinstance(shots, bool) or not 0 <= shots <= MAX_SHOTS:
        raise RlvrError(f"shots must be an integer from 0 to {MAX_SHOTS}, got {shots!r}.")
    return shots


def check_shots_mix(mix: object) -> list[int] | None:
    """``None`` or a non-empty list of exemplar counts (0-8), e.g. ``[0, 1, 2]``."""
    if mix is None:
        return None
    if not isinstance(mix, (list, tuple)) or not mix:
        raise RlvrError(f"shots_mix must be a non-empty list of exemplar counts such as [0, 1, 2], got {mix!r}.")
    return [check_shots(shots) for shots in mix]


def shots_for_row(shots: int, mix: list[int] | None, split: str, index: int) -> int:
    """How many exemplars row ``index`` of ``split`` gets.

    Train and validation rows cycle through ``mix`` (row ``i`` gets ``mix[i % len(mix)]``, so every count gets its
    exact share; repeat a count to weight it); test rows, and every row when there is no mix, get ``shots``. Training
    on several counts teaches the skill rather than one prompt; the test split stays at the headline's count and
    ``rlvr experiment`` sweeps the others.
    """
    if not mix or split == "test":
        return shots
    return mix[index % len(mix)]


def check_exemplar_order(order: str) -> str:
    if order not in EXEMPLAR_ORDERS:
        raise RlvrError(f"exemplar_order must be one of {', '.join(EXEMPLAR_ORDERS)}, got {order!r}.")
    return order


def check_shot_options(shots: int, shots_mix: object, exemplar_order: str) -> list[int] | None:
    """The few-shot options the math tasks share (``shots``, ``shots_mix``, ``exemplar_order``), checked with
    one-line errors; returns ``shots_mix`` as a list (None: no mix)."""
    check_shots(shots)
    mix = check_shots_mix(shots_mix)
    check_exemplar_order(exemplar_order)
    return mix


def choose_exemplars(pool: list[Exemplar], shots: int, seed: int, index: int, order: str = "per_row") -> list[Exemplar]:
    """``shots`` exemplars for row ``index``, in pool order: the first ``shots`` for every row when ``order`` is
    "fixed", else a subset drawn for this row, reproducible from ``seed``."""
    check_shots(shots)
    if check_exemplar_order(order) == "fixed" or shots >= len(pool):
        return list(pool[:shots])
    rng = random.Random(f"{seed}:{index}")
    chosen = sorted(rng.sample(range(len(pool)), shots))
    return [pool[i] for i in chosen]
