"""The house held by its imports, function-level imports included (``TYPE_CHECKING`` blocks are not
imports at run time; ``from package import module`` imports that module, not the package's other
names: the rule import-linter and pydeps follow):

- no import cycle among palaestra's modules;
- the scoreboard server's floors (:data:`FLOORS`, lowest first): a module imports its own floor and
  the floors below it, never a floor above (a lower room that needs a higher one's code gets that code
  moved down a floor instead);
- the sides of the house that must not know each other: recording (``monitoring``) imports nothing of
  the scoreboard, the server nothing of the upload client, the wire (``scoreboard.protocol``) neither
  the client nor the server.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
SERVER = "palaestra.scoreboard.server"

#: The server's floors, lowest first, each with the modules and packages on it (relative to the server
#: package; the longest match names a module's floor). A module may import its own floor and those
#: below. README's layout picture draws the same floors.
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # ladders.work (a process pool and re-rating queue, importing only core.background) is held by the
    # state (core.state), so it lives on the floor below it
    ("infrastructure", ("core", "problems", "ladders.work")),
    ("tables", ("tables",)),
    ("running state", ("core.signing", "core.state", "core.deps", "core.answers")),
    ("accounts", ("accounts",)),
    ("evaluations", ("evaluations",)),
    ("ladders and live runs", ("ladders", "live")),
    ("agent jobs", ("agents",)),  # the worker stores its run through evaluations' create path
    ("page templates", ("web.render", "web.assets", "web.signin")),
    ("guards", ("guards",)),
    ("routers", ("api", "web")),
    ("board archive", ("archive",)),
    ("assembly", ("", "app", "embedded")),
    ("static mirror", ("archive.static",)),  # the pages of the whole app, saved as files
)

#: Sides of the house that must not import each other: (importer prefix, forbidden prefix).
FORBIDDEN = (
    ("palaestra.monitoring", "palaestra.scoreboard"),
    (SERVER, "palaestra.scoreboard.client"),
    ("palaestra.scoreboard.protocol", "palaestra.scoreboard.client"),
    ("palaestra.scoreboard.protocol", SERVER),
)


def _modules(src: Path = SRC) -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in src.rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
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


def _graph(src: Path = SRC) -> dict[str, set[str]]:
    modules = _modules(src)
    return {name: _imported(name, path, is_package, modules) for name, (path, is_package) in modules.items()}


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def floor_of(module: str, floors: tuple[tuple[str, tuple[str, ...]], ...] = FLOORS) -> int | None:
    """The index of ``module``'s floor (None: not a module of the server, or a migration)."""
    if not _within(module, SERVER) or _within(module, f"{SERVER}.migrations"):
        return None
    relative = module[len(SERVER) + 1 :]
    best: tuple[int, int] | None = None  # (length of the match, floor)
    for index, (_, members) in enumerate(floors):
        for member in members:
            matches = relative == "" if member == "" else _within(relative, member)
            if matches and (best is None or len(member) > best[0]):
                best = (len(member), index)
    assert best is not None, f"{module} is on no floor: add it to FLOORS"
    return best[1]


def upward_arrows(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every import of a module on a higher floor than the importer's, sorted."""
    found = []
    for importer, imported in graph.items():
        low = floor_of(importer)
        if low is None:
            continue
        for target in imported:
            high = floor_of(target)
            if high is not None and high > low:
                found.append((importer, target))
    return sorted(found)


def forbidden_arrows(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted(
        (importer, target)
        for importer, imported in graph.items()
        for target in imported
        for side, other in FORBIDDEN
        if _within(importer, side) and _within(target, other)
    )


def _describe(arrows: list[tuple[str, str]]) -> str:
    def name(module: str) -> str:
        floor = floor_of(module)
        return f"{module} ({FLOORS[floor][0]})" if floor is not None else module

    return "\n".join(f"{name(a)} -> {name(b)}" for a, b in arrows)


def test_no_module_of_the_server_imports_a_floor_above_its_own() -> None:
    arrows = upward_arrows(_graph())
    assert arrows == [], "imports running up a floor (move the shared code down instead):\n" + _describe(arrows)


def test_recording_the_wire_and_the_server_import_none_of_the_sides_they_must_not_know() -> None:
    arrows = forbidden_arrows(_graph())
    assert arrows == [], "forbidden imports:\n" + _describe(arrows)


def test_every_module_of_the_server_is_on_a_floor() -> None:
    server = [name for name in _modules() if floor_of(name) is not None]
    assert len(server) > 60  # the server was read: a module on no floor fails in floor_of


def test_a_planted_module_that_imports_a_higher_floor_inside_a_function_is_caught(tmp_path: Path) -> None:
    """The checker, on a copy of the tree with one module planted on the infrastructure floor that
    imports a router where it is used (the function-level import that dodged cycles before)."""
    shutil.copytree(SRC / "palaestra", tmp_path / "palaestra")
    planted = tmp_path / "palaestra" / "scoreboard" / "server" / "core" / "planted.py"
    planted.write_text(
        '"""A planted module."""\n\n\ndef handler() -> None:\n'
        "    from palaestra.scoreboard.server.api import evaluations\n\n    del evaluations\n",
        encoding="utf-8",
    )
    (tmp_path / "palaestra" / "monitoring" / "planted.py").write_text(
        "from palaestra.scoreboard.protocol import API_PREFIX\n", encoding="utf-8"
    )
    graph = _graph(tmp_path)
    assert upward_arrows(graph) == [(f"{SERVER}.core.planted", f"{SERVER}.api.evaluations")]
    assert forbidden_arrows(graph) == [("palaestra.monitoring.planted", "palaestra.scoreboard.protocol")]


def test_floors_are_read_by_the_longest_match() -> None:
    graph = {
        f"{SERVER}.core.clock": {f"{SERVER}.core.state"},  # infrastructure -> running state: up
        f"{SERVER}.core.state": {f"{SERVER}.tables.scores", f"{SERVER}.core.clock"},  # down: allowed
        f"{SERVER}.web.render": {f"{SERVER}.guards.outage"},  # page templates -> guards: up
        f"{SERVER}.guards.outage": {f"{SERVER}.web.render"},  # guards draw the error page: allowed
        f"{SERVER}.migrations.env": {f"{SERVER}.app"},  # migrations stand outside the floors
    }
    assert upward_arrows(graph) == [
        (f"{SERVER}.core.clock", f"{SERVER}.core.state"),
        (f"{SERVER}.web.render", f"{SERVER}.guards.outage"),
    ]
