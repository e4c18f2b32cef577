"""Time limits on the user's code: rewards, checkers and plug-in tasks' ``load``.

rlvr runs code it did not write inside training and evaluation: a reward named by import path or plug-in
(:mod:`rlvr.rewards.checked`), a checker (:mod:`rlvr.verifiers.checker`), a plug-in task's ``load``
(:func:`rlvr.tasks.task_class`). Without a limit, one that hangs stalls a run forever, with no line saying
which. :func:`call_with_limit` runs such a call under a limit and raises :class:`UserCodeTimeout` (an
ordinary ``Exception``) when it is up; the callers turn that into one line naming the code and the item
(rewards, task loads) or a wrong verdict that is counted (checkers).

**Why signals.** A call must really be abandoned, not merely waited on: a thread cannot stop a Python
function that runs ``while True: pass`` or ``time.sleep(1e9)`` in another thread, and running every call in
a child process would cost a fork and pickling per call and break rewards that hold state (a loaded model).
In the main thread, ``signal.setitimer(ITIMER_REAL)`` delivers SIGALRM at the limit and its handler raises
inside the user's code: between two bytecodes of a Python loop, and out of a blocking call such as
``time.sleep``, ``select`` or a lock wait (PEP 475 retries those only when the handler returns; ours
raises). What the handler raises is a ``BaseException`` (like ``KeyboardInterrupt``), so the user's own
``except Exception`` does not swallow it; the timer repeats every second until the call is over, so a bare
``except:`` does not either. The timer is always cleared and the previous SIGALRM handler and timer
restored (limits nest; the earlier deadline wins).

What a signal cannot stop: a call outside the main thread (Python runs signal handlers only there), user
code that catches every interruption and carries on, and C code that does not return to the interpreter. A
watchdog thread covers what it can: it prints the one line and ends the process with exit status 2
(``os._exit``) when a call outside the main thread passes its limit, or a call in the main thread is still
running :data:`HARD_EXIT_GRACE` seconds after the signal should have stopped it. It needs the GIL to run, so
C code that holds the GIL and never checks for signals (``sum`` over a huge iterator, arithmetic on a
gigantic integer) stops neither: nothing inside the process can; ``re`` checks for signals, so a runaway
regular expression is stopped.

The limits are process-wide (:func:`set_user_code_timeout`, :func:`set_task_load_timeout`, or
:func:`configure` from a recipe's ``run`` section): ``rlvr train``, ``rlvr eval`` with a run's adapter and
``rlvr reward audit --recipe`` apply the recipe's; elsewhere the defaults hold.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: Seconds one call of the user's reward (a whole batch of completions) or checker (one completion) may take.
DEFAULT_USER_CODE_TIMEOUT = 60.0
#: Seconds a plug-in task's ``load(split)`` may take (reading or generating a large dataset can be slow).
DEFAULT_TASK_LOAD_TIMEOUT = 600.0
#: The recipe fields that set them; errors name them so the user knows what to raise.
USER_CODE_SETTING = "run.user_code_timeout"
TASK_LOAD_SETTING = "run.task_load_timeout"
#: Seconds a main-thread call may outlive its signal (stuck in C code) before the watchdog ends the process.
HARD_EXIT_GRACE = 10.0
#: After the first signal, SIGALRM repeats this often until the call is over (the user's code may catch one).
_REPEAT = 1.0

_limits: dict[str, float | None] = {"user_code": DEFAULT_USER_CODE_TIMEOUT, "task_load": DEFAULT_TASK_LOAD_TIMEOUT}
#: What sets each limit where it was set, for the lines that tell the user what to raise.
_settings: dict[str, str] = {"user_code": USER_CODE_SETTING, "task_load": TASK_LOAD_SETTING}


def check_limit(value: Any, setting: str) -> float | None:
    """``value`` as a limit in seconds: None for no limit (``None`` or 0); a user error for anything else."""
    from rlvr.errors import RlvrError

    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise RlvrError(f"{setting} must be a number of seconds >= 0 (0 or null: no limit), got {value!r}.")
    return float(value) or None


def set_user_code_timeout(seconds: float | None, setting: str = USER_CODE_SETTING) -> None:
    """The limit on each call of the user's rewards and checkers, process-wide (None or 0: no limit);
    ``setting`` is what the user sets it with (a recipe field, a command-line option), named in errors."""
    _limits["user_code"] = check_limit(seconds, setting)
    _settings["user_code"] = setting


def set_task_load_timeout(seconds: float | None, setting: str = TASK_LOAD_SETTING) -> None:
    """The limit on each ``load(split)`` of a plug-in task, process-wide (None or 0: no limit)."""
    _limits["task_load"] = check_limit(seconds, setting)
    _settings["task_load"] = setting


def user_code_timeout() -> float | None:
    return _limits["user_code"]


def task_load_timeout() -> float | None:
    return _limits["task_load"]


def user_code_setting() -> str:
    return _settings["user_code"]


def task_load_setting() -> str:
    return _settings["task_load"]


def configure(run: Any) -> None:
    """Both limits from a recipe's ``run`` section (a :class:`rlvr.recipe_sections.RunConfig`, or a mapping)."""
    get = run.get if isinstance(run, dict) else lambda key, default: getattr(run, key, default)
    set_user_code_timeout(get("user_code_timeout", DEFAULT_USER_CODE_TIMEOUT))
    set_task_load_timeout(get("task_load_timeout", DEFAULT_TASK_LOAD_TIMEOUT))


def seconds_text(seconds: float) -> str:
    return f"{seconds:g} s"


class UserCodeTimeout(Exception):  # noqa: N818 (it is what the caller sees: the user's code timed out)
    """A call under :func:`call_with_limit` did not return within ``seconds``; ``setting`` sets that limit."""

    def __init__(self, seconds: float, setting: str):
        super().__init__(f"did not return within {seconds_text(seconds)} ({setting})")
        self.seconds = seconds
        self.setting = setting


class _Expired(BaseException):
    """Raised by the SIGALRM handler inside the user's code; past ``except Exception``. Never leaves
    :func:`call_with_limit` (it becomes :class:`UserCodeTimeout` there)."""

    def __init__(self, entry: _Entry):
        super().__init__("time limit")
        self.entry = entry


class _Entry:
    """One call under a limit."""

    __slots__ = ("seconds", "deadline", "hard_deadline", "what", "setting", "running", "fired",
                 "prev_handler", "prev_timer", "started", "last_fire")

    def __init__(self, seconds: float, what: str, setting: str, grace: float):
        self.started = time.monotonic()
        self.seconds = seconds
        self.deadline = self.started + seconds
        self.hard_deadline = self.deadline + grace
        self.what = what
        self.setting = setting
        self.running = False
        self.fired = False
        self.last_fire = -math.inf
        self.prev_handler: Any = None
        self.prev_timer: tuple[float, float] = (0.0, 0.0)


def call_with_limit(seconds: float | None, what: str, func: Callable[..., T], args: tuple[Any, ...] = (),
                    kwargs: dict[str, Any] | None = None, setting: str | None = None) -> T:
    """``func(*args, **kwargs)``, abandoned after ``seconds`` (None or 0: no limit) with :class:`UserCodeTimeout`.

    ``what`` names the call in the watchdog's last line ("reward 'x.py:f' on a batch of 16 completions");
    ``setting`` names the limit (default: what set the user-code limit). Arguments come as a tuple and a dict so
    that the user's keyword arguments (a reward's dataset columns) can have any name.
    """
    kwargs = kwargs or {}
    setting = setting or user_code_setting()
    if not seconds or seconds <= 0:
        return func(*args, **kwargs)
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return _call_watched(seconds, what, setting, func, args, kwargs)
    entry = _Entry(seconds, what, setting, HARD_EXIT_GRACE)
    _arm(entry)
    try:
        entry.running = True
        result = func(*args, **kwargs)
        entry.running = False
    except _Expired as expired:
        entry.running = False
        if expired.entry is not entry:  # an enclosing limit ran out first: it is that call's to report
            raise
        raise UserCodeTimeout(seconds, setting) from None
    finally:
        entry.running = False
        _disarm(entry)
    if entry.fired:  # the user's code caught the signal's exception and returned anyway: still over the limit
        raise UserCodeTimeout(seconds, setting)
    return result


# ----------------------------------------------------------------------------------------- signals

_stack: list[_Entry] = []  # the calls under a limit in the main thread, outermost first


def _arm(entry: _Entry) -> None:
    entry.prev_handler = signal.getsignal(signal.SIGALRM)
    entry.prev_timer = signal.getitimer(signal.ITIMER_REAL)
    delay = entry.seconds
    if entry.prev_timer[0] > 0:  # an enclosing limit (ours or someone's): the earlier deadline fires first
        delay = min(delay, entry.prev_timer[0])
    _stack.append(entry)
    _watch(entry)
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, delay, _REPEAT)


def _disarm(entry: _Entry) -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)
    _unwatch(entry)
    if entry in _stack:
        _stack.remove(entry)
    signal.signal(signal.SIGALRM, entry.prev_handler if entry.prev_handler is not None else signal.SIG_DFL)
    remaining, interval = entry.prev_timer
    if remaining > 0:  # the enclosing timer resumes with what is left of it (at once when nothing is)
        left = remaining - (time.monotonic() - entry.started)
        signal.setitimer(signal.ITIMER_REAL, max(left, 1e-4), interval)


def _on_alarm(signum: int, frame: Any) -> None:
    now = time.monotonic()
    for entry in _stack:  # outermost first: an expired enclosing call unwinds everything inside it
        # Once per _REPEAT at most: a timer resumed at once after an inner call's cleanup must not raise again
        # into this call's own cleanup.
        if entry.running and now >= entry.deadline - 1e-3 and now >= entry.last_fire + 0.9 * _REPEAT:
            entry.fired = True
            entry.last_fire = now
            raise _Expired(entry)
    if _stack:  # no call of ours is due: a timer that was set before the outermost one
        outer = _stack[0]
        if outer.prev_timer[0] > 0 and now >= outer.started + outer.prev_timer[0] - 1e-3 and callable(outer.prev_handler):
            outer.prev_handler(signum, frame)
        else:  # early (timer granularity) or stale: try again shortly
            due = min((max(e.deadline, e.last_fire + 0.9 * _REPEAT) for e in _stack if e.running), default=now + _REPEAT)
            signal.setitimer(signal.ITIMER_REAL, max(due - now, 1e-3), _REPEAT)


# ----------------------------------------------------------------------------------------- the watchdog

_watched: set[_Entry] = set()
_cond = threading.Condition()
_watchdog: threading.Thread | None = None
_next_wake = math.inf


def _call_watched(seconds: float, what: str, setting: str, func: Callable[..., T], args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> T:
    """Outside the main thread: the call cannot be interrupted; the watchdog ends the process at the limit."""
    entry = _Entry(seconds, what, setting, 0.0)
    entry.running = True
    _watch(entry)
    try:
        return func(*args, **kwargs)
    finally:
        _unwatch(entry)


def _watch(entry: _Entry) -> None:
    global _watchdog, _next_wake
    with _cond:
        _watched.add(entry)
        if _watchdog is None or not _watchdog.is_alive():
            _watchdog = threading.Thread(target=_watch_loop, name="rlvr-user-code-watchdog", daemon=True)
            _watchdog.start()
        if entry.hard_deadline < _next_wake:
            _next_wake = entry.hard_deadline
            _cond.notify()


def _unwatch(entry: _Entry) -> None:
    with _cond:
        _watched.discard(entry)


def _watch_loop() -> None:
    global _next_wake
    with _cond:
        while True:
            now = time.monotonic()
            overdue = [e for e in _watched if e.hard_deadline <= now]
            if overdue:
                _end_process(min(overdue, key=lambda e: e.hard_deadline))
            _next_wake = min((e.hard_deadline for e in _watched), default=math.inf)
            _cond.wait(None if _next_wake == math.inf else max(_next_wake - now, 0.0))


def _end_process(entry: _Entry) -> None:
    how = ("and could not be stopped: it ran outside the main thread" if entry.hard_deadline == entry.deadline
           else f"and could not be stopped {seconds_text(HARD_EXIT_GRACE)} later (it catches every interruption, or "
                 "is blocked in C code)")
    try:
        sys.stderr.write(f"rlvr: error: {entry.what} did not return within {seconds_text(entry.seconds)} "
                         f"({entry.setting}) {how}; ending the process. Raise {entry.setting} if it is only slow "
                         "(0: no limit).\n")
        sys.stderr.flush()
    finally:
        os._exit(2)
