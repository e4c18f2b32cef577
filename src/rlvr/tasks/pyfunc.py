"""Generated one-line Python functions, judged by running their unit tests (the ``pyfunc`` task).

Small models fail nearly every MBPP and HumanEval problem, so execution rewards give
GRPO nothing to compare. ``pyfunc`` asks for functions a 135M instruct model can
sometimes write: "Write a Python function add_n(x) that returns x plus 3." Each
problem comes from one of the templates of :mod:`rlvr.tasks.pyfunc_templates` (integer, string and list
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
held-out templates, train and validation only from the others (:mod:`rlvr.tasks.pyfunc_held_out`:
near-duplicate templates are held out together when chosen by count).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlvr.errors import RlvrError
from rlvr.registry import closest
from rlvr.tasks.base import TASKS, check_split
from rlvr.tasks.code import CHAT_STOPS, PROGRAM_STOPS, CodeTask
from rlvr.tasks.code_datasets import INSTRUCT_MBPP
from rlvr.tasks.pyfunc_held_out import held_out_templates
from rlvr.tasks.pyfunc_templates import TEMPLATES, Template, distinct_problems, problem_stream
from rlvr.tasks.splits import PRIORITY, QuestionPool

_SPLIT_OFFSETS = {"train": 0, "validation": 1_000_003, "test": 2_000_003}
#: Candidates drawn per requested item before a split is declared impossible.
_DRAWS_PER_ITEM = 40


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
