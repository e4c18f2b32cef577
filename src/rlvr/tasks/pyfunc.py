"""Generated one-line Python functions, judged by running their unit tests (the ``pyfunc`` task).

Small models fail nearly every MBPP and HumanEval problem, so execution rewards give
GRPO nothing to compare. ``pyfunc`` asks for functions a 135M instruct model can
sometimes write: "Write a Python function add_n(x) that returns x plus 3." Each
problem comes from one of the templates below (integer, string and list
operations, with constants drawn per problem) and carries four asserts computed
from a reference implementation: the prompt shows the first (it names the function
and its signature, as MBPP's prompts do), the others stay hidden. Judging, rewards
and evaluation are the ``code`` task's: programs run in the sandbox against
``test_list`` (MBPP form).

Problems are generated offline and deterministically from ``seed``. Splits never
share a description: test, validation and train are drawn in that order, each from
its own stream, skipping descriptions an earlier split took
(:class:`rlvr.tasks.splits.QuestionPool`). By default they share templates: a test
problem "returns x plus 7" may sit beside a training problem "returns x plus 3", so
the held-out verdict measures new constants and inputs, not new kinds of function.
``test_templates`` splits by template instead: the test split is drawn only from the
held-out templates, train and validation only from the others (:func:`held_out_templates`;
near-duplicate templates, :data:`NEAR_DUPLICATES`, are held out together when chosen
by count).
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rlvr.errors import RlvrError
from rlvr.registry import closest
from rlvr.tasks.base import TASKS, check_split
from rlvr.tasks.code import CHAT_STOPS, INSTRUCT_MBPP, PROGRAM_STOPS, CodeTask
from rlvr.tasks.splits import PRIORITY, QuestionPool

_SPLIT_OFFSETS = {"train": 0, "validation": 1_000_003, "test": 2_000_003}
#: Candidates drawn per requested item before a split is declared impossible.
_DRAWS_PER_ITEM = 40
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


#: Templates whose functions differ by one operator, direction, constant's role or argument type
#: (``x + k`` / ``x - k``, ``s[:k]`` / ``xs[:k]``): a model that learned one has nearly learned the other, so
#: ``test_templates: K`` holds such a group out whole. Every other template is a group of its own.
NEAR_DUPLICATES: tuple[tuple[str, ...], ...] = (
    ("add_n", "subtract_n", "add_two"),                  # x + k, x - k, a + b + k
    ("multiply_by", "times_plus"),                       # x * k, x * a + b
    ("remainder", "int_divide", "is_divisible"),         # x % k, x // k, x % k == 0
    ("is_greater", "is_at_most"),                        # x > k, x <= k
    ("larger_of", "smaller_of"),                         # max(x, k), min(x, k)
    ("first_chars", "last_chars", "first_items"),        # s[:k], s[-k:], xs[:k]
    ("add_suffix", "add_prefix"),                        # s + w, w + s
    ("count_letter", "count_value"),                     # s.count(ch), xs.count(k)
    ("starts_with", "ends_with"),                        # s.startswith(ch), s.endswith(ch)
    ("remove_letter", "replace_letter"),                 # s.replace(ch, ""), s.replace(ch, d)
    ("add_to_each", "scale_each"),                       # [x + k ...], [x * k ...]
    ("count_above", "keep_above"),                       # count / keep the x > k
)
#: The kinds of argument a template's function takes; ``test_templates: K`` takes groups from each in turn.
KINDS = {"x": "integer", "a, b": "integer", "s": "string", "xs": "list"}


def template_groups() -> list[list[str]]:
    """Every template in one group: :data:`NEAR_DUPLICATES`, then each other template alone (``TEMPLATES`` order)."""
    grouped = {name for group in NEAR_DUPLICATES for name in group}
    groups = [list(group) for group in NEAR_DUPLICATES]
    return groups + [[t.name] for t in TEMPLATES if t.name not in grouped]


def held_out_templates(count: int, seed: int) -> list[str]:
    """``count`` template names held out for the test split, deterministically from ``seed``.

    Near-duplicates (:func:`template_groups`) go together, spread over the kinds of argument (integer, string,
    list): each kind's groups are shuffled, then the kinds take turns (in a shuffled order), each taking its next
    group that still fits, first up to an even share of ``count`` per kind, then up to ``count``. Only when no
    whole group fits the remainder is a group split. Names come back in ``TEMPLATES`` order.
    """
    if count < 1 or count >= len(TEMPLATES):
        raise RlvrError(f"pyfunc test_templates must be between 1 and {len(TEMPLATES) - 1} (of {len(TEMPLATES)} "
                        f"templates; train keeps the rest), got {count}.")
    rng = random.Random(seed)
    kind_of = {t.name: KINDS[t.params] for t in TEMPLATES}
    kinds = sorted(set(KINDS.values()))
    rng.shuffle(kinds)
    pending = {kind: [g for g in template_groups() if kind_of[g[0]] == kind] for kind in kinds}
    for groups in pending.values():
        rng.shuffle(groups)
    chosen: list[str] = []
    per_kind = dict.fromkeys(kinds, 0)
    for limit in (-(-count // len(kinds)), count):
        progress = True
        while progress:
            progress = False
            for kind in kinds:
                group = next((g for g in pending[kind] if len(chosen) + len(g) <= count
                              and per_kind[kind] + len(g) <= limit), None)
                if group is not None:
                    pending[kind].remove(group)
                    chosen += group
                    per_kind[kind] += len(group)
                    progress = True
    for name in (name for kind in kinds for group in pending[kind] for name in group):
        if len(chosen) == count:
            break
        chosen.append(name)
    rank = {t.name: i for i, t in enumerate(TEMPLATES)}
    return sorted(chosen, key=rank.__getitem__)


def distinct_problems(names: Sequence[str], draws: int = 3000) -> int:
    """About how many distinct descriptions the templates ``names`` can make (sampled; for error messages)."""
    by_name = {t.name: t for t in TEMPLATES}
    total = 0
    for name in names:
        rng = random.Random(0)
        total += len({make_problem(by_name[name], rng)["question"] for _ in range(draws)})
    return total


@TASKS.register("pyfunc")
@dataclass
class PyFuncTask(CodeTask):
    """Generated one-line Python functions with hidden asserts (the ``code`` task's judging and rewards)."""

    #: Rows per split.
    train_size: int = 600
    validation_size: int = 100
    test_size: int = 200
    #: Data seed: the same seed gives the same problems in every split.
    seed: int = 42
    #: Instruct models answer in one fenced python block (the default); false: a docstring to complete.
    chat: bool = True
    #: Split by template: None (the default) shares every template between the splits; K holds out K templates
    #: (:func:`held_out_templates`, near-duplicates together, chosen from ``test_templates_seed``); a list of
    #: template names (or one string, comma-separated) holds out those. The test split is drawn only from the
    #: held-out templates, train and validation only from the others.
    test_templates: int | list[str] | None = None
    #: The seed that chooses K held-out templates (None: ``seed``); only with ``test_templates: K``.
    test_templates_seed: int | None = None

    name = "pyfunc"

    def __post_init__(self) -> None:
        if (self.dataset, self.data) != ("mbpp", "mbpp"):
            raise RlvrError("pyfunc generates its problems: it takes no dataset or data option.")
        if self.limit is not None and self.limit < 1:
            raise RlvrError("pyfunc limit must be a positive integer.")
        if self.timeout <= 0:
            raise RlvrError("pyfunc timeout must be a positive number of seconds.")
        for name in ("train_size", "validation_size", "test_size"):
            if getattr(self, name) < 1:
                raise RlvrError(f"pyfunc {name} must be a positive integer.")
        self.held_out = self._choose_held_out()
        self.stop_patterns = CHAT_STOPS if self.chat else PROGRAM_STOPS
        self.default_rewards = [{"name": "code_execution", "partial": self.partial, "timeout": self.timeout,
                                 "memory_mb": self.memory_mb}]

    def _choose_held_out(self) -> list[str]:
        """The held-out template names (empty: the splits share every template), checked."""
        names = [t.name for t in TEMPLATES]
        chosen = self.test_templates
        if chosen is None:
            if self.test_templates_seed is not None:
                raise RlvrError("pyfunc test_templates_seed chooses held-out templates: give test_templates: K "
                                "with it, or drop it.")
            return []
        if isinstance(chosen, bool) or not isinstance(chosen, (int, str, list)):
            raise RlvrError("pyfunc test_templates must be a number of templates to hold out or a list of "
                            f"template names, got {chosen!r}.")
        if isinstance(chosen, int):
            seed = self.seed if self.test_templates_seed is None else self.test_templates_seed
            return held_out_templates(chosen, seed)
        if self.test_templates_seed is not None:
            raise RlvrError("pyfunc test_templates_seed chooses K held-out templates at random; with a list of "
                            "names there is nothing to choose: drop test_templates_seed or give test_templates: K.")
        chosen = [name.strip() for name in chosen.split(",")] if isinstance(chosen, str) else chosen
        for name in chosen:
            if name not in names:
                hint = closest(str(name), names)
                raise RlvrError(f"pyfunc test_templates: unknown template {name!r}"
                                f"{f'; did you mean {hint!r}?' if hint else '.'} Templates: {', '.join(names)}.")
        if len(set(chosen)) != len(chosen):
            twice = sorted({name for name in chosen if chosen.count(name) > 1})
            raise RlvrError(f"pyfunc test_templates names {', '.join(twice)} more than once.")
        if not chosen or len(chosen) >= len(names):
            raise RlvrError(f"pyfunc test_templates must name between 1 and {len(names) - 1} of the {len(names)} "
                            f"templates (train keeps the rest), got {len(chosen)}.")
        return [name for name in names if name in chosen]

    def load(self, split: str) -> Any:
        from datasets import Dataset

        check_split(split)
        problems = self._splits()[split]
        if self.limit is not None:
            problems = problems[: self.limit]
        return Dataset.from_list([self._record(problem, split, index) for index, problem in enumerate(problems)])

    def _splits(self) -> dict[str, list[dict[str, Any]]]:
        """Test, validation, train: each from its own stream, around the descriptions drawn before it."""
        cache = self.__dict__.setdefault("_cache", {})
        if not cache:
            taken = QuestionPool()
            for split in PRIORITY:
                size = getattr(self, f"{split}_size")
                templates = self._templates(split)
                stream = problem_stream(self.seed + _SPLIT_OFFSETS[split], templates)
                candidates = (next(stream) for _ in range(size * _DRAWS_PER_ITEM))
                try:
                    cache[split] = taken.draw(candidates, size, f"pyfunc {split} split")
                except RlvrError as error:
                    drawn = str(error).split(";")[0]
                    if not self.held_out:
                        raise RlvrError(f"{drawn}; the templates hold about 1,250 distinct problems: "
                                        "lower train_size, validation_size or test_size.") from None
                    names = [t.name for t in templates]
                    which = ("the held-out templates" if split == "test" else "the templates train and validation "
                             "share") + f" ({len(names)})"
                    raise RlvrError(f"{drawn}; {which} hold about {distinct_problems(names):,} distinct problems: "
                                    f"lower {'test_size' if split == 'test' else 'train_size or validation_size'} "
                                    f"or hold out {'more' if split == 'test' else 'fewer'} or other templates "
                                    "(test_templates).") from None
        return cache

    def _templates(self, split: str) -> list[Template]:
        """The templates ``split`` is drawn from: all by default; the held-out ones for test, the rest otherwise."""
        if not self.held_out:
            return TEMPLATES
        return [t for t in TEMPLATES if (t.name in self.held_out) == (split == "test")]

    def _record(self, problem: dict[str, Any], split: str, index: int) -> dict[str, Any]:
        tests = problem["test_list"]
        if self.chat:
            prompt: Any = [{"role": "user", "content": INSTRUCT_MBPP.format(text=problem["question"], test=tests[0])}]
        else:
            prompt = f'"""\n{problem["question"]}\n{tests[0]}\n"""\n'
        return {
            "id": f"pyfunc-{split}-{index}",
            "prompt": prompt,
            "question": problem["question"],
            "template": problem["template"],
            "code_prefix": "",
            "test_list": tests,
            "test_setup_code": "",
            "test": "",
            "entry_point": "",
            "trusted_code": "",
        }
