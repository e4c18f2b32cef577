"""The ``python`` tool: run the model's snippet in rlvr's sandbox and return what it printed.

The sandbox (``rlvr.sandbox``) runs a program against unit tests, and its only channel out of the program
is the tests' verdicts: what the program prints goes to ``/dev/null``. So the snippet runs inside a small
wrapper program that sends ``sys.stdout`` and ``sys.stderr`` into a bounded buffer, runs the snippet, and
keeps the traceback's text if it raises. A few test units that always fail then ask the program for that
text, a piece each, and each piece comes back as the unit's failure detail (at most
``_CHUNK`` characters fit there). The snippet runs with the same isolation, limits and never-weaker rule as the
code reward; the wrapper is part of the untrusted program, so it changes nothing the sandbox trusts.

What cannot be captured: writes straight to file descriptor 1 or 2 (``os.write``, child processes), and
whatever was printed before a timeout or a crash (the program is killed with its buffer).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from rlvr.errors import RlvrError
from rlvr.sandbox import Limits, RunResult, Sandbox, TestSuite, Unit

DEFAULT_MAX_OUTPUT_CHARS = 1000
MAX_CODE_CHARS = 20_000
NO_OUTPUT = "(no output)"
_PREFIX = "AssertionError: "
_CHUNK = 300 - len(_PREFIX)  # the test runner and the executor keep 300 characters of a failure's detail
_HEADER = 8  # payload: cut flag (1), error length (7), error, output

_WRAPPER = '''\
import builtins, linecache, sys, traceback
_SOURCE = {source!r}
_LIMIT = {limit}


class _Capture:
    def __init__(self):
        self.parts, self.size, self.cut = [], 0, False

    def write(self, text):
        text, room = str(text), _LIMIT - self.size
        if len(text) > room:
            self.cut, text = True, text[:max(room, 0)]
        self.parts.append(text)
        self.size += len(text)
        return len(text)

    def flush(self):
        pass


_out, _error = _Capture(), ""
sys.stdout = sys.stderr = _out
try:
    linecache.cache["<code>"] = (len(_SOURCE), None, _SOURCE.splitlines(True), "<code>")
    exec(compile(_SOURCE, "<code>", "exec"), {{"__name__": "__main__", "__builtins__": builtins}})
except SystemExit as _exit:
    if _exit.code not in (None, 0):
        _error = "(exited with status %r)" % (_exit.code,)
except BaseException as _exc:
    try:
        _error = "".join(traceback.format_exception(type(_exc), _exc, _exc.__traceback__.tb_next))
    except BaseException:
        _error = type(_exc).__name__
sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
_error = _error[-_LIMIT:]
_payload = ("1" if _out.cut else "0") + "%07d" % len(_error) + _error + "".join(_out.parts)


def _rlvr_part(index):
    return _payload[index * {chunk}:(index + 1) * {chunk}]
'''


def check_options(timeout: float | None = None, memory_mb: int | None = None,
                  max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> None:
    """The python tool's recipe options, each checked (one RlvrError line naming the bad one)."""
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not 0 < timeout <= 300):
        raise RlvrError(f"tool python: timeout must be a number of seconds in (0, 300], got {timeout!r}.")
    if memory_mb is not None and (isinstance(memory_mb, bool) or not isinstance(memory_mb, int) or memory_mb < 64):
        raise RlvrError(f"tool python: memory_mb must be a whole number of MB, at least 64, got {memory_mb!r}.")
    if isinstance(max_output_chars, bool) or not isinstance(max_output_chars, int) or not 1 <= max_output_chars <= 100_000:
        raise RlvrError(f"tool python: max_output_chars must be a whole number in [1, 100000], got {max_output_chars!r}.")


def make_python_tool(limits: Limits | None = None, *, timeout: float | None = None, memory_mb: int | None = None,
                     max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> Callable[[str], str]:
    """The ``python`` tool, running each snippet in a sandbox started now (one worker, TRL calls tools in turn).

    ``limits``: the sandbox's limits (default ``Limits()``); ``timeout`` and ``memory_mb`` override theirs.
    Raises :class:`~rlvr.sandbox.SandboxRefused` (an RlvrError) here, before any call, when this machine
    cannot isolate programs fully and weaker isolation was not allowed. ``tool.close()`` stops the sandbox.
    """
    check_options(timeout, memory_mb, max_output_chars)
    base = limits or Limits()
    limits = replace(base, timeout=float(timeout) if timeout is not None else base.timeout,
                     memory_mb=memory_mb if memory_mb is not None else base.memory_mb)
    sandbox = Sandbox(workers=1, limits=limits)
    try:
        sandbox.missing  # noqa: B018 - starts the worker: refuses now if isolation would be weaker than allowed
    except BaseException:
        sandbox.close()
        raise
    units = math.ceil((_HEADER + 2 * max_output_chars) / _CHUNK)
    suite = TestSuite(units=tuple(Unit(f"raise AssertionError(_rlvr_part({i}))", True) for i in range(units)),
                      remote={"_rlvr_part": "_rlvr_part"})

    def python(code: str) -> str:
        if not isinstance(code, str):
            raise ValueError("code must be a string of Python source")
        if len(code) > MAX_CODE_CHARS:
            raise ValueError(f"code is longer than {MAX_CODE_CHARS} characters")
        program = _WRAPPER.format(source=code, limit=max_output_chars, chunk=_CHUNK)
        return describe(sandbox.run(program, suite), units, limits, max_output_chars)

    # What the model reads in its prompt (TRL renders the docstring into the tool's schema): one short line. Each
    # call starts a fresh, isolated Python (standard library only, no network, no files from earlier calls).
    python.__doc__ = (
        f"Run Python (standard library, no network, {limits.timeout:g} s limit) and return what it prints.\n\n"
        "Args:\n"
        "    code: The Python source code to run, for example \"print(sum(range(10)))\".\n"
    )
    python.sandbox = sandbox  # type: ignore[attr-defined]
    python.close = sandbox.close  # type: ignore[attr-defined]
    return python


def describe(result: RunResult, units: int, limits: Limits, max_chars: int) -> str:
    """The text the model reads for one run: its output, or what stopped it."""
    if result.status == "timeout":
        return f"Error: the code ran past its {limits.timeout:g} s limit"
    if result.status == "memory":
        return f"Error: the code ran out of memory (limit {limits.memory_mb} MB)"
    if not result.defined:
        return f"Error: the code stopped before its output could be read ({result.status}: {result.detail})"
    parts = [result.failures.get(i, "") for i in range(units)]
    if not all(part.startswith(_PREFIX) for part in parts):
        return "Error: the code stopped before its output could be read (its process ended)"
    payload = "".join(part[len(_PREFIX):] for part in parts)
    try:
        cut, size = payload[0] == "1", int(payload[1:_HEADER])
    except (IndexError, ValueError):
        return "Error: the code's output could not be read"
    error, out = payload[_HEADER:_HEADER + size], payload[_HEADER + size:]
    return format_output(out, error, cut, max_chars)


def format_output(out: str, error: str, cut: bool, max_chars: int) -> str:
    """Output, then the error's last lines, within ``max_chars`` (plus a marker when the output was cut)."""
    error = _tail(error.rstrip("\n"), max_chars // 2 if out.strip() else max_chars)
    room = max(0, max_chars - len(error))
    if len(out) > room:
        out, cut = out[:room], True
    text = out.rstrip("\n")
    if cut:
        text += ("\n" if text else "") + f"[output cut: only the first {len(out)} characters are shown]"
    if error:
        text += ("\n" if text else "") + error
    return text if text.strip() else NO_OUTPUT


def _tail(text: str, limit: int) -> str:
    """The last whole lines of ``text`` that fit in ``limit`` characters (the last ones, cut, if none fits)."""
    if len(text) <= limit:
        return text
    lines, kept, size = text.split("\n"), [], len("...\n")
    for line in reversed(lines):
        if size + len(line) + 1 > limit:
            break
        kept.insert(0, line)
        size += len(line) + 1
    return "...\n" + "\n".join(kept) if kept else text[-limit:]
