"""Turning a problem's tests into separately counted units, in the trusted parent.

Two forms arrive: MBPP's list of assert lines (each line one unit), and
HumanEval's test module defining ``check(candidate)`` (each top-level statement
of ``check``'s body that asserts something about the program is one unit; other
statements run in order but are not counted). A unit counts only when it
asserts something *and* mentions the program, so ``assert True`` lines in
HumanEval do not hand out free passes.

Names the tests use but do not define are looked up in the program: they become
stand-ins that call across the sandbox boundary (``remote``), except stdlib
modules, which the test runner imports itself (MBPP tests use ``math`` imported
only by the solution), and except what the problem statement itself supplies:
HumanEval prompts define helpers the tests call (``poly`` for ``find_zero``,
``encode_cyclic`` for ``decode_cyclic``). Those are *trusted* code: the test
runner defines them itself from the prompt (``from_check(..., trusted=prompt)``),
so a program that redefines them changes only its own copy, never what the tests
call. Only the function under test comes from the program.
"""

from __future__ import annotations

import ast
import builtins
import sys
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Unit:
    code: str
    counted: bool


@dataclass(frozen=True)
class TestSuite:
    """What the test runner executes: setup, prelude, units; ``remote`` maps test names to program names."""

    units: tuple[Unit, ...]
    remote: dict[str, str] = field(default_factory=dict)
    modules: tuple[str, ...] = ()
    prelude: str = ""
    setup: str = ""

    @property
    def total(self) -> int:
        return sum(unit.counted for unit in self.units)

    def to_json(self) -> dict:
        return {
            "units": [{"code": u.code, "counted": u.counted} for u in self.units],
            "remote": dict(self.remote),
            "modules": list(self.modules),
            "prelude": self.prelude,
            "setup": self.setup,
        }


def from_asserts(test_list: list[str], setup: str = "") -> TestSuite:
    """MBPP form: each string is one test (usually one ``assert``)."""
    sources = [str(t) for t in test_list if str(t).strip()]
    trees = [_parse(s) for s in sources]
    free = _free_names([t for t in trees if t is not None] + [_parse(setup)])
    remote, modules = _split_free(free)
    tested = _function_under_test(trees[0]) if trees and trees[0] is not None else None
    if tested and tested not in remote:  # a solution may define a function named like a builtin (MBPP 126: sum)
        remote.append(tested)
    units = tuple(
        Unit(code=source, counted=tree is None or (_asserts(tree) and _mentions(tree, remote)))
        for source, tree in zip(sources, trees, strict=True)
    )
    return TestSuite(units=units, remote={n: n for n in remote}, modules=modules, setup=setup)


def from_check(test: str, entry_point: str, trusted: str = "") -> TestSuite:
    """HumanEval form: a module defining ``check(candidate)``, called with the program's ``entry_point``.

    ``trusted``: code of the problem statement (HumanEval's prompt); its helpers (everything but the
    entry point and other unimplemented stubs) run in the test runner, before the test module.
    """
    tree = _parse(test)
    check = _find_check(tree) if tree is not None else None
    if check is None:  # unreadable test: one unit that fails in the runner, so nothing passes by accident
        return TestSuite(units=(Unit(code=f"{test}\ncheck({entry_point})", counted=True),))
    parameter = check.args.args[0].arg if check.args.args else "candidate"
    helpers = trusted_helpers(trusted, entry_point)
    prelude = [*helpers, *(node for node in tree.body if node is not check)]
    free = _free_names([tree, ast.Module(helpers, [])]) - {parameter}
    remote_names, modules = _split_free(free)
    remote = {n: n for n in remote_names}
    remote[parameter] = entry_point
    units = tuple(
        Unit(code=ast.unparse(stmt), counted=_asserts(stmt) and _mentions(stmt, set(remote)))
        for stmt in check.body
    )
    return TestSuite(units=units, remote=remote, modules=modules, prelude=ast.unparse(ast.Module(prelude, [])))


def trusted_helpers(code: str, entry_point: str) -> list[ast.stmt]:
    """The top-level statements of a problem's own code that the tests may rely on.

    Everything but the function the program must write (``entry_point``) and other stubs (a body of
    only a docstring, ``pass`` or ``...``): imports, constants, implemented helpers. Unparsable code
    supplies nothing.
    """
    tree = _parse(code) if code and code.strip() else None
    if tree is None:
        return []
    return [node for node in tree.body
            if not (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (node.name == entry_point or _is_stub(node)))]


def _is_stub(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    def empty(stmt: ast.stmt) -> bool:
        return isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))

    return all(empty(stmt) for stmt in function.body)


def _function_under_test(tree: ast.Module) -> str | None:
    """The function the first assert tests: its first called non-builtin name, else its first called name.

    Only this one builtin-named function may come from the program (MBPP 126 asks for ``sum``); a
    program defining ``len`` or ``abs`` does not change what the tests' own calls mean.
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            called = [n.func.id for n in ast.walk(node.test) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
            own = [name for name in called if not hasattr(builtins, name)]
            return (own or called or [None])[0]
    return None


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source or "")
    except (SyntaxError, ValueError):
        return None


def _find_check(tree: ast.Module) -> ast.FunctionDef | None:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            return node
    return None


def _asserts(tree: ast.AST) -> bool:
    return any(isinstance(node, ast.Assert) for node in ast.walk(tree))


def _mentions(tree: ast.AST, names: set[str] | dict) -> bool:
    return any(isinstance(node, ast.Name) and node.id in names for node in ast.walk(tree))


def _free_names(trees: list[ast.AST | None]) -> set[str]:
    """Names read but never bound anywhere in the tests, excluding builtins."""
    loaded, bound = set(), set()
    for tree in trees:
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, ast.alias):
                bound.add((node.asname or node.name).split(".")[0])
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bound.add(node.name)
    return loaded - bound - set(dir(builtins))


def _split_free(free: set[str]) -> tuple[list[str], tuple[str, ...]]:
    modules = tuple(sorted(n for n in free if n in sys.stdlib_module_names))
    return sorted(free - set(modules)), modules
