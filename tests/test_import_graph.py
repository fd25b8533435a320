"""No import cycle among palaestra's modules, function-level imports included (``TYPE_CHECKING`` blocks
are not imports at run time). ``from package import module`` imports that module, not the package's
other names: the rule import-linter and pydeps follow."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _imported(name: str, path: Path, is_package: bool, modules: dict[str, tuple[Path, bool]]) -> set[str]:
    package = name if is_package else name.rsplit(".", 1)[0]
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for statement in child.orelse:
                    visit(statement)
                continue
            if isinstance(child, ast.Import):
                names.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*parts, *([child.module] if child.module else [])])
                submodules = [f"{base}.{alias.name}" for alias in child.names]
                names.update(m for m in submodules if m in modules)
                if not all(m in modules for m in submodules):
                    names.add(base)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    edges = set()
    for imported in names:
        while imported and imported not in modules:
            imported = imported.rpartition(".")[0]
        # a module importing its own package (already being imported) is not a cycle
        if imported and imported != name and not (modules[imported][1] and name.startswith(imported + ".")):
            edges.add(imported)
    return edges


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
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
    return found


def test_no_module_of_palaestra_imports_itself_through_others() -> None:
    modules = _modules()
    graph = {name: _imported(name, path, is_package, modules) for name, (path, is_package) in modules.items()}
    cycles = _cycles(graph)
    described = [
        " ; ".join(f"{a} -> {b}" for a in cycle for b in sorted(graph[a] & set(cycle))) for cycle in cycles
    ]
    assert cycles == [], "import cycles:\n" + "\n".join(described)
    assert len(graph) > 100 and sum(map(len, graph.values())) > 300  # the graph was read
