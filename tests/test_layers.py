"""The layers of DESIGN.md hold: imports run one way, and no module imports itself round a circle.

Imports are read from the source with `ast` (function-level imports included,
`if TYPE_CHECKING:` blocks left out: they never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "rig_nb"

# Top-level modules and subpackages of each layer but the library (DESIGN.md "Layers").
NOTEBOOK = {"compare", "scenarios", "load", "report", "widgets"}
LOCAL_ENDPOINTS = {"testing", "demo"}
COMMAND_LINE = {"__main__", "cli"}


def layer(module: str) -> str:
    top = module.split(".")[0]
    if top in NOTEBOOK:
        return "notebook"
    if top in LOCAL_ENDPOINTS:
        return "local endpoints"
    if top in COMMAND_LINE:
        return "command line"
    return "library"


ALLOWED = {
    "library": {"library"},
    "notebook": {"library", "notebook"},
    "local endpoints": {"library", "local endpoints"},
    "command line": {"library", "notebook", "local endpoints", "command line"},
}


def _name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1] or ["__init__"]
    return ".".join(parts)


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node except those under `if TYPE_CHECKING:`."""
    out: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            stack.extend(node.orelse)
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def imports_of(path: Path) -> set[str]:
    """The rig_nb modules a file imports at run time, as dotted names under the package."""
    module = _name(path)
    package = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")
    if module == "__init__":
        package = []
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            elif node.module and node.module.startswith("rig_nb"):
                target = node.module.removeprefix("rig_nb").lstrip(".")
            else:
                continue
            names = [a.name for a in node.names]
            for name in names:
                candidate = f"{target}.{name}" if target else name
                found.add(candidate if _exists(candidate) else target or "__init__")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("rig_nb."):
                    found.add(alias.name.removeprefix("rig_nb."))
    return {m for m in found if m and m != module}


def _exists(module: str) -> bool:
    path = PACKAGE.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def graph() -> dict[str, set[str]]:
    return {_name(p): imports_of(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_no_import_runs_up_a_layer() -> None:
    wrong = [
        f"{m} ({layer(m)}) imports {t} ({layer(t)})"
        for m, targets in graph().items()
        if m != "__init__"
        for t in sorted(targets)
        if t != "__init__" and layer(t) not in ALLOWED[layer(m)]
    ]
    assert wrong == []


def test_the_import_graph_has_no_circle() -> None:
    edges = graph()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                circle = visit(nxt)
                if circle:
                    return circle
        state[node] = 2
        path.pop()
        return []

    for node in sorted(edges):
        if node != "__init__" and node not in state:
            assert visit(node) == [], "import circle"


def test_the_graph_reader_sees_real_edges() -> None:
    edges = graph()
    assert "wire" in edges["loop"] and "record" in edges["loop"]
    assert "client" not in edges["loop"]  # only under TYPE_CHECKING
    assert "loop" in edges["client"]  # Client.run's facade imports the loop when called
    assert layer("widgets.trace_view") == "notebook" and layer("demo.kit") == "local endpoints"
    assert layer("report.otel") == "notebook" and layer("dialects.scan") == "library"
    assert "dialects.scan" in edges["dialects"] and "report.html" in edges["report"]


def test_no_module_is_over_600_lines() -> None:
    # STYLE.md: a file holds one idea; a concept that needs more is a subpackage.
    long = {
        _name(p): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 600
    }
    assert long == {}


def test_a_concept_of_several_files_is_a_subpackage() -> None:
    # STYLE.md: not a family of `_prefix_` modules side by side (`_dialect_scan`, `_dialect_calls`).
    families: dict[tuple[str, str], list[str]] = {}
    for path in PACKAGE.rglob("_*_*.py"):
        if path.stem.startswith("__"):
            continue
        prefix = path.stem.split("_")[1]
        families.setdefault((str(path.parent), prefix), []).append(path.stem)
    assert {k: v for k, v in families.items() if len(v) > 1} == {}


def test_the_command_line_is_one_package() -> None:
    edges = graph()
    assert {m for m in edges if layer(m) == "command line"} >= {"cli", "cli.parser", "__main__"}
    assert edges["__main__"] == {"cli"}
    assert not any(PACKAGE.glob("_commands.py")) and not any(PACKAGE.glob("_text.py"))


def test_test_modules_have_unique_names() -> None:
    # pytest imports test modules by basename (no packages): two of one name break collection.
    tests = Path(__file__).resolve().parent
    names = [p.name for p in tests.rglob("test_*.py")]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_no_test_file_is_over_600_lines() -> None:
    tests = Path(__file__).resolve().parent
    sizes = {
        str(p.relative_to(tests)): len(p.read_text().splitlines()) for p in tests.rglob("*.py")
    }
    assert {name: n for name, n in sizes.items() if n > 600} == {}
