"""No import circles in the package: every module's imports, function-level ones included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hwinfo"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(node: ast.AST) -> bool:
    """`if TYPE_CHECKING:`: never run, so no import at run time."""
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif not _type_checking_only(node):
            pending.extend(ast.iter_child_nodes(node))
    return found


def imports_in(source: str, here: str, package: str, modules: set[str]) -> set[str]:
    """The package's modules that module `here` (in `package`) imports, at any depth of its code.

    `from pkg import name` is an edge to pkg.name where that is a module, else to pkg.
    The parents a submodule import runs first are the container, not an edge (as
    import-linter and pydeps count them).
    """
    edges = set()
    for node in _import_nodes(ast.parse(source, here)):
        if isinstance(node, ast.Import):
            edges.update(alias.name for alias in node.names if alias.name in modules)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")
            anchor = anchor[: len(anchor) - node.level + 1]
            base = ".".join([*anchor, *([base] if base else [])])
        for alias in node.names:
            target = f"{base}.{alias.name}"
            if target in modules:
                edges.add(target)
            elif base in modules:
                edges.add(base)
    edges.discard(here)
    return edges


def import_graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in paths}
    graph = {}
    for path in paths:
        here = module_name(path)
        package = here if path.name == "__init__.py" else here.rpartition(".")[0]
        graph[here] = imports_in(path.read_text(), here, package, modules)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:
        # Iterative, so that a deep chain of imports cannot exhaust Python's recursion limit.
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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


def test_the_package_has_no_import_circles() -> None:
    found = circles(import_graph())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from hwinfo.collect import sources\n", {"hwinfo.collect.sources"}),
        ("from hwinfo.sim import ENV_VAR\n", {"hwinfo.sim"}),
        ("import hwinfo.cli\n", {"hwinfo.cli"}),
        ("def late():\n    from .. import inputs\n", {"hwinfo.inputs"}),
        ("from . import remote\n", {"hwinfo.collect.remote"}),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import hwinfo.cli\n", set()),
    ],
)
def test_imports_are_read_from_the_source(source: str, expected: set[str]) -> None:
    modules = {module_name(path) for path in PACKAGE.rglob("*.py")}
    assert imports_in(source, "hwinfo.collect.probe", "hwinfo.collect", modules) == expected


def test_a_circle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]


def _reached(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module `start` imports, directly or through others."""
    seen, pending = set(), [start]
    while pending:
        for module in graph[pending.pop()] - seen:
            seen.add(module)
            pending.append(module)
    return seen


@pytest.mark.parametrize("layer", ["hwinfo.ledger", "hwinfo.mig"])
def test_the_ledger_and_mig_s_catalogue_stand_on_no_simulator(layer: str) -> None:
    graph = import_graph()
    for module in (m for m in graph if m == layer or m.startswith(layer + ".")):
        simulated = sorted(m for m in _reached(graph, module) if m.startswith("hwinfo.sim"))
        assert not simulated, f"{module} imports {simulated}"
