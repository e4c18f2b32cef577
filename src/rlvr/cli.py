"""The ``rlvr`` command line: a thin layer over the library.

Each subcommand lives in a module of :mod:`rlvr.commands` with a
``register(subparsers)`` function; this file only finds them, parses, and turns
user errors into one clear line on stderr and a non-zero exit.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import logging
import pkgutil
import sys

from rlvr import __version__
from rlvr.errors import RlvrError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rlvr",
        description="Reinforcement learning with verifiable rewards: GRPO training, evaluation and reward tools.",
    )
    parser.add_argument("--version", action="version", version=f"rlvr {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    import rlvr.commands as commands

    for module in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if not module.name.startswith("_"):
            importlib.import_module(f"rlvr.commands.{module.name}").register(subparsers)
    return parser


#: Library loggers whose warnings say nothing a user can act on; the CLI shows their errors only.
QUIET_LOGGERS = (
    # bitsandbytes on a CPU with AVX512-BF16 tries to fetch a faster 4-bit kernel from the Hugging Face hub and
    # warns when it cannot (offline, or an untrusted repository); its own CPU kernel is used either way.
    "bitsandbytes.backends.cpu.ops",
)


def quiet_library_notices() -> None:
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


def main(argv: list[str] | None = None) -> int:
    quiet_library_notices()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        return int(args.func(args) or 0)
    except RlvrError as error:
        print(f"rlvr: error: {error}", file=sys.stderr)
        return error.exit_code
    except Exception as error:  # a full disk, whatever the writer raised (OSError, safetensors' own error)
        if not _disk_full(error):
            raise
        where = getattr(error, "filename", None) or "a file"
        print(f"rlvr: error: no space left on the device writing {where}: free space and rerun (rlvr train --resume "
              "continues from the last complete checkpoint).", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("rlvr: interrupted", file=sys.stderr)
        return 130


def _disk_full(error: Exception) -> bool:
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return "No space left on device" in str(error) or "Disk quota exceeded" in str(error)


if __name__ == "__main__":
    sys.exit(main())
