"""The ``pyfunc`` task's problem templates: kinds of one-line function, with constants and inputs drawn per problem.

Each :class:`Template` names a function and its signature, describes it in words, and computes its asserts from a
reference implementation; :func:`make_problem` draws one problem, :func:`problem_stream` an endless seeded stream.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

#: Asserts per problem; the prompt shows the first.
TESTS_PER_PROBLEM = 4

_WORDS = ["cat", "dog", "sun", "tree", "blue", "fish", "star", "moon", "rain", "book",
          "lamp", "ship", "gold", "leaf", "milk", "rock", "wind", "bird", "snow", "fire"]
_LETTERS = "abcdefghijklmnoprstuw"


@dataclass(frozen=True)
class Template:
    """One kind of problem: its function, its description, and how to draw constants and inputs.

    ``constants(rng)`` draws the problem's constants; ``describe(c)`` is the text after "that";
    ``reference(c)`` is the function the tests are computed from; ``inputs(rng, c)`` draws the
    argument tuples of the asserts (chosen so the hidden tests tell right from nearly right).
    """

    name: str
    params: str
    constants: Callable[[random.Random], dict[str, Any]]
    describe: Callable[[dict[str, Any]], str]
    reference: Callable[[dict[str, Any]], Callable[..., Any]]
    inputs: Callable[[random.Random, dict[str, Any]], list[tuple[Any, ...]]]


def _ints(rng: random.Random, low: int = -20, high: int = 50, count: int = TESTS_PER_PROBLEM) -> list[tuple[Any, ...]]:
    return [(rng.randint(low, high),) for _ in range(count)]


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_LETTERS) for _ in range(rng.randint(3, 8)))


def _strings(rng: random.Random, count: int = TESTS_PER_PROBLEM) -> list[tuple[Any, ...]]:
    return [(_word(rng),) for _ in range(count)]


def _lists(rng: random.Random, low: int = 0, high: int = 20, count: int = TESTS_PER_PROBLEM,
           min_len: int = 2) -> list[tuple[Any, ...]]:
    return [([rng.randint(low, high) for _ in range(rng.randint(min_len, 6))],) for _ in range(count)]


def _k(low: int, high: int) -> Callable[[random.Random], dict[str, Any]]:
    return lambda rng: {"k": rng.randint(low, high)}


def _divisible_inputs(rng: random.Random, c: dict[str, Any]) -> list[tuple[Any, ...]]:
    k = c["k"]
    return [(k * rng.randint(1, 9),), (k * rng.randint(1, 9) + rng.randint(1, k - 1),),
            (k * rng.randint(10, 20),), (k * rng.randint(1, 9) + 1,)]


def _threshold_inputs(rng: random.Random, c: dict[str, Any]) -> list[tuple[Any, ...]]:
    k = c["k"]
    return [(k + rng.randint(1, 10),), (k - rng.randint(1, 10),), (k,), (k + rng.randint(11, 30),)]


def _char_strings(rng: random.Random, c: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Words with and without the constant letter ``ch`` at the start, the end and inside."""
    ch = c["ch"]
    plain = [w.replace(ch, "") or "xyz" for w in (_word(rng) for _ in range(4))]
    return [(ch + plain[0],), (plain[1] + ch,), (plain[2][:2] + ch + plain[2][2:] + ch,), (plain[3],)]


def _membership_lists(rng: random.Random, c: dict[str, Any]) -> list[tuple[Any, ...]]:
    k = c["k"]
    with_k = [[rng.randint(0, 20) for _ in range(rng.randint(1, 4))] + [k] * n for n in (1, 2)]
    for values in with_k:
        rng.shuffle(values)
    without = [[v for v in (rng.randint(0, 20) for _ in range(5)) if v != k] or [k + 1] for _ in range(2)]
    return [(with_k[0],), (without[0],), (with_k[1],), (without[1],)]


TEMPLATES: list[Template] = [
    Template("add_n", "x", _k(2, 40), lambda c: f"returns x plus {c['k']}",
             lambda c: lambda x: x + c["k"], lambda rng, c: _ints(rng)),
    Template("subtract_n", "x", _k(2, 40), lambda c: f"returns x minus {c['k']}",
             lambda c: lambda x: x - c["k"], lambda rng, c: _ints(rng)),
    Template("multiply_by", "x", _k(2, 20), lambda c: f"returns x multiplied by {c['k']}",
             lambda c: lambda x: x * c["k"], lambda rng, c: _ints(rng)),
    Template("times_plus", "x", lambda rng: {"a": rng.randint(2, 9), "b": rng.randint(1, 20)},
             lambda c: f"returns x times {c['a']} plus {c['b']}",
             lambda c: lambda x: x * c["a"] + c["b"], lambda rng, c: _ints(rng)),
    Template("power_of", "x", _k(2, 4), lambda c: f"returns x raised to the power {c['k']}",
             lambda c: lambda x: x ** c["k"], lambda rng, c: _ints(rng, -6, 9)),
    Template("remainder", "x", _k(2, 13), lambda c: f"returns the remainder of x divided by {c['k']}",
             lambda c: lambda x: x % c["k"], lambda rng, c: _ints(rng, 0, 100)),
    Template("int_divide", "x", _k(2, 13), lambda c: f"returns x divided by {c['k']}, rounded down to an integer",
             lambda c: lambda x: x // c["k"], lambda rng, c: _ints(rng, 0, 100)),
    Template("is_divisible", "x", _k(2, 13), lambda c: f"returns True if x is divisible by {c['k']}, otherwise False",
             lambda c: lambda x: x % c["k"] == 0, _divisible_inputs),
    Template("is_greater", "x", _k(-10, 60), lambda c: f"returns True if x is greater than {c['k']}, otherwise False",
             lambda c: lambda x: x > c["k"], _threshold_inputs),
    Template("is_at_most", "x", _k(-10, 60), lambda c: f"returns True if x is at most {c['k']}, otherwise False",
             lambda c: lambda x: x <= c["k"], _threshold_inputs),
    Template("larger_of", "x", _k(-10, 60), lambda c: f"returns the larger of x and {c['k']}",
             lambda c: lambda x: max(x, c["k"]), _threshold_inputs),
    Template("smaller_of", "x", _k(-10, 60), lambda c: f"returns the smaller of x and {c['k']}",
             lambda c: lambda x: min(x, c["k"]), _threshold_inputs),
    Template("distance_to", "x", _k(-10, 60), lambda c: f"returns the absolute difference between x and {c['k']}",
             lambda c: lambda x: abs(x - c["k"]), _threshold_inputs),
    Template("add_two", "a, b", _k(1, 30), lambda c: f"returns the sum of a and b plus {c['k']}",
             lambda c: lambda a, b: a + b + c["k"],
             lambda rng, c: [(rng.randint(-10, 40), rng.randint(-10, 40)) for _ in range(TESTS_PER_PROBLEM)]),
    Template("repeat_text", "s", _k(2, 6), lambda c: f"returns the string s repeated {c['k']} times",
             lambda c: lambda s: s * c["k"], lambda rng, c: _strings(rng)),
    Template("first_chars", "s", _k(2, 6), lambda c: f"returns the first {c['k']} characters of the string s",
             lambda c: lambda s: s[: c["k"]], lambda rng, c: _strings(rng)),
    Template("last_chars", "s", _k(2, 6), lambda c: f"returns the last {c['k']} characters of the string s",
             lambda c: lambda s: s[-c["k"]:], lambda rng, c: _strings(rng)),
    Template("add_suffix", "s", lambda rng: {"w": rng.choice(_WORDS)},
             lambda c: f'returns the string s followed by "{c["w"]}"',
             lambda c: lambda s: s + c["w"], lambda rng, c: _strings(rng)),
    Template("add_prefix", "s", lambda rng: {"w": rng.choice(_WORDS)},
             lambda c: f'returns "{c["w"]}" followed by the string s',
             lambda c: lambda s: c["w"] + s, lambda rng, c: _strings(rng)),
    Template("count_letter", "s", lambda rng: {"ch": rng.choice(_LETTERS)},
             lambda c: f'returns how many times the letter "{c["ch"]}" appears in the string s',
             lambda c: lambda s: s.count(c["ch"]), _char_strings),
    Template("starts_with", "s", lambda rng: {"ch": rng.choice(_LETTERS)},
             lambda c: f'returns True if the string s starts with "{c["ch"]}", otherwise False',
             lambda c: lambda s: s.startswith(c["ch"]), _char_strings),
    Template("ends_with", "s", lambda rng: {"ch": rng.choice(_LETTERS)},
             lambda c: f'returns True if the string s ends with "{c["ch"]}", otherwise False',
             lambda c: lambda s: s.endswith(c["ch"]), _char_strings),
    Template("remove_letter", "s", lambda rng: {"ch": rng.choice(_LETTERS)},
             lambda c: f'returns the string s with every "{c["ch"]}" removed',
             lambda c: lambda s: s.replace(c["ch"], ""), _char_strings),
    Template("replace_letter", "s", lambda rng: {"ch": rng.choice(_LETTERS), "to": rng.choice(string.digits)},
             lambda c: f'returns the string s with every "{c["ch"]}" replaced by "{c["to"]}"',
             lambda c: lambda s: s.replace(c["ch"], c["to"]), _char_strings),
    Template("add_to_each", "xs", _k(1, 30), lambda c: f"returns a new list with {c['k']} added to each number in the list xs",
             lambda c: lambda xs: [x + c["k"] for x in xs], lambda rng, c: _lists(rng)),
    Template("scale_each", "xs", _k(2, 12), lambda c: f"returns a new list with each number in the list xs multiplied by {c['k']}",
             lambda c: lambda xs: [x * c["k"] for x in xs], lambda rng, c: _lists(rng)),
    Template("count_above", "xs", _k(0, 20), lambda c: f"returns how many numbers in the list xs are greater than {c['k']}",
             lambda c: lambda xs: sum(1 for x in xs if x > c["k"]), lambda rng, c: _lists(rng, 0, 25)),
    Template("keep_above", "xs", _k(0, 20),
             lambda c: f"returns a list of the numbers in the list xs that are greater than {c['k']}, in their order",
             lambda c: lambda xs: [x for x in xs if x > c["k"]], lambda rng, c: _lists(rng, 0, 25)),
    Template("sum_plus", "xs", _k(1, 50), lambda c: f"returns the sum of the numbers in the list xs plus {c['k']}",
             lambda c: lambda xs: sum(xs) + c["k"], lambda rng, c: _lists(rng)),
    Template("item_at", "xs", _k(0, 3), lambda c: f"returns the element at index {c['k']} of the list xs",
             lambda c: lambda xs: xs[c["k"]], lambda rng, c: _lists(rng, min_len=5)),
    Template("first_items", "xs", _k(2, 4), lambda c: f"returns a list of the first {c['k']} elements of the list xs",
             lambda c: lambda xs: xs[: c["k"]], lambda rng, c: _lists(rng, min_len=5)),
    Template("contains_value", "xs", _k(0, 20), lambda c: f"returns True if the list xs contains {c['k']}, otherwise False",
             lambda c: lambda xs: c["k"] in xs, _membership_lists),
    Template("count_value", "xs", _k(0, 20), lambda c: f"returns how many times {c['k']} appears in the list xs",
             lambda c: lambda xs: xs.count(c["k"]), _membership_lists),
    Template("append_value", "xs", _k(0, 50), lambda c: f"returns a new list: the list xs with {c['k']} added at the end",
             lambda c: lambda xs: [*xs, c["k"]], lambda rng, c: _lists(rng)),
]


def make_problem(template: Template, rng: random.Random) -> dict[str, Any]:
    """One problem from ``template``: its description (the question) and asserts computed by the reference."""
    constants = template.constants(rng)
    reference = template.reference(constants)
    tests = []
    for args in template.inputs(rng, constants):
        call = f"{template.name}({', '.join(repr(a) for a in args)})"
        tests.append(f"assert {call} == {reference(*args)!r}")
    question = f"Write a Python function {template.name}({template.params}) that {template.describe(constants)}."
    return {"question": question, "template": template.name, "test_list": tests}


def problem_stream(seed: int, templates: Sequence[Template] = TEMPLATES) -> Any:
    """Problems drawn from ``templates`` (default: all) in turn at random, deterministically from ``seed``."""
    rng = random.Random(seed)
    while True:
        yield make_problem(rng.choice(templates), rng)


def distinct_problems(names: Sequence[str], draws: int = 3000) -> int:
    """About how many distinct descriptions the templates ``names`` can make (sampled; for error messages)."""
    by_name = {t.name: t for t in TEMPLATES}
    total = 0
    for name in names:
        rng = random.Random(0)
        total += len({make_problem(by_name[name], rng)["question"] for _ in range(draws)})
    return total
