"""Name -> object registries with helpful errors.

Everything a recipe names (task, reward, model alias, launch config) resolves
through a :class:`Registry`, so an unknown name fails with the list of valid
names and the closest match.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from rlvr.errors import RlvrError

T = TypeVar("T")


def closest(name: str, choices: list[str]) -> str | None:
    """The valid choice closest to ``name``, or None when nothing is close."""
    matches = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    return matches[0] if matches else None


def unknown_name_message(kind: str, name: str, choices: list[str]) -> str:
    hint = closest(name, choices)
    suggestion = f" Did you mean '{hint}'?" if hint else ""
    return f"unknown {kind} '{name}'.{suggestion} Valid {kind}s: {', '.join(sorted(choices))}."


class Registry(Generic[T]):
    """A named collection; ``register`` is usable as a decorator."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def add(item: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} '{name}' is already registered")
            self._items[name] = item
            return item

        return add

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise RlvrError(unknown_name_message(self.kind, name, self.names())) from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
