"""The modules of src/rlvr import each other without a circle, evaluation never imports training, and only
tasks (with the rewards they name) decide what "correct" means.

Every import counts, including those inside functions (a deferred import hides a circle from Python,
not from the design). ``from pkg import name`` counts as importing ``pkg.name`` when ``name`` is a
submodule; a package whose ``__init__`` imports all its modules by ``pkgutil.iter_modules`` imports
each of them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import rlvr

ROOT = Path(rlvr.__file__).resolve().parent


def module_names() -> dict[str, Path]:
    """Dotted name -> file for every module and package under src/rlvr."""
    names = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The rlvr modules that module ``name`` imports."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            submodules = {f"{base}.{alias.name}" for alias in node.names} & modules.keys()
            found.update(submodules)
            if len(submodules) < len(node.names):  # some names come from the package itself
                found.add(base)
    if is_package and "pkgutil.iter_modules(__path__)" in path.read_text(encoding="utf-8"):
        found.update(m for m in modules if m.rpartition(".")[0] == name)
    # `import rlvr.a.b` names rlvr.a.b; keep the longest known module of each name.
    resolved = set()
    for target in found:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            resolved.add(target)
    return resolved


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_deferred_and_from_package_imports():
    graph = import_graph()
    assert "rlvr.evaluation.evaluate" in graph["rlvr.training.evaluation"]  # imported inside a method
    assert "rlvr.tasks.gsm8k" in graph["rlvr.tasks"]  # registered by pkgutil.iter_modules
    executor = graph["rlvr.sandbox.executor"]  # `from rlvr.sandbox import wire` imports the submodule
    assert "rlvr.sandbox.wire" in executor and "rlvr.sandbox" not in executor


def test_circle_detection_finds_a_planted_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_src_rlvr_has_no_import_circle():
    assert circles(import_graph()) == []


def test_evaluation_never_imports_training():
    graph = import_graph()
    leaks = {m: sorted(t for t in targets if t.startswith("rlvr.training"))
             for m, targets in graph.items() if m.startswith("rlvr.evaluation")}
    assert not {m: t for m, t in leaks.items() if t}


def test_tasks_never_import_evaluation():
    """Tasks sit below evaluation: what both need (the constant-answer baseline) lives in verifiers/."""
    graph = import_graph()
    leaks = {m: sorted(t for t in targets if t.startswith("rlvr.evaluation"))
             for m, targets in graph.items() if m.startswith("rlvr.tasks")}
    assert not {m: t for m, t in leaks.items() if t}


def test_only_tasks_name_the_rewards_that_decide_correctness():
    """No module outside tasks/ and rewards/ names a deciding reward as a string, or keeps a list of them."""
    deciding = {"correctness", "code_execution", "keywords", "format"}
    # The audit's probe sets and `rlvr reward audit` name the rewards they run, not what is correct.
    allowed = {"rlvr.audit.probe_sets", "rlvr.audit.keyword_probes", "rlvr.commands.reward"}
    offenders = []
    for name, path in module_names().items():
        if name.startswith(("rlvr.tasks", "rlvr.rewards")) or name in allowed:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in deciding and not _is_path_part(node, tree):
                offenders.append(f"{name}:{node.lineno}: {node.value!r}")
            if isinstance(node, ast.Name) and node.id in ("ACCURACY_REWARDS", "FORMAT_REWARDS", "CORRECTNESS"):
                offenders.append(f"{name}:{node.lineno}: {node.id}")
    assert offenders == []


def _is_path_part(constant: ast.Constant, tree: ast.AST) -> bool:
    """A string joined into a filesystem path (``... / "keywords" / ...``), not a reward name."""
    return any(isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and constant in (node.left, node.right)
               for node in ast.walk(tree))
