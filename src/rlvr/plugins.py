"""Objects named by import path or installed as plug-ins: the user's tasks, rewards and checkers.

A recipe may name, instead of a built-in:

* ``module:attr`` (``mypkg.rewards:brevity``): imported the ordinary way, from ``sys.path``
  (the current directory comes first under ``python -m`` and ``rlvr``; installed packages anyway);
* ``path/to/file.py:attr`` (``my_rewards.py:brevity``): the file loaded as a module, relative to the
  current directory;
* a name registered by an installed package under an entry-point group (``rlvr.tasks``,
  ``rlvr.rewards``) in its ``pyproject.toml``: ``[project.entry-points."rlvr.rewards"] brevity =
  "mypkg.rewards:brevity"``.

Every failure is one :class:`~rlvr.errors.RlvrError` line naming what was asked for and what went wrong:
a module that does not import (with the import's own error), a file that does not exist, a missing
attribute (with the closest names the module has), an object that is not callable.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError
from rlvr.registry import closest

#: Entry-point groups an installed package registers its tasks and rewards under.
TASK_GROUP = "rlvr.tasks"
REWARD_GROUP = "rlvr.rewards"


def is_reference(name: str) -> bool:
    """Whether ``name`` is an import path (``module:attr`` or ``file.py:attr``) rather than a registered name."""
    return isinstance(name, str) and ":" in name and not name.startswith(":") and not name.endswith(":")


def load_reference(reference: str, kind: str) -> Any:
    """The object ``reference`` (``module:attr`` or ``path/file.py:attr``) names; ``kind`` words the errors."""
    if not is_reference(reference):
        raise RlvrError(f"{kind} '{reference}' is not an import path: write module:name or path/to/file.py:name.")
    where, _, attr = reference.rpartition(":")
    module = _load_file(where, kind, reference) if where.endswith(".py") else _import(where, kind, reference)
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            hint = closest(part, names)
            suggestion = f" Did you mean '{hint}'?" if hint else ""
            raise RlvrError(f"{kind} '{reference}': {where} has no attribute '{part}'.{suggestion}")
        obj = getattr(obj, part)
    return obj


def load_callable(reference: str, kind: str) -> Any:
    """:func:`load_reference`, which must name something callable."""
    obj = load_reference(reference, kind)
    if not callable(obj):
        raise RlvrError(f"{kind} '{reference}' names a {type(obj).__name__}, not a function or class.")
    return obj


def _import(module_name: str, kind: str, reference: str) -> Any:
    if str(Path.cwd()) not in sys.path and "" not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # as `python -m` would: the user's own modules beside their recipe
    try:
        return importlib.import_module(module_name)
    except Exception as error:  # noqa: BLE001 (anything the user's module raises on import is their error to see)
        raise RlvrError(f"{kind} '{reference}': module '{module_name}' does not import: "
                        f"{type(error).__name__}: {_first_line(error)}") from None


def _load_file(path_text: str, kind: str, reference: str) -> Any:
    path = Path(path_text).expanduser()
    if not path.is_file():
        raise RlvrError(f"{kind} '{reference}': no such file: {path_text} (relative paths start at {Path.cwd()}).")
    resolved = path.resolve()
    # One module per file, named after its path, so a file imported twice is loaded once.
    name = f"rlvr_user_{resolved.stem}_{hashlib.sha1(str(resolved).encode()).hexdigest()[:10]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise RlvrError(f"{kind} '{reference}': {path_text} cannot be loaded as a Python module.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # noqa: BLE001
        del sys.modules[name]
        raise RlvrError(f"{kind} '{reference}': {path_text} does not import: "
                        f"{type(error).__name__}: {_first_line(error)}") from None
    return module


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else "(no message)"


# ----------------------------------------------------------------------------------------- entry points


@dataclass(frozen=True)
class Plugin:
    """One entry point of an installed package: its name, what it points at, and the distribution."""

    name: str
    value: str
    distribution: str

    def load(self, kind: str) -> Any:
        return load_callable(self.value, f"{kind} '{self.name}' (plug-in from {self.distribution})")


def plugins(group: str) -> dict[str, Plugin]:
    """Entry points of ``group`` in the installed distributions, by name (the first found wins)."""
    found: dict[str, Plugin] = {}
    for entry in metadata.entry_points(group=group):
        dist = getattr(entry, "dist", None)
        label = f"{dist.name} {dist.version}" if dist is not None else "an installed package"
        found.setdefault(entry.name, Plugin(entry.name, entry.value, label))
    return found
