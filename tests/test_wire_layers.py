"""Every wire is a plug-in: outside `wire/` nothing knows one wire from another.

Read from the source with `ast`, like tests/test_layers.py. `demo/` and `testing.py` serve
the wires (their server sides), so they may; everything else goes through
`rig_nb.wire.WIRES` and the wire-neutral `Request`, `Turn` and `Reply`.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from test_layers import PACKAGE, _name, graph

from rig_nb.wire import WIRES, Request

# Modules of wire/ every wire shares; every other module in wire/ is one wire's own.
SHARED = {"wire", "wire.base", "wire.turns", "wire.thinking", "wire.utf16"}
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
    assert "wire.chat_wire" in edges["wire"] and "wire.responses_wire" in edges["wire"]
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
