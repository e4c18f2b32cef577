"""Tasks by name. Importing this package registers every task module in it.

A task name may also be the user's own: a plug-in's entry point (group ``rlvr.tasks``) or an import path
(``mypkg.tasks:MyTask``, ``my_task.py:MyTask``) naming a :class:`Task` subclass written as a dataclass.
"""

import dataclasses
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
    return cls


def get_task(name: str, options: dict[str, Any] | None = None) -> Task:
    """Instantiate the task ``name`` with ``options`` (validated against its fields)."""
    cls = task_class(name)
    return build_dataclass(cls, options or {}, where=f"task '{name}'")


__all__ = ["TASKS", "Task", "get_task", "task_class"]
