"""The user's reward functions, checked on every call.

A reward named by import path (``my_rewards.py:brevity``, ``mypkg.rewards:brevity``) or installed as a
plug-in (entry-point group ``rlvr.rewards``) is a plain function with TRL's signature,
``reward(completions, **columns) -> list[float]``. rlvr wraps it so a broken reward stops the run with
one line naming the reward and the item, instead of TRL's tensor error or, worse, a silent 0:

* it raises: the batch is retried one item at a time to name the first item it raises on;
* it returns something that is not a list of ``len(completions)`` values;
* a value is not a real number (``None``, text, ``True``), or is NaN or infinite;
* a call does not return within ``run.user_code_timeout`` seconds (:mod:`rlvr.timeouts`): it is abandoned and
  the line names the batch (a batch that times out is not retried item by item: that could take as long
  again per item).

Items are named by their position in the batch and their ``id`` column when the dataset has one.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

from rlvr.errors import RlvrError
from rlvr.plugins import REWARD_GROUP, is_reference, load_callable, plugins
from rlvr.timeouts import UserCodeTimeout, call_with_limit, seconds_text, user_code_timeout


def plugin_reward(name: str) -> Callable[..., Any] | None:
    """The function ``name`` refers to (an entry point of ``rlvr.rewards`` or an import path); None if neither."""
    found = plugins(REWARD_GROUP).get(name)
    if found is not None:
        return found.load("reward")
    if is_reference(name):
        return load_callable(name, "reward")
    return None


def plugin_factory(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """A reward factory (as :data:`rlvr.rewards.base.REWARDS` holds) for a user function: recipe params are bound
    as keyword arguments and every call is checked (:func:`checked`)."""

    def factory(**params: Any) -> Callable[..., list[float]]:
        bound = functools.partial(func, **params) if params else func
        return checked(name, bound, getattr(func, "__name__", name.rpartition(":")[2]))

    factory.default_weight = float(getattr(func, "default_weight", 1.0))  # type: ignore[attr-defined]
    return factory


def checked(label: str, func: Callable[..., Any], log_name: str) -> Callable[..., list[float]]:
    """``func`` with its results checked; ``label`` names it in errors, ``log_name`` is what TRL logs it as."""

    def reward(completions: Sequence[Any], **columns: Any) -> list[float]:
        count = len(completions)
        limit = user_code_timeout()
        try:
            values = call_with_limit(limit, f"reward '{label}' on {_batch(count, columns)}", func, (completions,),
                                     columns)
        except RlvrError:
            raise
        except UserCodeTimeout as timeout:
            raise RlvrError(_timed_out(label, timeout, _batch(count, columns))) from None
        except Exception as error:  # noqa: BLE001 (the user's code: any exception is reported, never swallowed)
            index, error = _first_raising(func, completions, columns, error, limit, label)
            if isinstance(error, UserCodeTimeout):
                raise RlvrError(_timed_out(label, error, f"{_item(index, count, columns)} (retried alone after the "
                                           "batch raised)")) from None
            raise RlvrError(f"reward '{label}' raised {type(error).__name__} ({_short(error)}) on "
                            f"{_item(index, count, columns)}.") from None
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) and not hasattr(values, "tolist"):
            raise RlvrError(f"reward '{label}' returned a {type(values).__name__}; it must return a list of "
                            f"{count} numbers, one per completion.")
        values = values.tolist() if hasattr(values, "tolist") else list(values)
        if len(values) != count:
            raise RlvrError(f"reward '{label}' returned {len(values)} values for {count} completions; "
                            "it must return one number per completion.")
        out = []
        for index, value in enumerate(values):
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise RlvrError(f"reward '{label}' returned {value!r} ({type(value).__name__}) for "
                                f"{_item(index, count, columns)}; each value must be a number.")
            if not math.isfinite(value):
                raise RlvrError(f"reward '{label}' returned {value} for {_item(index, count, columns)}; "
                                "each value must be a finite number.")
            out.append(float(value))
        return out

    reward.__name__ = reward.__qualname__ = log_name
    return reward


def _first_raising(func: Callable[..., Any], completions: Sequence[Any], columns: dict[str, Any],
                   error: Exception, limit: float | None = None, label: str = "") -> tuple[int | None, Exception]:
    """The first item ``func`` raises on alone (or does not return from within ``limit``: a
    :class:`UserCodeTimeout`), and its error; (None, the batch's error) when none does alone."""
    count = len(completions)
    for index in range(count):
        single = {k: (v[index : index + 1] if isinstance(v, list) and len(v) == count else v) for k, v in columns.items()}
        try:
            call_with_limit(limit, f"reward '{label}' on {_item(index, count, columns)}", func,
                            (list(completions[index : index + 1]),), single)
        except Exception as own:  # noqa: BLE001
            return index, own
    return None, error


def _timed_out(label: str, timeout: UserCodeTimeout, where: str) -> str:
    return (f"reward '{label}' did not return within {seconds_text(timeout.seconds)} ({timeout.setting}) on {where}; "
            f"it was stopped. Raise {timeout.setting} if it is only slow (0: no limit).")


def _batch(count: int, columns: dict[str, Any]) -> str:
    """A batch of completions, with its first ids when the dataset has an ``id`` column."""
    if count == 1:
        return _item(0, 1, columns)
    ids = columns.get("id")
    shown = ""
    if isinstance(ids, list) and len(ids) == count and count:
        shown = ", ".join(str(i) for i in ids[:3]) + (", ..." if count > 3 else "")
        shown = f" (ids {shown})"
    return f"a batch of {count} completions{shown}"


def _item(index: int | None, count: int, columns: dict[str, Any]) -> str:
    if index is None:
        return f"a batch of {count} completions (no single item raises alone)"
    ids = columns.get("id")
    name = f" (id {ids[index]})" if isinstance(ids, list) and len(ids) == count else ""
    return f"item {index} of {count}{name}"


def _short(error: BaseException) -> str:
    text = str(error).strip()
    text = text.splitlines()[0] if text else "no message"
    return text if len(text) <= 160 else text[:157] + "..."
