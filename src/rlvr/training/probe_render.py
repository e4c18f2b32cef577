"""``rlvr probe``'s figures and verdict shown to the user: the console table and the one line ``rlvr train``
prints (probe.json is :meth:`rlvr.training.probe_verdict.Probe.to_json`)."""

from __future__ import annotations

from rlvr.training.probe_verdict import Probe


def table(result: Probe) -> str:
    """The console table: one figure a line."""
    f = result.figures
    g = f.group_size

    def pct(value: float | None) -> str:
        return "n/a (no answer form)" if value is None else f"{value:.1%}"

    lines = [
        f"rlvr probe: {result.info.get('rows', f'{f.items} training rows')}, base model, groups of {g}",
        f"  greedy accuracy           {pct(f.greedy_accuracy)}   format {pct(f.greedy_format_rate)}",
        f"  sampled pass@1            {pct(f.pass_at_1)}   pass@{g} {pct(f.pass_at_g)}   format {pct(f.format_rate)}",
        f"  completions               {f.mean_tokens:.1f} tokens mean; cut at {f.max_tokens}: {pct(f.truncated)}, "
        f"stopped at the answer: {pct(f.stopped_at_answer)}, ended by EOS: {pct(f.ended_eos)}",
        f"  groups (judge)            all right {pct(f.groups_all_right)}   all wrong {pct(f.groups_all_wrong)}",
        f"  zero-variance groups      {pct(f.zero_variance)} (all right {pct(f.zero_variance_all_right)}, "
        f"all wrong {pct(f.zero_variance_all_wrong)}, other {pct(f.zero_variance_other)})",
    ]
    lines += [f"  {name:<25} greedy {pct(x['greedy'])}   pass@1 {pct(x['pass_at_1'])}   "
              f"pass@{g} {pct(x['pass_at_g'])}" for name, x in f.flags.items()]
    if f.constant is not None:
        lines.append(f"  constant answer           {pct(f.constant['accuracy'])} always answering {f.constant['answer']!r} "
                     f"(the train split's most common)")
    if f.answer_in_prompt is not None:
        lines.append(f"  answers in the question   {pct(f.answer_in_prompt)} beyond chance (own question vs another's)")
    if f.chance is not None:
        c = f.chance
        lines.append(f"  chance                    {pct(c.chance)} ({c.options:.1f} options, {c.options_from}); "
                     f"always {c.majority_letter}: {pct(c.majority_accuracy)}; guessing pass@{g} {pct(c.random_pass_at_g)}")
    tools = result.info.get("tools")
    if tools:
        lines.append(f"  tool calls                {pct(tools['used_share'])} of sampled completions call a tool; "
                     f"{tools['right_after_a_call']} of {tools['completions']} end right after a call"
                     + ("" if tools["right_after_a_call"] else " (none: GRPO has no right call to reinforce"
                        + ("; task.tool_choice: required opens the call for it)" if not tools["used_share"]
                           and tools.get("tool_choice") == "auto" else ")")))
    lines.append(f"  verdict                   {result.verdict.line()}")
    return "\n".join(lines)


def one_line(result: Probe) -> str:
    """The verdict and its figures in one line (``rlvr train`` with ``run.probe_items``)."""
    f = result.figures
    return (f"rlvr probe ({f.items} items): {result.verdict.line()} [greedy {f.greedy_accuracy:.0%}, pass@1 "
            f"{f.pass_at_1:.0%}, pass@{f.group_size} {f.pass_at_g:.0%}, zero-variance {f.zero_variance:.0%}, "
            f"cut {f.truncated:.0%}]")
