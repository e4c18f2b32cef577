"""Stopping the user's code that keeps timing out, instead of paying its time limit on every item.

A user checker that does not return within ``run.user_code_timeout`` is stopped and that item judged wrong
(:mod:`rlvr.verifiers.checker`): one unlucky item must not end an evaluation or a run. But a checker that
hangs on half of 200 items would then cost 100 limits (100 minutes at the default 60 s) before the
evaluation or run ends, with nothing to show for it. :class:`TimeoutBreaker` counts each checker's calls
and timeouts and, once the rule below says it is broken rather than unlucky, raises a :class:`RlvrError`:
the one line (``rlvr: error: ...``) naming it, how many of its calls timed out, the limit and what to fix.
``rlvr eval``, the in-training evaluations, the held-out verdict and training's ``correctness`` reward all
judge through the checker, so all stop there.

**The rule** (:func:`broken`) counts distinct *items*, not calls: training asks the checker about several
completions of the same item in a row (GRPO's group), and an item the checker hangs on hangs for each of
them; that is still one unlucky item. The checker is broken when the last :data:`STREAK` different items it
was called on all timed out (it hangs on everything: stopped after 3 limits, or one group more), or when at
least :data:`MIN_ITEMS` items timed out and they are at least :data:`SHARE` of the items it was called on
(it hangs on many: one hanging on every other item is stopped after 10 items instead of all of them).

Other user code under a limit needs no breaker: a reward named by import path or plug-in stops the run on its
first timeout (:mod:`rlvr.rewards.checked`), and a plug-in task's ``load`` on its only one. A program the
*model* wrote that times out in the sandbox is the policy's doing, scored 0 as it should be, not a fault to stop on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rlvr.errors import RlvrError
from rlvr.timeouts import seconds_text

#: Broken when this many different items in a row timed out (calls on the same item neither add nor reset).
STREAK = 3
#: ... or when at least this many items timed out,
MIN_ITEMS = 5
#: ... and they are at least this share of the items it was called on so far.
SHARE = 0.5


def broken(streak: int, items_timed_out: int, items_called: int) -> bool:
    """The rule: ``streak`` different items in a row timed out, or ``items_timed_out`` of ``items_called`` are many."""
    return streak >= STREAK or (items_timed_out >= MIN_ITEMS and items_timed_out >= SHARE * items_called)


def item_key(row: Mapping[str, Any]) -> int:
    """What tells one item from another: the whole row (an ``id`` column is not always there), hashed so that a
    long run keeps a number per item, not its text."""
    try:
        return hash(json.dumps(row, sort_keys=True, default=str))
    except (TypeError, ValueError):  # keys of mixed types
        return hash(repr(sorted(row.items(), key=lambda pair: str(pair[0]))))


class TimeoutBreaker:
    """Counts one piece of the user's code's calls and timeouts; :meth:`record` raises once it is broken.

    ``what`` names it in the line ("verifier 'checks.py:check'"), ``fix`` says what the user fixes ("the
    checker function checks.py:check").
    """

    def __init__(self, what: str, fix: str):
        self.what = what
        self.fix = fix
        self.calls = 0
        self.timeouts = 0
        self.items: set[int] = set()
        self.timed_out: dict[int, Any] = {}  # item key -> the item's id, as shown
        self.streak: list[int] = []  # the different items timed out since the last call that returned

    def record(self, row: Mapping[str, Any], timed_out: bool, seconds: float | None = None,
               setting: str | None = None) -> None:
        """One call on ``row``'s item: whether it timed out (after ``seconds``, the limit ``setting`` sets)."""
        key = item_key(row)
        self.calls += 1
        self.items.add(key)
        if not timed_out:
            self.streak.clear()
            return
        self.timeouts += 1
        self.timed_out.setdefault(key, row.get("id"))
        if key not in self.streak:
            self.streak.append(key)
        if broken(len(self.streak), len(self.timed_out), len(self.items)):
            raise RlvrError(self._line(seconds, setting))

    def _line(self, seconds: float | None, setting: str | None) -> str:
        limit = f"{seconds_text(seconds)} ({setting})" if seconds else f"its limit ({setting})"
        ids = [str(i) for i in self.timed_out.values() if i is not None]
        shown = f": ids {', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''}" if ids else ""
        return (f"{self.what} timed out on {self.timeouts} of its {self.calls} calls so far ({len(self.timed_out)} of "
                f"{len(self.items)} items{shown}), each stopped after {limit}; stopping now rather than wait "
                f"that long on every item. Fix {self.fix} so it returns on such items, or raise {setting} if it is "
                "only slow (0: no limit).")
