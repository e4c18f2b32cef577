"""One run per output directory.

Two ``rlvr train`` in one directory (a second terminal, a re-submitted job) would mark each other's
MLflow run KILLED, interleave checkpoints and write one ``summary.json``. The first one to start holds
``.rlvr.lock`` in the directory with an exclusive ``flock``; a second one refuses in one line that
names the holder. A run that ends (even by an exception) removes the file. The kernel drops a ``flock``
when its process dies, however it dies, so the file a killed run leaves is never in the way: the next
run takes it over and says whose it was.

Under ``accelerate launch`` every rank runs the same command; only the main rank (``RANK`` 0 or
unset) takes the lock, since the ranks of one run share the directory by design.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from rlvr.atomic import existing_ancestor
from rlvr.errors import RlvrError

LOCK_FILE = ".rlvr.lock"
_held: dict[str, int] = {}  # resolved directory -> fd, for the locks this process holds (re-entrant)


@contextlib.contextmanager
def holding(output_dir: str | Path, command: str) -> Iterator[None]:
    """Hold ``output_dir`` for ``command`` (e.g. 'rlvr train') while the block runs."""
    directory = Path(output_dir).resolve()
    key = str(directory)
    if key in _held or not main_rank():
        yield
        return
    created = _missing(directory)
    directory.mkdir(parents=True, exist_ok=True)
    fd = _acquire(directory / LOCK_FILE, command)
    _held[key] = fd
    try:
        yield
    finally:
        _held.pop(key, None)
        with contextlib.suppress(FileNotFoundError):
            (directory / LOCK_FILE).unlink()  # ended, even by an exception: no lock file, no "killed?" next time
        os.close(fd)  # releases the flock
        _remove_if_empty(created)  # a run that failed before writing (a bad option) leaves no empty folders


def _missing(directory: Path) -> list[Path]:
    """The folders of ``directory``'s path that do not exist yet, deepest first."""
    existing = existing_ancestor(directory)
    return list(itertools.takewhile(lambda folder: folder != existing, (directory, *directory.parents)))


def _remove_if_empty(folders: list[Path]) -> None:
    """Remove ``folders`` (deepest first) while they are empty; the first one holding anything stops it."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def _acquire(path: Path, command: str) -> int:
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _describe(_read(fd))
            os.close(fd)
            raise RlvrError(f"{path.parent} is in use by {holder}; wait for it to end, stop it, or choose another "
                            "output directory.") from None
        if _same_file(fd, path):
            break
        os.close(fd)  # the holder ended and removed the file between our open and our lock: take the new one
    previous = _read(fd)
    if previous.get("pid"):  # a holder that ended cleanly removed the file: this one's process died holding it
        print(f"rlvr: {path.parent}: taking over the lock of {_describe(previous)}, which ended without "
              "releasing it (killed?).", file=sys.stderr, flush=True)
    _write(fd, {"pid": os.getpid(), "host": socket.gethostname(), "command": command,
                "started": time.strftime("%Y-%m-%dT%H:%M:%S")})
    return fd


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def main_rank() -> bool:
    """Whether this process is rank 0 of its launch (or not launched by accelerate/torchrun at all)."""
    return os.environ.get("RANK", "0") == "0"


def _read(fd: int) -> dict:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = json.loads(os.read(fd, 65536).decode("utf-8") or "{}")
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write(fd: int, data: dict) -> None:
    text = json.dumps(data).encode("utf-8")
    os.lseek(fd, 0, os.SEEK_SET)
    os.ftruncate(fd, 0)
    os.write(fd, text)


def _describe(holder: dict) -> str:
    if not holder.get("pid"):
        return "another rlvr process"
    where = f" on {holder['host']}" if holder.get("host") and holder["host"] != socket.gethostname() else ""
    since = f", started {holder['started']}" if holder.get("started") else ""
    return f"{holder.get('command', 'rlvr')} (pid {holder['pid']}{where}{since})"
