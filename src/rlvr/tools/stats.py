"""What an evaluation's conversations did with their tools: how many called one, how often, and to what end."""

from __future__ import annotations

from typing import Any


def tool_use_stats(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Shares over ``records`` (each with ``tool_calls``, ``tool_errors``, ``tool_turns``, ``cut_by_turn_limit`` and
    ``correct``): completions that called a tool, calls and turns per completion, failed calls, conversations cut
    by the turn limit, and accuracy among those that called a tool and those that did not."""
    n = len(records)
    if not n:
        return {}
    used = [r for r in records if r.get("tool_calls")]
    unused = [r for r in records if not r.get("tool_calls")]
    calls = sum(int(r.get("tool_calls") or 0) for r in records)
    return {
        "used_share": len(used) / n,
        "calls_per_completion": calls / n,
        "turns_per_completion": sum(int(r.get("tool_turns") or 0) for r in records) / n,
        "error_share": (sum(int(r.get("tool_errors") or 0) for r in records) / calls) if calls else None,
        "cut_by_turn_limit_share": sum(bool(r.get("cut_by_turn_limit")) for r in records) / n,
        "accuracy_with_tool": (sum(bool(r.get("correct")) for r in used) / len(used)) if used else None,
        "accuracy_without_tool": (sum(bool(r.get("correct")) for r in unused) / len(unused)) if unused else None,
    }


def tool_line(stats: dict[str, Any]) -> str:
    """One line for the console: ``tool used by 84.0% (0.9 calls each, 2.1% failed)``."""
    if not stats:
        return ""
    failed = stats.get("error_share")
    failed_text = f", {failed:.1%} of calls failed" if failed is not None else ""
    return (f"tool used by {stats['used_share']:.1%} ({stats['calls_per_completion']:.2f} calls each{failed_text}, "
            f"{stats['cut_by_turn_limit_share']:.1%} cut by the turn limit)")


def tool_batch_metrics(batch: dict[str, Any], tokenizer: Any, max_turns: int) -> dict[str, float]:
    """Training rollouts' tool use, read off TRL's batch: each run of zeros in ``tool_mask`` is one tool reply. The
    share of completions that called a tool, tool turns per completion, and the share cut by the turn limit (as
    many replies as the limit allows and a last turn that calls again). TRL logs calls per completion
    (``tools/call_frequency``) and the failed calls' share (``tools/failure_frequency``) itself."""
    rows = []
    for ids, tools, valid in zip(batch["completion_ids"].tolist(), batch["tool_mask"].tolist(),
                                 batch["completion_mask"].tolist(), strict=True):
        length = sum(valid)
        mask = tools[:length]
        replies = sum(1 for i, m in enumerate(mask) if m == 0 and (i == 0 or mask[i - 1] == 1))
        last_zero = max((i for i, m in enumerate(mask) if m == 0), default=-1)
        last_turn = tokenizer.decode(ids[last_zero + 1 : length])
        rows.append((replies, replies >= max_turns and "</tool_call>" in last_turn))
    n = max(1, len(rows))
    return {"tools/used_share": sum(1 for r, _ in rows if r) / n,
            "tools/turns_per_completion": sum(r for r, _ in rows) / n,
            "tools/cut_by_turn_limit_share": sum(1 for _, cut in rows if cut) / n}


def probe_tool_use(sampled: list[list[Any]], outcomes: list[list[Any]]) -> dict[str, Any]:
    """The base model's tool use in ``rlvr probe``'s sampled generations (``.extra`` from rlvr.tools.turns), with
    their outcomes (``.correct``): how often it calls, and how many calls end in a right answer (none: GRPO has no
    right call to reinforce)."""
    records = [{**(x.extra or {}), "correct": o.correct}
               for group, judged in zip(sampled, outcomes, strict=True) for x, o in zip(group, judged, strict=True)]
    stats = tool_use_stats(records)
    stats["right_after_a_call"] = sum(1 for r in records if r.get("tool_calls") and r["correct"])
    stats["completions"] = len(records)
    return stats
