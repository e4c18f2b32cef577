"""Files that later steps trust are complete or absent.

A run killed mid-write (SIGKILL, the OOM killer, a full disk) must not leave a half file that a
rerun reads as finished: a ``summary.json`` cut in the middle, an adapter directory without its
weights. Everything here writes beside the target (``NAME.partial-PID``), flushes it to disk and
renames it into place, which POSIX makes atomic: a reader sees the old file or the new one.

Directories swap the same way: the new one is built aside, the old one (if any) renamed out of the
way, the new one renamed in, the old one removed. A kill between the two renames leaves the old one
under ``NAME.old-PID`` and no ``NAME``: absent, never half.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


def partial_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.partial-{os.getpid()}")


@contextlib.contextmanager
def open_atomic(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Like ``open(path, mode)``; the file appears at ``path`` only when the block ends without error."""
    target = Path(path)
    partial = partial_path(target)
    try:
        with open(partial, mode, encoding=None if "b" in mode else encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()


def write_text(path: str | Path, text: str) -> None:
    with open_atomic(path) as handle:
        handle.write(text)


def write_json(path: str | Path, data: Any, indent: int | None = 2) -> None:
    write_text(path, json.dumps(data, indent=indent, ensure_ascii=False) + "\n")


@contextlib.contextmanager
def replacing_dir(path: str | Path) -> Iterator[Path]:
    """Yield a fresh directory to fill; on success it replaces ``path`` whole, on error it is removed."""
    target = Path(path)
    building = partial_path(target)
    remove_stale(target)
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    try:
        yield building
        swap_in(building, target)
    finally:
        shutil.rmtree(building, ignore_errors=True)


def remove_stale(target: Path) -> None:
    """Remove what killed processes left beside ``target`` (``NAME.partial-PID``, ``NAME.old-PID``): half copies
    of a model can weigh gigabytes."""
    for path in target.parent.glob(f"{glob.escape(target.name)}.*-*"):
        kind, _, pid = path.name[len(target.name) + 1:].partition("-")
        if kind not in ("partial", "old") or not pid.isdigit() or pid_alive(int(pid)):
            continue
        if kind == "old" and not target.exists():
            os.replace(path, target)  # killed between its two renames: the old one is whole, put it back
        elif path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def swap_in(building: Path, target: Path) -> None:
    """Rename the complete directory ``building`` to ``target``, replacing (then removing) any old one."""
    old = target.with_name(f"{target.name}.old-{os.getpid()}")
    if target.exists():
        os.replace(target, old)
    os.replace(building, target)
    shutil.rmtree(old, ignore_errors=True)


def out_of_space(error: BaseException, directory: str | Path) -> bool:
    """Whether ``error``, raised while writing under ``directory``, came from a full disk or quota.

    Not only ``OSError``: safetensors raises its own error type and torch.save a RuntimeError ("unexpected
    pos"), so a failure with (almost) no space left on that filesystem counts too.
    """
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    if "No space left" in str(error) or "Disk quota exceeded" in str(error):
        return True
    try:
        return shutil.disk_usage(existing_ancestor(Path(directory))).free < 4 << 20
    except OSError:
        return False


def existing_ancestor(path: Path) -> Path:
    """``path`` itself when it exists, else its nearest ancestor that does."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
