"""The layers of DESIGN.md hold: imports run one way, and no module imports itself round a circle.

Imports are read from the source with `ast` (function-level imports included,
`if TYPE_CHECKING:` blocks left out: they never run).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from rig_nb.wire import WIRES, Request

PACKAGE = Path(__file__).resolve().parents[1] / "rig_nb"

# Top-level modules and subpackages of each layer but the library (DESIGN.md "Layers").
NOTEBOOK = {"compare", "scenarios", "load", "report", "widgets", "evals"}
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


# --- Every wire is a plug-in: outside `wire/` nothing knows one wire from another. ------------
# `demo/` and `testing.py` serve the wires (their server sides), so they may; everything else
# goes through `rig_nb.wire.WIRES` and the wire-neutral `Request`, `Turn` and `Reply`.

# Modules of wire/ every wire shares; every other module in wire/ is one wire's own.
SHARED = {
    "wire",
    "wire.base",
    "wire.turns",
    "wire.thinking",
    "wire.utf16",
    "wire.text",
    "wire.request_fields",
    "wire.counts",
    "wire.readers",
    "wire.sse",
    "wire.ndjson",
    "wire.sent",
}
SERVERS = ("demo", "testing")
# Request and reply fields only a wire's own module reads or writes.
WIRE_ONLY = {
    "choices",
    "delta",
    "stream_options",
    "max_completion_tokens",
    "max_output_tokens",
    "input_tokens",
    "output_tokens",
    "prompt_tokens_details",
    "completion_tokens_details",
    "input_tokens_details",
    "output_tokens_details",
    "function_call_output",
    "output_text",
    "stop_reason",
    "content_block",
    "cache_read_input_tokens",
    "num_predict",
    "num_ctx",
    "prompt_eval_count",
    "eval_count",
}
# The client layer: what the loop stands on. The doctor is above it.
CLIENT_LAYER = {"client", "http_backend", "backend", "servers", "_transport", "_backend_errors"}


def _outside() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if not _name(p).startswith(("wire", *SERVERS))]


def _constants(node: ast.AST) -> list[object]:
    if isinstance(node, ast.Constant):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant)]
    return []


def _keys(node: ast.AST) -> list[object]:
    """The string keys a node writes or reads: dict displays, subscripts, `.get("key")`."""
    if isinstance(node, ast.Dict):
        return [k.value for k in node.keys if isinstance(k, ast.Constant)]
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return [node.slice.value]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("get", "pop", "setdefault")
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ):
        return [node.args[0].value]
    return []


def test_no_module_outside_wire_imports_one_wire() -> None:
    edges = graph()
    wrong = [
        f"{m} imports {t}"
        for m, targets in edges.items()
        if not m.startswith(("wire", *SERVERS))
        for t in sorted(targets)
        if t.startswith("wire.") and t not in SHARED
    ]
    assert wrong == []


def _about_a_wire(node: ast.Compare) -> bool:
    """A comparison whose other side is the wire or its name (`api`, `client.wire.name`);
    a server kind that shares a wire's name ("ollama") is another thing."""
    for part in ast.walk(node):
        name = part.id if isinstance(part, ast.Name) else getattr(part, "attr", "")
        if isinstance(name, str) and ("api" in name.lower() or "wire" in name.lower()):
            return True
    return False


def test_no_module_outside_wire_compares_a_wire_name() -> None:
    wrong = []
    for path in _outside():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and _about_a_wire(node):
                for side in (node.left, *node.comparators):
                    named = [v for v in _constants(side) if v in WIRES]
                    wrong += [f"{_name(path)}:{node.lineno} {v!r}" for v in named]
    assert wrong == []


def test_no_module_outside_wire_writes_a_wire_field() -> None:
    wrong = [
        f"{_name(path)}:{node.lineno} {key!r}"
        for path in _outside()
        for node in ast.walk(ast.parse(path.read_text()))
        for key in _keys(node)
        if key in WIRE_ONLY
    ]
    assert wrong == []


def test_the_client_layer_never_imports_the_doctor() -> None:
    edges = graph()
    wrong = {m: t for m in CLIENT_LAYER for t in edges[m] if t.startswith("capabilities")}
    assert wrong == {}


def test_the_checks_see_what_they_look_for() -> None:
    # The readers above find what they must, so an empty list means something.
    edges = graph()
    assert "wire.chat" in edges["wire"] and "wire.responses" in edges["wire"]
    tree = ast.parse('x = {"choices": 1}\ny = x["delta"]\nz = api == "chat"')
    keys = [k for node in ast.walk(tree) for k in _keys(node)]
    assert keys == ["choices", "delta"]
    compares = [node for node in ast.walk(tree) if isinstance(node, ast.Compare)]
    assert [v for c in compares for v in _constants(c.comparators[0])] == ["chat"]
    assert _about_a_wire(compares[0])
    kind = ast.parse('server == "ollama"').body[0]
    assert isinstance(kind, ast.Expr) and isinstance(kind.value, ast.Compare)
    assert not _about_a_wire(kind.value)


def test_the_doctor_runs_on_the_in_process_backend() -> None:
    # Typed against Backend, the doctor needs no HTTP: ScriptedBackend answers every request
    # from its script (a tool call for a probe, an answer otherwise) and 404s its own routes.
    from rig_nb.capabilities import endpoint_report
    from rig_nb.testing import ScriptedBackend, chat_reply, tool_call

    class Answering(ScriptedBackend):
        def _next(self, request: Request) -> Any:
            super()._next(request)  # recorded like any request
            if request.tools and request.tool_choice is not None:
                return chat_reply(None, tool_calls=[tool_call("ping", {"message": "hi"})])
            return chat_reply("391", usage={"prompt_tokens": 10, "completion_tokens": 2})

    backend = Answering([{}] * 64, server="llama.cpp")
    report = endpoint_report(backend, "scripted", stream=True)
    verdicts = {c.name: c.verdict for c in report.checks}
    assert report.server == "unknown"  # nothing in the script names a server
    assert verdicts["tool_choice_auto"] == "tool call"
    assert verdicts["stream_parity"] == "same"
    assert verdicts["stream_grammar"] == "conforms"
    assert verdicts["api_parity"].startswith("same")  # every wire is the same script
    assert len(backend.bodies) >= 10


# --- Each wire is a subpackage; what several wires share is in a module named for it. --------

WIRE_PACKAGES = ("wire.chat", "wire.responses", "wire.messages", "wire.ollama")


def test_each_wire_is_a_subpackage_of_its_own() -> None:
    for name in WIRE_PACKAGES:
        folder = PACKAGE / name.replace(".", "/")
        assert (folder / "__init__.py").is_file() and (folder / "wire.py").is_file(), name
    assert not list((PACKAGE / "wire").glob("*_*wire.py"))


def test_no_wire_borrows_from_another() -> None:
    # Helpers several wires use live in the shared modules, not in one wire's package.
    edges = graph()
    wrong = [
        f"{m} imports {t}"
        for m in edges
        if m.startswith(WIRE_PACKAGES)
        for t in sorted(edges[m])
        for own in WIRE_PACKAGES
        if t.startswith(own) and not m.startswith(own)
    ]
    assert wrong == []


def test_a_turn_and_a_tool_spec_are_defined_once() -> None:
    defined: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name in ("Turn", "ToolSpec", "Call"):
                defined.setdefault(node.name, []).append(_name(path))
    assert defined == {"Turn": ["wire.turns"], "ToolSpec": ["wire.turns"], "Call": ["wire.turns"]}
