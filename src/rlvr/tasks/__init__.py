"""Tasks by name. Importing this package registers every task module in it.

A task name may also be the user's own: a plug-in's entry point (group ``rlvr.tasks``) or an import path
(``mypkg.tasks:MyTask``, ``my_task.py:MyTask``) naming a :class:`Task` subclass written as a dataclass.
Such a task's ``load(split)`` runs under ``run.task_load_timeout`` (:mod:`rlvr.timeouts`): one that hangs is
stopped with one line naming the task and the limit.
"""

import dataclasses
import functools
import importlib
import pkgutil
from typing import Any

from rlvr.config_utils import build_dataclass
from rlvr.errors import RlvrError
from rlvr.tasks.base import TASKS, Task

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_") and _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")


def task_class(name: str) -> type[Task]:
    """The Task class ``name`` refers to: built in, else an installed plug-in, else an import path."""
    from rlvr.plugins import TASK_GROUP, is_reference, load_callable, plugins

    if name in TASKS:
        return TASKS.get(name)
    found = plugins(TASK_GROUP).get(name)
    if found is not None:
        cls = found.load("task")
    elif is_reference(name):
        cls = load_callable(name, "task")
    else:
        try:
            TASKS.get(name)
        except RlvrError as error:
            raise RlvrError(f"{error} Your own task: 'module:Class' or 'path/to/file.py:Class'.") from None
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise RlvrError(f"task '{name}' names {getattr(cls, '__name__', cls)!r}, which is not a subclass of "
                        "rlvr.tasks.Task.")
    if not dataclasses.is_dataclass(cls):
        raise RlvrError(f"task '{name}': {cls.__name__} must be a dataclass (its fields are the task's options): "
                        "decorate it with @dataclasses.dataclass.")
    _limit_load(cls, name)
    return cls


def _limit_load(cls: type[Task], name: str) -> None:
    """The user's task class with its ``load`` run under ``run.task_load_timeout`` (once per class)."""
    load = cls.load
    if getattr(load, "_rlvr_time_limited", False) or getattr(load, "__isabstractmethod__", False):
        return

    @functools.wraps(load)
    def limited_load(self: Task, split: str, *args: Any, **kwargs: Any) -> Any:
        from rlvr.timeouts import (
            UserCodeTimeout,
            call_with_limit,
            seconds_text,
            task_load_setting,
            task_load_timeout,
        )

        try:
            return call_with_limit(task_load_timeout(), f"task '{name}': load('{split}')", load, (self, split, *args),
                                   kwargs, setting=task_load_setting())
        except UserCodeTimeout as timeout:
            raise RlvrError(f"task '{name}': load('{split}') did not return within {seconds_text(timeout.seconds)} "
                            f"({timeout.setting}); it was stopped. Raise {timeout.setting} if loading is only slow "
                            "(0: no limit).") from None

    limited_load._rlvr_time_limited = True  # type: ignore[attr-defined]
    cls.load = limited_load  # type: ignore[method-assign]


def get_task(name: str, options: dict[str, Any] | None = None) -> Task:
    """Instantiate the task ``name`` with ``options`` (validated against its fields)."""
    cls = task_class(name)
    return build_dataclass(cls, options or {}, where=f"task '{name}'")


__all__ = ["TASKS", "Task", "get_task", "task_class"]
