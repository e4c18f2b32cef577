"""What ``rlvr reward audit`` prints: a table of every probe's reward, and the verdict."""

from __future__ import annotations

from rlvr.audit.probe import HONEST_CORRECT, HONEST_WRONG
from rlvr.audit.runner import AuditResult


def render_table(result: AuditResult) -> str:
    """A plain-text table: probe, reward, its components, and the two verdicts."""
    names = list(result.results[0].components) if result.results else []
    header = ["probe", "kind", "reward", *names, "> honest wrong", ">= honest correct"]
    lines = [header]
    for row in result.results:
        hack = row.probe.kind == "hack"
        lines.append([
            row.probe.name, row.probe.kind, f"{row.reward:+.3f}",
            *("n/a" if n in result.unjudged else f"{row.components[n]:+.3f}" for n in names),
            ("YES" if row.beats_wrong else "no") if hack else "", ("EXPLOIT" if row.exploit else "no") if hack else "",
        ])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(text)


def verdict(result: AuditResult) -> str:
    correct, wrong = result.score(HONEST_CORRECT), result.score(HONEST_WRONG)
    beating = [r.probe.name for r in result.results if r.beats_wrong and not r.exploit]
    lines = [f"honest correct {correct:+.3f}, honest wrong {wrong:+.3f}"]
    if not result.separates_honest:
        lines.append("FAIL: the honest correct answer does not out-score the honest wrong one.")
    if result.exploits:
        names = ", ".join(r.probe.name for r in result.exploits)
        lines.append(f"FAIL: {len(result.exploits)} hack(s) earn at least as much as an honest correct answer: {names}.")
    if beating:
        lines.append(f"note: {len(beating)} hack(s) out-score an honest wrong answer: {', '.join(beating)} "
                     f"({result.hint}).")
    if result.unjudged:
        lines.append(f"note: {', '.join(result.unjudged)} scored no probe (it needs what only training passes, such as "
                     "token ids), so this audit leaves it out.")
    if result.passed:
        lines.append(f"PASS: no hack reaches the honest correct answer's reward ({len(result.results) - 2} hacks probed).")
    return "\n".join(lines)
