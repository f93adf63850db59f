"""The house's imports run one way (docs/ARCHITECTURE.md), type-only imports included:
``engine`` <- ``protocol`` <- ``server``, ``clients``; ``clients`` never imports ``server``;
no package holds a circle of modules importing each other; the cluster's side of the
seam and the code written once against it do not import each other; and only the server
imports a storage library (SQLAlchemy, sqlite3, redis and their drivers)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "protocol", "server", "clients")


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = modules()


def imported(name: str, path: Path) -> set[str]:
    """The modules of this tree that ``name`` imports, at run time or for types."""
    out: set[str] = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            out.add(module)
            out.update(f"{module}.{alias.name}" for alias in node.names)
    return {target for target in out if target in MODULES and target != name}


GRAPH = {name: imported(name, path) for name, path in MODULES.items()}


def circles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in GRAPH[node]:
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

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    return found


def edges(source: str, target: str) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in GRAPH.items() for b in targets
                  if (a == source or a.startswith(source + "."))
                  and (b == target or b.startswith(target + ".")))


@pytest.mark.parametrize(("source", "target"), [
    ("engine", "protocol"), ("engine", "server"), ("engine", "clients"),
    ("protocol", "server"), ("protocol", "clients"), ("clients", "server"),
    ("server", "clients")])
def test_packages_import_one_way(source: str, target: str) -> None:
    assert edges(source, target) == []


STORES = ("sqlalchemy", "sqlite3", "redis", "asyncpg", "aiosqlite", "alembic")


def libraries(path: Path) -> set[str]:
    """The top-level names of the packages a module imports absolutely (at run time or for
    types)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.split(".")[0])
    return out


def test_the_clients_open_no_store_themselves() -> None:
    """A tool reads and makes what the server keeps through the server's own commands
    (``python -m server dump|db|cluster ...``) or the protocol, never by opening its
    database or its Redis."""
    assert sorted(f"{name} imports {library}" for name, path in MODULES.items()
                  if name.split(".")[0] in ("engine", "protocol", "clients")
                  for library in sorted(libraries(path) & set(STORES))) == []


def test_no_circle_of_modules_in_the_server() -> None:
    assert [c for c in circles() if c[0].startswith("server")] == []


WRITTEN_ONCE = ("server.app", "server.games", "server.session", "server.lobby",
                "server.rematch", "server.ladder", "server.handlers")


@pytest.mark.parametrize("module", WRITTEN_ONCE)
def test_the_cluster_and_the_code_written_once_do_not_import_each_other(module: str) -> None:
    assert edges(module, "server.cluster") == []
    assert edges("server.cluster", module) == []


def test_the_graph_is_read() -> None:
    """The reader sees imports of every form (absolute, relative, for types only)."""
    assert "server.seam" in GRAPH["server.games"]  # under TYPE_CHECKING
    assert "server.storage" in GRAPH["server.games"]  # relative, from a package
    assert "protocol" in GRAPH["server.session"]  # absolute
    assert "redis" in libraries(MODULES["server.cluster.commands"])  # "redis.asyncio"
    assert "sqlalchemy" in libraries(MODULES["server.storage.sandbox"])  # "from ... import"
    by_package: dict[str, int] = defaultdict(int)
    for name in GRAPH:
        by_package[name.split(".")[0]] += 1
    assert all(by_package[package] > 5 for package in PACKAGES)
