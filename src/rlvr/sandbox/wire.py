"""Plain-data encoding between the untrusted program and the trusted test runner.

Values cross the process boundary as tagged JSON that can only ever decode to
builtin types (None, bool, int, float, str, bytes, complex, list, tuple, dict,
set, frozenset) or to an opaque :class:`Handle`. The test runner therefore
never holds an object the program made: an ``__eq__`` that always returns True,
a ``__bool__`` that lies, or a patched method simply cannot reach it.

Subclasses of builtins (``Counter``, ``OrderedDict``, a namedtuple, an ``int``
subclass) are flattened to their base type through the base type's own methods,
so an honest program returning them compares as Python would, and a hostile one
gains nothing by overriding methods. Anything else becomes a handle: an index
the program side keeps, which the test can only pass back into the program.

Stdlib only: this module is loaded by the sandbox worker, outside the rlvr package.
"""

from __future__ import annotations

import builtins
import json
import struct

MAX_MESSAGE = 64 * 1024 * 1024
MAX_DEPTH = 200
MAX_ITEMS = 1_000_000


class WireError(Exception):
    """A value or message that cannot cross the boundary."""


class Handle:
    """Stands in the test runner for an object that is not plain data."""

    __slots__ = ("index", "kind")

    def __init__(self, index: int, kind: str):
        self.index = index
        self.kind = kind

    def __repr__(self) -> str:
        return f"<{self.kind} object from the program>"


class Named:
    """A name of the program passed as a value (a function given to another call)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class Iterated:
    """An iterator the program returned, replayed in the test runner: iterable once, equal only to itself."""

    def __init__(self, items):
        self._items = iter(list(items))

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._items)


def encode(value, handles: list | None = None, depth: int = 0):
    """JSON-ready form of ``value``; non-data objects go into ``handles`` (or raise when None)."""
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if value is None or value is True or value is False:
        return value
    if isinstance(value, Handle):
        return {"h": value.index}
    if isinstance(value, Named):
        return {"n": value.name}
    if isinstance(value, type) and getattr(builtins, getattr(value, "__name__", ""), None) is value:
        return {"y": value.__name__}  # a builtin type passed as a value, e.g. isinstance checks against int
    if isinstance(value, int):
        return int.__index__(value)
    if isinstance(value, float):
        return {"f": float.__repr__(float.__float__(value))}
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, (bytes, bytearray)):
        return {"b": bytes(value).hex()}
    if isinstance(value, complex):
        return {"c": [complex.__getattribute__(value, "real"), complex.__getattribute__(value, "imag")]}
    deeper = depth + 1
    if isinstance(value, list):
        return [encode(item, handles, deeper) for item in list.__iter__(value)]
    if isinstance(value, tuple):
        return {"t": [encode(item, handles, deeper) for item in tuple.__iter__(value)]}
    if isinstance(value, dict):
        return {"d": [[encode(k, handles, deeper), encode(v, handles, deeper)] for k, v in dict.items(value)]}
    if isinstance(value, set):
        return {"s": [encode(item, handles, deeper) for item in set.__iter__(value)]}
    if isinstance(value, frozenset):
        return {"z": [encode(item, handles, deeper) for item in frozenset.__iter__(value)]}
    if hasattr(type(value), "__next__") and hasattr(type(value), "__iter__"):
        items = []
        for item in value:  # an iterator the program returned: its items, compared as a one-shot iterator
            if len(items) >= MAX_ITEMS:
                raise WireError("iterator too long")
            items.append(encode(item, handles, deeper))
        return {"i": items}
    if handles is None:
        raise WireError(f"cannot send a {type(value).__name__} object")
    handles.append(value)
    return {"h": len(handles) - 1, "k": _type_name(value)}


def _type_name(value) -> str:
    try:
        return str.__str__(type(value).__name__)[:60]
    except Exception:
        return "object"


_TAGS = {
    "f": lambda v: float(v),
    "b": lambda v: bytes.fromhex(v),
    "c": lambda v: complex(float(v[0]), float(v[1])),
    "t": tuple,
    "d": dict,
    "s": set,
    "z": frozenset,
    "i": Iterated,
}


def decode(data):
    """Builtin values (and :class:`Handle`) from :func:`encode`'s output, checking every tag."""
    if data is None or isinstance(data, (bool, int, str)):
        return data
    if isinstance(data, float):  # json turns 1e400 into inf; fine
        return data
    if isinstance(data, list):
        return [decode(item) for item in data]
    if isinstance(data, dict) and len(data) in (1, 2):
        if "h" in data:
            index = data["h"]
            if type(index) is not int:
                raise WireError("bad handle")
            kind = data.get("k", "object")
            return Handle(index, kind if isinstance(kind, str) else "object")
        (tag, payload), = data.items()
        if tag == "n" and isinstance(payload, str):
            return Named(payload)
        if tag == "y" and isinstance(payload, str):
            found = getattr(builtins, payload, None)
            if isinstance(found, type):
                return found
            raise WireError("unknown builtin type")
        if tag in ("f", "b"):
            if not isinstance(payload, str):
                raise WireError("bad scalar")
            return _TAGS[tag](payload)
        if tag == "c":
            return _TAGS[tag](payload)
        if tag == "d":
            return {decode(k): decode(v) for k, v in payload}
        if tag in _TAGS:
            return _TAGS[tag](decode(item) for item in payload)
    raise WireError("malformed value")


def encode_message(message) -> bytes:
    """One length-prefixed JSON message."""
    body = json.dumps(message, separators=(",", ":")).encode()
    return struct.pack(">I", len(body)) + body


def send(fd: int, message) -> None:
    """Write one length-prefixed JSON message to ``fd``."""
    import os

    data = encode_message(message)
    while data:
        written = os.write(fd, data)
        data = data[written:]


def receive(fd: int):
    """Read one message from ``fd``; None at end of stream. Oversized or malformed input raises WireError."""
    header = _read_exact(fd, 4)
    if header is None:
        return None
    (size,) = struct.unpack(">I", header)
    if size > MAX_MESSAGE:
        raise WireError("message too large")
    body = _read_exact(fd, size)
    if body is None:
        return None
    try:
        return json.loads(body)
    except ValueError:
        raise WireError("malformed message") from None


def _read_exact(fd: int, size: int) -> bytes | None:
    import os

    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
