"""The two sides of one sandboxed run: the program process and the test runner.

Inside the sandbox a supervisor forks the *program process*, which runs the
untrusted program and then answers calls, and itself becomes the *test runner*,
which runs the tests and reports each verdict to the runner outside.

* The program process never sees the tests: it is forked before they are read,
  and it only ever receives the arguments of the calls the tests make.
* The test runner never runs untrusted code and never holds an object the
  program made: calls go over a pipe as plain data (see ``wire``).
* They run as different unprivileged users (when started as root) and the test
  runner is not dumpable, so the program cannot signal, trace or read it.
* Verdicts leave through a pipe the program process closed before the program
  ran; nothing the program prints or exits with is read as a verdict.

Stdlib only: loaded by the sandbox worker, outside the rlvr package.
"""

from __future__ import annotations

import builtins
import os
import select

import wire

_BUILTIN_ERRORS = {
    name: value
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, Exception)
}


# --------------------------------------------------------------------------- program side


def serve_program(program: str, setup: str, calls_fd: int, replies_fd: int) -> None:
    """Define the program, report how that went, then answer calls until the pipe closes."""
    namespace: dict = {"__name__": "__solution__", "__builtins__": builtins}
    status, detail = _define(program, setup, namespace)
    wire.send(replies_fd, {"e": "defined", "status": status, "detail": detail})
    if status != "ok":
        return
    handles: list = []
    while True:
        request = wire.receive(calls_fd)
        if request is None:
            return
        wire.send(replies_fd, _answer(request, namespace, handles))


def _define(program: str, setup: str, namespace: dict) -> tuple[str, str]:
    try:
        code = compile(program, "<program>", "exec")
    except MemoryError:
        return "memory", "MemoryError while compiling"
    except (SyntaxError, ValueError, OverflowError, RecursionError) as error:
        return "syntax_error", f"{type(error).__name__}: {error}"[:300]
    try:
        exec(code, namespace)
        if setup:
            exec(compile(setup, "<test setup>", "exec"), namespace)
    except MemoryError:
        return "memory", "MemoryError while defining the program"
    except SystemExit as error:
        return "runtime_error", f"exited while being defined (SystemExit {error.code!r})"[:300]
    except BaseException as error:  # the program's own failure, whatever it is
        return "runtime_error", _describe(error)
    return "ok", ""


def _answer(request: dict, namespace: dict, handles: list) -> dict:
    try:
        target = request.get("handle")
        subject = handles[target] if isinstance(target, int) else _lookup(namespace, request["name"])
        args = [_resolve(wire.decode(a), handles, namespace) for a in request["args"]]
        kwargs = {k: _resolve(wire.decode(v), handles, namespace) for k, v in request["kwargs"].items()}
    except (KeyError, NameError):
        return {"err": "NameError", "msg": f"name {request.get('name')!r} is not defined by the program"}
    except Exception as error:
        return {"err": "TypeError", "msg": f"bad call: {error}"[:300]}
    try:
        op = request.get("op", "call")
        if op == "getattr":
            return {"ok": wire.encode(getattr(subject, str(request["attr"])), handles), "args": []}
        if op == "setattr":
            setattr(subject, str(request["attr"]), args[0])
            return {"ok": None, "args": []}
        result = subject(*args, **kwargs)
        mutated = [wire.encode(a, handles) if isinstance(a, (list, dict, set)) else None for a in args]
        return {"ok": wire.encode(result, handles), "args": mutated}
    except BaseException as error:  # any failure of the program is the test's failure, not ours
        return {"err": type(error).__name__, "msg": _describe(error)}


def _lookup(namespace: dict, name):
    """A name as the program's module would see it: its globals, then builtins."""
    if name in namespace:
        return namespace[name]
    if isinstance(name, str) and hasattr(builtins, name):
        return getattr(builtins, name)
    raise NameError(name)


def _resolve(value, handles: list, namespace: dict):
    """Replace handles and names in a decoded argument by the program's objects they stand for."""
    if isinstance(value, wire.Handle):
        if not 0 <= value.index < len(handles):
            raise ValueError("unknown handle")
        return handles[value.index]
    if isinstance(value, wire.Named):
        return _lookup(namespace, value.name)
    if type(value) is list:
        return [_resolve(v, handles, namespace) for v in value]
    if type(value) is tuple:
        return tuple(_resolve(v, handles, namespace) for v in value)
    if type(value) is dict:
        return {_resolve(k, handles, namespace): _resolve(v, handles, namespace) for k, v in value.items()}
    return value


def _describe(error: BaseException) -> str:
    try:
        return f"{type(error).__name__}: {error}"[:300]
    except BaseException:
        return "an exception that cannot be printed"


# --------------------------------------------------------------------------- test side


class ProgramGone(Exception):
    """The program process exited, crashed or was killed: no more calls can be answered."""


def watch(pid: int) -> int | None:
    """A descriptor that becomes readable when process ``pid`` exits (None where pidfds are missing)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


class Link:
    """The test runner's end of the call pipe.

    ``exit_fd`` (from :func:`watch`) ends a wait for a reply as soon as the program process exits:
    a child it forked may still hold the reply pipe open, and would otherwise keep the test runner
    waiting until the run's wall-clock deadline.
    """

    def __init__(self, calls_fd: int, replies_fd: int, exit_fd: int | None = None):
        self.calls_fd = calls_fd
        self.replies_fd = replies_fd
        self.exit_fd = exit_fd
        self.alive = True

    def receive(self):
        """The program's next message; None once it is gone (exited, or the pipe broke)."""
        if self.exit_fd is not None:
            ready, _, _ = select.select([self.replies_fd, self.exit_fd], [], [])
            if self.replies_fd not in ready:
                return None
        try:
            return wire.receive(self.replies_fd)
        except (OSError, wire.WireError):
            return None

    def call(self, name: str | None, handle: int | None, args: tuple, kwargs: dict, **extra):
        if not self.alive:
            raise ProgramGone("the program is no longer running")
        try:
            encoded_args = [wire.encode(_references(a)) for a in args]
            encoded_kwargs = {k: wire.encode(_references(v)) for k, v in kwargs.items()}
        except wire.WireError as error:
            raise TypeError(f"the test passes a value the sandbox cannot send: {error}") from None
        request = {"name": name, "handle": handle, "args": encoded_args, "kwargs": encoded_kwargs, **extra}
        try:
            wire.send(self.calls_fd, request)
        except OSError:
            reply = None
        else:
            reply = self.receive()
        if not isinstance(reply, dict):
            self.alive = False
            raise ProgramGone("the program stopped answering")
        if "err" in reply:
            error_type = _BUILTIN_ERRORS.get(reply.get("err"), RuntimeError)
            raise error_type(str(reply.get("msg", ""))[:300])
        _write_back(args, reply.get("args") or [])
        return _callable_handles(wire.decode(reply.get("ok")), self)


def _write_back(args: tuple, mutated: list) -> None:
    """Apply in-place changes the program made to list/dict/set arguments, as a direct call would show."""
    for original, new in zip(args, mutated, strict=False):
        if new is None:
            continue
        value = wire.decode(new)
        if type(original) is list and type(value) is list:
            original[:] = value
        elif type(original) is dict and type(value) is dict:
            original.clear()
            original.update(value)
        elif type(original) is set and type(value) is set:
            original.clear()
            original.update(value)


def _references(value):
    """Remotes inside a test's argument travel as references to the program's objects."""
    if isinstance(value, Remote):
        link_handle = object.__getattribute__(value, "_handle")
        if link_handle is not None:
            return wire.Handle(link_handle, "object")
        return wire.Named(object.__getattribute__(value, "_name"))
    if type(value) is list:
        return [_references(v) for v in value]
    if type(value) is tuple:
        return tuple(_references(v) for v in value)
    if type(value) is dict:
        return {_references(k): _references(v) for k, v in value.items()}
    return value


class Remote:
    """A name or object of the program, as the tests see it: calls and attribute access go to the program."""

    def __init__(self, link: Link, name: str | None, handle: int | None = None, kind: str = "function"):
        object.__setattr__(self, "_link", link)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_kind", kind)

    def __call__(self, *args, **kwargs):
        return self._link.call(self._name, self._handle, args, kwargs)

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self._link.call(self._name, self._handle, (), {}, op="getattr", attr=attr)

    def __setattr__(self, attr: str, value) -> None:
        self._link.call(self._name, self._handle, (value,), {}, op="setattr", attr=attr)

    def __repr__(self) -> str:
        return f"<{self._kind} {self._name or ''} of the program>"


def _callable_handles(value, link: Link):
    """Handles to program objects become Remotes, so a returned function can be called."""
    if isinstance(value, wire.Handle):
        return Remote(link, None, value.index, value.kind)
    if type(value) is list:
        return [_callable_handles(v, link) for v in value]
    if type(value) is tuple:
        return tuple(_callable_handles(v, link) for v in value)
    return value


def run_tests(suite: dict, link: Link, report) -> None:
    """Run the suite's units in order in a namespace of stand-ins; ``report(index, passed, detail)`` each counted one."""
    namespace: dict = {"__name__": "__tests__"}
    for alias, name in suite.get("remote", {}).items():
        namespace[alias] = Remote(link, name)
    for module in suite.get("modules", []):
        try:
            namespace[module] = __import__(module)
        except ImportError:
            pass
    broken = _run_code(suite.get("setup", ""), namespace) or _run_code(suite.get("prelude", ""), namespace)
    counted = 0
    for unit in suite["units"]:
        failure = broken or _run_code(unit["code"], namespace)
        if unit["counted"]:
            report(counted, failure is None, failure or "")
            counted += 1


def _run_code(code: str, namespace: dict) -> str | None:
    if not code:
        return None
    try:
        exec(compile(code, "<test>", "exec"), namespace)
    except ProgramGone as error:
        return f"ProgramGone: {error}"
    except AssertionError as error:
        return f"AssertionError: {error}"[:300]
    except BaseException as error:  # a failing test, whatever it raised
        return f"{type(error).__name__}: {error}"[:300]
    return None


def read_all(fd: int, limit: int = 64 * 1024 * 1024) -> bytes:
    chunks, size = [], 0
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise ValueError("test suite too large")
        chunks.append(chunk)
