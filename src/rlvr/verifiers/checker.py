"""The user's own checker as a file task's verifier: ``function(completion, row) -> bool | float``.

``completion`` is the text the model wrote (the last assistant message of a chat); ``row`` is the item's
line of the user's JSONL file, as a dict. The checker returns True/False or a score in [0, 1] (1 is
correct; a score is also the partial credit its ``correctness`` reward pays).

A checker is the user's code run on model output, so it may fail on some item. That item is judged
wrong, and the failure is returned in :attr:`Verdict.error` for the task to count and report; the run
goes on. A return value that is not a bool or a number in [0, 1] counts as such a failure, and so does a call
that does not return within ``run.user_code_timeout`` seconds (:mod:`rlvr.timeouts`): it is abandoned. A checker
that keeps timing out stops the evaluation or run with one line (:mod:`rlvr.timeout_breaker`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from rlvr.plugins import load_callable
from rlvr.timeout_breaker import TimeoutBreaker
from rlvr.timeouts import UserCodeTimeout, call_with_limit, seconds_text, user_code_timeout
from rlvr.verifiers.answers import Verdict, answer_text


class CheckerVerifier:
    answer_form = "the answer alone"

    def __init__(self, spec: str):
        self.spec = spec
        self.func = load_callable(spec, "verifier")
        self.breaker = TimeoutBreaker(f"verifier '{spec}'", f"the checker function {spec}")

    def verify(self, completion: str, gold: Any, row: Mapping[str, Any]) -> Verdict:
        text, phrase = answer_text(completion)
        well_formed = self.form(completion)
        try:
            result = call_with_limit(user_code_timeout(), f"verifier '{self.spec}' on item {row.get('id', '?')}",
                                     self.func, (completion, dict(row)))
        except UserCodeTimeout as timeout:
            self.breaker.record(row, True, timeout.seconds, timeout.setting)  # raises once it keeps timing out
            return Verdict(0.0, text, well_formed,
                           f"timed out after {seconds_text(timeout.seconds)} ({timeout.setting}) and was stopped")
        except Exception as error:  # noqa: BLE001 (the user's checker: any failure judges this item wrong)
            self.breaker.record(row, False)
            return Verdict(0.0, text, well_formed, f"raised {type(error).__name__}: {_short(error)}")
        self.breaker.record(row, False)
        if hasattr(result, "item") and not isinstance(result, (bool, int, float)):
            try:  # numpy and torch scalars
                result = result.item()
            except (TypeError, ValueError):
                pass
        if isinstance(result, bool):
            return Verdict(1.0 if result else 0.0, text, well_formed)
        if isinstance(result, numbers.Real) and math.isfinite(result) and 0.0 <= float(result) <= 1.0:
            return Verdict(float(result), text, well_formed)
        return Verdict(0.0, text, well_formed,
                       f"returned {_short(repr(result))}; a checker returns True/False or a number in [0, 1]")

    def check_gold(self, gold: Any) -> str | None:
        return None  # the checker alone knows what a valid gold is

    def form(self, completion: str) -> bool:
        text, phrase = answer_text(completion)
        return phrase and bool(text)


def _short(value: Any) -> str:
    text = str(value).strip()
    text = text.splitlines()[0] if text else "no message"
    return text if len(text) <= 120 else text[:117] + "..."
