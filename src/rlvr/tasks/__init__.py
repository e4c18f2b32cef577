"""Tasks by name. Importing this package registers every task module in it."""

import importlib
import pkgutil

from rlvr.tasks.base import TASKS, Task, get_task

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_") and _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["TASKS", "Task", "get_task"]
