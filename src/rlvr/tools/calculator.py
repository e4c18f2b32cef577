"""The ``calculator`` tool: exact arithmetic on integers and decimals.

The expression is parsed with :mod:`ast` (``mode="eval"``) and only arithmetic nodes are walked: numbers,
``+ - * / // % **``, unary ``-``/``+`` and parentheses. Every number becomes a :class:`fractions.Fraction`
taken from its source text, so ``0.1`` is exactly 1/10 and ``0.1 + 0.2`` is ``0.3``. Hostile input is
cheap to refuse: the length check comes first, nesting is bounded, and a power's size is estimated
from bit lengths *before* it is computed, so ``9**9**9`` is refused at once. Failures raise ``ValueError``
with a short message the model reads (TRL turns it into the tool's error text).

The function's own docstring is what the model sees (``transformers.utils.get_json_schema``).
"""

from __future__ import annotations

import ast
import re
from fractions import Fraction

MAX_CHARS = 200
MAX_DIGITS = 1000
MAX_EXPONENT = 64
MAX_DEPTH = 100
_BOUND = 10**MAX_DIGITS  # a number with more than MAX_DIGITS digits is at least this
_BOUND_BITS = _BOUND.bit_length()
_ONLY = "only numbers and + - * / // % ** ( ) are allowed"
_DECIMAL = re.compile(r"(\d*)\.?(\d*)(?:[eE]([-+]?\d+))?")
_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}


# The docstring is what the model reads in its prompt (TRL renders it into the tool's schema): kept to one line.
# Results are exact: a whole number prints as an integer, other results as a decimal ("0.1 + 0.2" gives "0.3") or,
# when the decimal never ends, as a reduced fraction ("1/3").
def calculator(expression: str) -> str:
    """Exact arithmetic on integers and decimals: + - * / // % ** and parentheses.

    Args:
        expression: The expression to evaluate, for example "(12 + 7) * 3 / 4".
    """
    if not isinstance(expression, str):
        raise ValueError("expression must be a string such as '2 * (3 + 4)'")
    if len(expression) > MAX_CHARS:
        raise ValueError(f"expression is longer than {MAX_CHARS} characters")
    source = expression.strip()
    if not source:
        raise ValueError("expression is empty")
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise ValueError(f"not a valid arithmetic expression ({_ONLY})") from None
    return format_number(_evaluate(tree.body, source, 0))


def format_number(value: Fraction) -> str:
    """An integer as an integer, a terminating non-integer as an exact decimal, else a reduced fraction."""
    numerator, denominator = value.numerator, value.denominator
    if denominator == 1:
        return str(numerator)
    twos, fives, rest = 0, 0, denominator
    while rest % 2 == 0:
        rest, twos = rest // 2, twos + 1
    while rest % 5 == 0:
        rest, fives = rest // 5, fives + 1
    if rest != 1:
        return f"{numerator}/{denominator}"
    places = max(twos, fives)
    digits = str(abs(numerator) * 10**places // denominator).rjust(places + 1, "0")
    sign = "-" if numerator < 0 else ""
    return f"{sign}{digits[:-places]}.{digits[-places:]}"


def _evaluate(node: ast.AST, source: str, depth: int) -> Fraction:
    if depth > MAX_DEPTH:
        raise ValueError("expression is nested too deeply")
    if isinstance(node, ast.Constant):
        return _number(node, source)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _evaluate(node.operand, source, depth + 1)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left = _evaluate(node.left, source, depth + 1)
        right = _evaluate(node.right, source, depth + 1)
        return _checked(_apply(node.op, left, right))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitXor):
        raise ValueError(f"{_ONLY}; write ** for a power, not ^")
    raise ValueError(_ONLY)


def _number(node: ast.Constant, source: str) -> Fraction:
    value = node.value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(_ONLY)
    if isinstance(value, int):
        return _checked(Fraction(value))
    # a float literal: read its text, so the decimal is exact (and an exponent is bounded before it is used)
    text = (ast.get_source_segment(source, node) or "").replace("_", "")
    found = _DECIMAL.fullmatch(text)
    if not found:
        raise ValueError(_ONLY)
    exponent = int(found.group(3) or 0)
    if abs(exponent) > MAX_DIGITS + MAX_CHARS:
        raise ValueError(f"a number has more than {MAX_DIGITS} digits")
    return _checked(Fraction(text))


def _apply(op: ast.operator, left: Fraction, right: Fraction) -> Fraction:
    if isinstance(op, ast.Add):
        return left + right
    if isinstance(op, ast.Sub):
        return left - right
    if isinstance(op, ast.Mult):
        return left * right
    if isinstance(op, ast.Pow):
        return _power(left, right)
    if right == 0:
        raise ValueError("division by zero")
    if isinstance(op, ast.Div):
        return left / right
    if isinstance(op, ast.FloorDiv):
        return Fraction(left // right)
    return left % right


def _power(base: Fraction, exponent: Fraction) -> Fraction:
    if exponent.denominator != 1:
        raise ValueError("the exponent of ** must be a whole number")
    power = exponent.numerator
    if abs(power) > MAX_EXPONENT:
        raise ValueError(f"the exponent of ** must lie between -{MAX_EXPONENT} and {MAX_EXPONENT}")
    if base == 0 and power < 0:
        raise ValueError("division by zero")
    # estimated before computing: (bits - 1) * |power| bits at least
    largest = max(base.numerator.bit_length(), base.denominator.bit_length())
    if (largest - 1) * abs(power) > _BOUND_BITS:
        raise ValueError(f"the result has more than {MAX_DIGITS} digits")
    return base**power


def _checked(value: Fraction) -> Fraction:
    if abs(value.numerator) >= _BOUND or value.denominator >= _BOUND:
        raise ValueError(f"the result has more than {MAX_DIGITS} digits")
    return value
