"""Tasks by name. Importing this package registers every task module in it."""

import importlib
import pkgutil
from typing import Any

from rlvr.config_utils import build_dataclass
from rlvr.tasks.base import TASKS, Task

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_") and _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")


def get_task(name: str, options: dict[str, Any] | None = None) -> Task:
    """Instantiate the task ``name`` with ``options`` (validated against its fields)."""
    cls = TASKS.get(name)
    return build_dataclass(cls, options or {}, where=f"task '{name}'")


__all__ = ["TASKS", "Task", "get_task"]
