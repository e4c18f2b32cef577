"""The published recipe's scoring, set beside rlvr's strict verdicts so the two numbers can be compared.

The published notebook decoded prompt and completion together (``tokenizer.decode(outputs[0],
skip_special_tokens=True)``), removed commas, took the **last** integer of that text
(``re.findall(r'-?\\d+', ...)[-1]``) and compared it to the gold answer **as a string**. So it counts
an item correct when the last integer anywhere (in the completion, or in the prompt when the
completion has none) spells the gold answer: a rambling completion that happens to end on it counts,
a right answer followed by one more number does not, and a decimal or ``1,500``-style gold never
matches (``"1500" != "1,500"``). rlvr's strict verdict reads the first ``#### The final answer is``
line of the completion alone and compares numbers (see :mod:`rlvr.verifiers.math`).

This scoring never trains anything and never replaces the strict verdict; records get
``published_answer`` and ``published_correct`` beside ``correct``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rlvr.evaluation.stats import wilson_interval
from rlvr.rewards.base import completion_text

SCORINGS = ("strict", "published")
DECODINGS = ("strict", "published")
#: The published notebook's generation limit (``max_new_tokens=1024``, greedy, no stop sequence).
PUBLISHED_MAX_NEW_TOKENS = 1024
_INTEGER = re.compile(r"-?\d+")

EXPLANATION = (
    "Strict (rlvr, the training reward's verdict): the first '#### The final answer is N' line of the completion "
    "holds exactly one number equal to the gold answer. Published (the published notebook): the last integer "
    "anywhere in prompt + completion, commas removed, equals the gold answer as a string; a completion that "
    "rambles on and happens to end on the right number counts, and when the completion has no number the last "
    "number of the prompt (the question's) is taken."
)


def published_answer(text: str) -> str | None:
    """The last integer of ``text`` after removing commas, as the published notebook extracted it."""
    numbers = _INTEGER.findall(text.replace(",", ""))
    return numbers[-1] if numbers else None


def prompt_text(prompt: Any) -> str:
    """A prompt as text: plain prompts as they are, chat prompts as their contents joined (no digits are lost)."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        return "\n".join(str(m.get("content", "")) if isinstance(m, dict) else str(m) for m in prompt)
    return str(prompt)


def published_verdict(prompt: Any, completion: Any, ground_truth: Any) -> tuple[str | None, bool]:
    """(answer, correct) the published way for one completion of ``prompt``."""
    answer = published_answer(prompt_text(prompt) + completion_text(completion))
    return answer, bool(answer) and ground_truth is not None and answer == str(ground_truth)


def add_published(records: Sequence[dict[str, Any]], prompts: Sequence[Any]) -> None:
    """Add ``published_answer`` and ``published_correct`` to each record (``prompts[i]`` produced ``records[i]``)."""
    for record, prompt in zip(records, prompts, strict=True):
        answer, correct = published_verdict(prompt, record.get("completion", ""), record.get("ground_truth"))
        record["published_answer"] = answer
        record["published_correct"] = correct


def published_stats(greedy: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Published accuracy and its Wilson interval over greedy records that carry a published verdict (else {})."""
    scored = [r for r in greedy if "published_correct" in r]
    if not scored:
        return {}
    correct = sum(bool(r["published_correct"]) for r in scored)
    low, high = wilson_interval(correct, len(scored))
    return {"published_correct": correct, "published_accuracy": correct / len(scored), "published_ci95": [low, high]}


def add_published_summary(summary: dict[str, Any], records: Sequence[dict[str, Any]]) -> None:
    """Put published accuracy beside each result and a published McNemar test beside each comparison."""
    from rlvr.evaluation.stats import mcnemar_exact, paired_counts

    greedy = [r for r in records if r.get("sample") is None and "published_correct" in r]
    verdicts: dict[tuple[str, Any], dict[str, bool]] = {}
    for r in greedy:
        verdicts.setdefault((r["model"], r["shots"]), {})[str(r["id"])] = bool(r["published_correct"])
    for result in summary.get("results", []):
        chosen = [r for r in greedy if r["model"] == result["model"] and r["shots"] == result["shots"]]
        result.update(published_stats(chosen))
    for comparison in summary.get("comparisons", []):
        a = verdicts.get((comparison["first"], comparison["shots"]), {})
        b = verdicts.get((comparison["second"], comparison["shots"]), {})
        ids = [i for i in a if i in b]
        if not ids:
            continue
        both, only_first, only_second, neither = paired_counts([a[i] for i in ids], [b[i] for i in ids])
        comparison["published"] = {
            "n": len(ids), "both_correct": both, "only_first": only_first, "only_second": only_second,
            "both_wrong": neither, "accuracy_difference": (only_second - only_first) / len(ids),
            "p_value": mcnemar_exact(only_first, only_second),
        }
    summary["published_scoring"] = EXPLANATION


def check_choice(value: str, choices: tuple[str, ...], what: str) -> str:
    from rlvr.errors import RlvrError

    if value not in choices:
        raise RlvrError(f"{what} must be one of {', '.join(choices)}, got {value!r}.")
    return value
