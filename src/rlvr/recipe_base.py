"""Recipe inheritance: ``base:`` chains merged key by key, and where each resolved value came from.

A recipe file may start with ``base: NAME`` (a built-in recipe) or ``base: PATH`` (a recipe file, relative to
the recipe's own directory, or absolute). Its sections then override the base's:

* ``model``, ``grpo``, ``run`` (and a ``task`` of the same name, or without one) merge key by key, nested
  mappings recursively; any list (``rewards``, ``run.sweep_shots``, ``grpo.report_to``, ...) replaces the base's
  whole;
* a ``task`` with another name replaces the base's task whole, and the base's ``rewards`` and
  ``run.sweep_variants`` go with it (they belong to the base's task) unless the file gives its own;
* ``name`` and ``description`` are never inherited: a file without a ``name`` is named after its file's stem,
  so its outputs do not land in the base's output directory.

A recipe whose chain sets no ``grpo`` section anywhere gets :data:`DEFAULT_RECIPE`'s ``grpo`` and the ``run``
fields that size a run (:data:`SIZING_RUN_FIELDS`), never TRL's defaults silently; :attr:`Resolved.notes`
says so in one line. Its ``model`` and ``task`` stay its own.

Every leaf value's origin is kept (:meth:`Resolved.origin`): ``file``, ``base NAME``, ``--set``, ``default``
(a dataclass default) or ``default (cpu-default)`` (the rule above); :mod:`rlvr.recipe_show` writes a resolved
recipe with a comment on each value saying so (``rlvr recipe show``).

This module reads YAML only (no TRL, no torch); :mod:`rlvr.config` validates the result into a ``Recipe``.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlvr.config_utils import check_keys
from rlvr.errors import RlvrError
from rlvr.recipe_show import flow
from rlvr.registry import closest

RECIPES_DIR = Path(__file__).parent / "recipes"
DEFAULT_RECIPE = "cpu-default"
SECTIONS = ["name", "description", "model", "task", "rewards", "grpo", "run"]

#: ``run`` fields a recipe without any ``grpo`` section takes from :data:`DEFAULT_RECIPE` beside its ``grpo``:
#: the held-out verdict, the validation that chooses the weights kept, the evaluations' generation limits and the
#: loss's memory pieces. Not ``sweep_*`` (they describe the default's own task), output or tracking.
SIZING_RUN_FIELDS = ("test_items", "eval_items", "eval_every_steps", "keep_best", "eval_split",
                     "eval_max_new_tokens", "eval_batch_size", "loss_chunk_rows")

#: The grpo and run fields the no-grpo line shows (the rest: ``rlvr recipe show``).
NOTE_FIELDS = (("grpo", "max_steps"), ("grpo", "learning_rate"), ("grpo", "per_device_train_batch_size"),
               ("grpo", "num_generations"), ("grpo", "max_completion_length"), ("run", "test_items"),
               ("run", "eval_items"))

FILE = "file"
SET = "--set"
DEFAULT = "default"
SIZED = f"default ({DEFAULT_RECIPE})"

KeyPath = tuple[str, ...]


def builtin_recipes() -> list[str]:
    return sorted(p.stem for p in RECIPES_DIR.glob("*.yaml"))


def load_yaml(path: Path) -> Any:
    """A YAML file's contents, or one line saying why not."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise RlvrError(f"{path}: invalid YAML{where}: {problem}.") from None
    except OSError as error:
        raise RlvrError(f"cannot read recipe {path}: {error.strerror}.") from None


def read_yaml(path: Path) -> dict[str, Any]:
    """A recipe file's raw sections (``base`` not resolved)."""
    data = load_yaml(path)
    if data is None:
        raise RlvrError(f"{path} is empty: a recipe needs at least a task section.")
    if not isinstance(data, dict):
        raise RlvrError(f"{path}: a recipe is a mapping of sections ({', '.join(SECTIONS)}).")
    return data


@dataclass
class Resolved:
    """A recipe's raw sections with its bases merged in (``base`` removed), and each leaf's origin."""

    path: Path
    data: dict[str, Any]
    origins: dict[KeyPath, str] = field(default_factory=dict)
    #: The bases, nearest first, as shown (built-in name or file path).
    bases: list[str] = field(default_factory=list)
    #: Lines to print when the recipe is loaded for a run (the no-grpo rule).
    notes: list[str] = field(default_factory=list)

    def origin(self, key: KeyPath) -> str:
        """Where the value at ``key`` (a path of keys) came from: its own record or its nearest ancestor's."""
        for end in range(len(key), 0, -1):
            if key[:end] in self.origins:
                return self.origins[key[:end]]
        below = sorted({label for recorded, label in self.origins.items() if recorded[: len(key)] == key})
        if below:  # a mapping: its leaves' origins
            return ", ".join(below)
        if key == ("name",):
            return f"{DEFAULT} (the file's name)"
        return DEFAULT

    def set_value(self, key: KeyPath, label: str) -> None:
        """Record that the value now at ``key`` came from ``label`` (everything under it too)."""
        _forget(self.origins, key)
        node: Any = self.data
        for part in key:
            node = node.get(part) if isinstance(node, dict) else None
        _record(self.origins, key, node, label)


def display(path: Path) -> str:
    """A built-in recipe by its name, a file by its path (relative where it lies below the working directory)."""
    try:
        if path.resolve().parent == RECIPES_DIR.resolve():
            return path.stem
    except OSError:
        pass
    absolute = Path(os.path.abspath(path))
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:  # not below the working directory
        return str(absolute)


def resolve(path: Path) -> Resolved:
    """The recipe at ``path`` with its chain of bases merged in, and the no-grpo rule applied."""
    data, origins, bases = _resolve(path, FILE, [])
    resolved = Resolved(path=path, data=data, origins=origins, bases=bases)
    if data.get("grpo") is None:
        _size_for_the_machine(resolved)
    return resolved


def _resolve(path: Path, label: str, chain: list[Path]) -> tuple[dict[str, Any], dict[KeyPath, str], list[str]]:
    data = read_yaml(path) if not chain else _read_base(path, chain[-1])
    check_keys(data, [*SECTIONS, "base"], str(path))
    data = dict(data)
    has_base = "base" in data
    reference = data.pop("base", None)
    data = {key: value for key, value in data.items() if not (key in ("model", "grpo", "run", "task") and value is None)}
    if isinstance(data.get("task"), str):
        data["task"] = {"name": data["task"]}
    if not has_base:
        origins: dict[KeyPath, str] = {}
        for key, value in data.items():
            _record(origins, (key,), value, label)
        return data, origins, []
    base_path = locate_base(reference, path)
    here = [p.resolve() for p in [*chain, path]]
    if base_path.resolve() in here:
        cycle = [display(p) for p in [*chain, path]][here.index(base_path.resolve()):] + [display(base_path)]
        raise RlvrError(f"recipe bases form a cycle: {' -> '.join(cycle)}; a recipe cannot build on itself.")
    base_data, base_origins, bases = _resolve(base_path, f"base {display(base_path)}", [*chain, path])
    merged, merged_origins = merge(base_data, base_origins, data, label)
    return merged, merged_origins, [display(base_path), *bases]


def _read_base(path: Path, child: Path) -> dict[str, Any]:
    data = load_yaml(path)
    if not isinstance(data, dict):
        held = "nothing" if data is None else f"a {type(data).__name__}"
        raise RlvrError(f"{display(child)}: base {display(path)} is not a recipe: it holds {held}, not a mapping of "
                        f"sections ({', '.join(SECTIONS)}).")
    return data


def locate_base(reference: Any, child: Path) -> Path:
    """The file ``base: reference`` of the recipe at ``child`` names: a built-in recipe or a path from ``child``'s
    directory."""
    where = display(child)
    if not isinstance(reference, str) or not reference.strip():
        raise RlvrError(f"{where}: base must name a built-in recipe (base: {DEFAULT_RECIPE}) or a recipe file "
                        f"(base: ./common.yaml), got {reference!r}.")
    reference = reference.strip()
    if "/" in reference or "\\" in reference or reference.startswith((".", "~")) or reference.endswith((".yaml", ".yml")):
        path = Path(reference).expanduser()
        path = path if path.is_absolute() else child.parent / path
        if path.is_file():
            return path
        builtin = Path(reference).stem
        hint = (f" For the built-in recipe write base: {builtin}." if builtin in builtin_recipes() and "/" not in reference
                else "")
        raise RlvrError(f"{where}: base file not found: {reference} (looked for {path}; a relative base is read from "
                        f"the recipe's own directory).{hint}")
    builtin = RECIPES_DIR / f"{reference}.yaml"
    if builtin.is_file():
        return builtin
    names = builtin_recipes()
    hint = closest(reference, names)
    suggestion = f" Did you mean '{hint}'?" if hint else ""
    beside = child.parent / f"{reference}.yaml"
    file_hint = (f" The file beside it is base: ./{reference}.yaml." if beside.is_file()
                 else " A recipe file is named by its path, e.g. base: ./common.yaml.")
    raise RlvrError(f"{where}: base '{reference}' is not a built-in recipe.{suggestion} Built-in recipes: "
                    f"{', '.join(names)}.{file_hint}")


def merge(base: dict[str, Any], base_origins: dict[KeyPath, str], child: dict[str, Any],
          label: str) -> tuple[dict[str, Any], dict[KeyPath, str]]:
    """``child``'s sections over ``base``'s (the rules in the module docstring), with each leaf's origin."""
    data = copy.deepcopy(base)
    origins = dict(base_origins)
    for key in ("name", "description"):  # never inherited
        data.pop(key, None)
        _forget(origins, (key,))
    task, base_task = child.get("task"), data.get("task")
    if isinstance(task, dict) and isinstance(base_task, dict) and task.get("name") not in (None, base_task.get("name")):
        # Another task: the base's options, rewards and held-out variants belong to the base's task.
        data.pop("task")
        _forget(origins, ("task",))
        if "rewards" not in child:
            data.pop("rewards", None)
            _forget(origins, ("rewards",))
        if not (isinstance(child.get("run"), dict) and "sweep_variants" in child["run"]) and isinstance(data.get("run"), dict):
            data["run"].pop("sweep_variants", None)
            _forget(origins, ("run", "sweep_variants"))
    _merge_into(data, origins, child, label, ())
    return data, origins


def _merge_into(node: dict[str, Any], origins: dict[KeyPath, str], child: dict[str, Any], label: str, at: KeyPath) -> None:
    for key, value in child.items():
        here = (*at, key)
        if isinstance(value, dict) and isinstance(node.get(key), dict):
            _merge_into(node[key], origins, value, label, here)
        else:
            node[key] = copy.deepcopy(value)
            _forget(origins, here)
            _record(origins, here, value, label)


def _record(origins: dict[KeyPath, str], key: KeyPath, value: Any, label: str) -> None:
    """Record ``label`` for every leaf (non-mapping value) of ``value`` at ``key``."""
    if isinstance(value, dict):
        for child_key, child_value in value.items():
            _record(origins, (*key, child_key), child_value, label)
    else:
        origins[key] = label


def _forget(origins: dict[KeyPath, str], key: KeyPath) -> None:
    for recorded in [k for k in origins if k[: len(key)] == key]:
        del origins[recorded]


def _size_for_the_machine(resolved: Resolved) -> None:
    """No ``grpo`` section anywhere in the chain: :data:`DEFAULT_RECIPE`'s, and its run sizing, said in one line."""
    default = read_yaml(RECIPES_DIR / f"{DEFAULT_RECIPE}.yaml")
    data = resolved.data
    data["grpo"] = copy.deepcopy(default.get("grpo") or {})
    _record(resolved.origins, ("grpo",), data["grpo"], SIZED)
    run = data.get("run")
    if run is None:
        run = data["run"] = {}
    taken = []
    if isinstance(run, dict):
        for key in SIZING_RUN_FIELDS:
            if key not in run and key in (default.get("run") or {}):
                run[key] = copy.deepcopy(default["run"][key])
                resolved.origins[("run", key)] = SIZED
                taken.append(key)
    shown = ", ".join(f"{key} {flow(data[section][key])}" for section, key in NOTE_FIELDS
                      if isinstance(data.get(section), dict) and key in data[section]
                      and (section == "grpo" or key in taken))
    resolved.notes.append(
        f"recipe {display(resolved.path)} has no grpo section: using {DEFAULT_RECIPE}'s ({shown}, ...); set base: or "
        f"grpo: to choose (rlvr recipe show {display(resolved.path)} lists every value)."
    )
