"""Every server kind a plug-in (DESIGN.md, Round 5, "Every server kind a plug-in").

`rig_nb.servers.SERVERS` maps each kind to its `Server`, one module a kind; the backend and
the doctor find the kind the same way; outside `servers/` (and the local endpoints, which
play servers) no module names a kind; an eighth kind is one module and one line.
"""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from rig_nb import Client, RunRequest
from rig_nb.capabilities import CHECKS, endpoint_report
from rig_nb.servers import SERVER_KINDS, SERVERS, Server, guess_server, server_of_models
from rig_nb.servers.base import BASE, Facts, SchemaDialect, Thinking
from rig_nb.servers.recognise import Models
from rig_nb.testing import ScriptedServer, chat_reply
from rig_nb.wire import WIRES, Reply

PACKAGE = Path(importlib.import_module("rig_nb").__file__ or "").parent
KINDS = ("llama.cpp", "vllm", "sglang", "ollama", "lm-studio", "litellm", "openai", "unknown")
MODULES = {
    "llama.cpp": "llama_cpp",
    "vllm": "vllm",
    "sglang": "sglang",
    "ollama": "ollama",
    "lm-studio": "lm_studio",
    "litellm": "litellm",
    "openai": "openai",
}


def test_every_kind_has_its_profile_and_its_module() -> None:
    assert set(SERVERS) == set(KINDS) and SERVER_KINDS == tuple(SERVERS)
    assert SERVERS["unknown"] is BASE
    for kind, module in MODULES.items():
        mod = importlib.import_module(f"rig_nb.servers.{module}")
        profiles = [v for v in vars(mod).values() if isinstance(v, Server) and v is not BASE]
        assert [p.name for p in profiles] == [kind], module
        assert SERVERS[kind] is profiles[0]


@pytest.mark.parametrize("kind", KINDS)
def test_a_profile_holds_what_rig_nb_knows_of_its_kind(kind: str) -> None:
    server = SERVERS[kind]
    assert server.name == kind
    assert isinstance(server.thinking, Thinking) and isinstance(
        server.schema_dialect, SchemaDialect
    )
    assert server.replay_field in ("reasoning_content", "reasoning")
    # Every check has advice, this kind's own or the base profile's.
    for check in ("tool_choice_auto", "reasoning_location", "concurrency", "prefix_cache"):
        assert server.advice(check), (kind, check)
    assert server.advice("no_such_check") == ""
    facts = server.facts(lambda path, body: None, "m", {}, {})
    assert isinstance(facts, Facts)
    json.dumps(server.thinking_fields(False))


def test_advice_falls_back_to_the_base_profile() -> None:
    vllm = SERVERS["vllm"]
    assert "--max-num-seqs" in vllm.advice("concurrency")
    assert vllm.advice("concurrency", "rate_limited") == BASE.advice("concurrency", "rate_limited")
    assert "--max-num-seqs" not in SERVERS["ollama"].advice("concurrency")


@pytest.mark.parametrize(
    ("kind", "off", "budget"),
    [
        pytest.param(
            "llama.cpp",
            {"chat_template_kwargs": {"enable_thinking": False}, "reasoning_effort": "none"},
            {"thinking_budget_tokens": 64},
            id="llama.cpp",
        ),
        pytest.param(
            "vllm",
            {"chat_template_kwargs": {"enable_thinking": False, "thinking": False}},
            {"thinking_token_budget": 64},
            id="vllm",
        ),
        pytest.param("ollama", {"reasoning_effort": "none"}, {}, id="ollama"),
        pytest.param(
            "unknown",
            {"chat_template_kwargs": {"enable_thinking": False}, "reasoning_effort": "none"},
            {},
            id="unknown",
        ),
    ],
)
def test_the_thinking_switch_is_the_profiles(
    kind: str, off: dict[str, Any], budget: dict[str, Any]
) -> None:
    server = SERVERS[kind]
    assert WIRES["chat"].thinking_fields(False, server) == off
    assert WIRES["responses"].thinking_fields(64, kind) == budget
    # The native wires have a switch of their own, whatever the server.
    assert WIRES["ollama"].thinking_fields(False, server) == {"think": False}


@pytest.mark.parametrize(
    ("owner", "headers", "fingerprint", "top", "kind"),
    [
        pytest.param("vllm", {}, "", (), "vllm", id="owner"),
        pytest.param("VLLM ", {}, "", (), "vllm", id="owner-case"),
        pytest.param("x", {"x-litellm-version": "1"}, "", (), "litellm", id="litellm-header"),
        pytest.param("x", {"server": "llama.cpp"}, "", (), "llama.cpp", id="server-header"),
        pytest.param("x", {}, "b6123-abcdef0", (), "llama.cpp", id="fingerprint"),
        pytest.param("x", {}, "", ("timings",), "llama.cpp", id="timings"),
        pytest.param("", {}, "fp_123", (), "openai", id="openai-fingerprint"),
        pytest.param("vllm", {}, "fp_123", (), "vllm", id="owner-before-fp"),
        pytest.param("who-knows", {}, "", (), "unknown", id="unknown"),
    ],
)
def test_the_guess(
    owner: str, headers: dict[str, str], fingerprint: str, top: tuple[str, ...], kind: str
) -> None:
    reply = Reply(headers=headers, system_fingerprint=fingerprint, top_level=frozenset(top))
    assert guess_server(owner, reply) == kind


@pytest.mark.parametrize(
    "items",
    [
        pytest.param([], id="empty"),
        pytest.param([{"id": 1, "owned_by": None}], id="odd-types"),
        pytest.param([{"id": "m", "owned_by": ["vllm"]}], id="owner-list"),
        pytest.param([{"owned_by": "\x00" * 10_000}], id="nul-owner"),
    ],
)
def test_a_kind_the_guess_cannot_place_is_unknown(items: list[dict[str, Any]]) -> None:
    kind = server_of_models(Models(items, {"server": "\ufffd"}), "m")
    assert kind == "unknown"
    assert SERVERS[kind].advice("tool_choice_auto") == BASE.advice("tool_choice_auto")


def test_the_models_own_entry_wins_and_a_tag_is_found() -> None:
    items = [{"id": "a", "owned_by": "vllm"}, {"id": "m:latest", "owned_by": "library"}]
    assert server_of_models(Models(items), "m") == "ollama"  # Ollama lists `m` as `m:latest`
    assert server_of_models(Models(items), "a") == "vllm"
    assert server_of_models(Models(items)) == "vllm"  # no model named: the first owner


def _listing(owner: str) -> dict[str, Any]:
    return {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": owner}]}


def test_the_backend_and_the_doctor_find_the_same_kind(server: ScriptedServer) -> None:
    server.push(_listing("sglang"), _listing("sglang"), chat_reply("ok"))
    with Client(server.base_url) as client:
        kind = client.server_kind
        report = endpoint_report(client, "m", checks={"tool_choice_auto"})
    assert kind == report.server == "sglang"


# --- An eighth kind: one module and one line. ---------------------------------------------


def test_an_eighth_kind_is_one_profile_and_one_line(
    monkeypatch: pytest.MonkeyPatch, server: ScriptedServer
) -> None:
    """A new kind built as a kind's module builds its own, added to SERVERS: recognised by
    the backend and the doctor, its thinking switch sent by the loop, its advice given."""

    def facts(ask: Any, model: str, listed: Any, headers: Any) -> Facts:
        info = ask("/tgi/info", None)
        return Facts(version=(info or {}).get("version"), context_window=4096)

    tgi = BASE.derive(
        "tgi",
        owners=frozenset({"text-generation-inference"}),
        thinking=Thinking((), effort_off=True),
        facts=facts,
        texts={"tool_choice_auto": "start TGI with --enable-tools"},
    )
    monkeypatch.setitem(SERVERS, "tgi", tgi)
    listing = _listing("text-generation-inference")
    server.push(listing, chat_reply("hi"), listing, chat_reply("plain text, no call"))
    server.push(lambda r: {"version": "3.3.6"})  # its /tgi/info, asked for its facts
    with Client(server.base_url) as client:
        assert client.server_kind == "tgi"
        client.run(RunRequest("m", 32, prompt="hi", thinking=False))
        report = endpoint_report(client, "m", checks={"tool_choice_auto"})
    assert server.requests[1].json["reasoning_effort"] == "none"
    assert report.server_version == "3.3.6"
    assert report.server == "tgi" and report.context_window == 4096
    assert report.check("tool_choice_auto").advice == "start TGI with --enable-tools"


# --- No server kind's name outside servers/ and the modules that play servers. ---------------

# Strings equal to a kind's name that name something else: a wire, a provider, a path segment.
NOT_A_KIND = {
    ("wire/ollama/wire.py", "ollama"),  # the wire's name (api="ollama")
    ("wire/ollama/shapes.py", "ollama"),  # /api/tags entries are owned by "ollama": the wire's
    ("report/otel.py", "openai"),  # gen_ai.provider.name, the conventions' telemetry flavour
    ("redact.py", "openai"),  # a path segment that names no secret
    ("capabilities/api_parity.py", "ollama"),  # advice keyed by wire name
}
PLAYERS = ("servers/", "demo/", "testing.py")


def _kind_literals() -> list[tuple[str, int, str]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(PLAYERS):
            continue
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and node.value in SERVER_KINDS
                and node.value != "unknown"
                and id(node) not in docstrings
                and (rel, node.value) not in NOT_A_KIND
            ):
                found.append((rel, node.lineno, node.value))
    return found


def test_no_kind_is_named_outside_servers() -> None:
    assert _kind_literals() == []


def test_the_literal_scan_sees_a_kind() -> None:
    tree = ast.parse('if server == "vllm": pass')
    assert [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)] == ["vllm"]


def test_every_check_names_its_budget() -> None:
    assert all(isinstance(n, int) and n >= 1 for n in CHECKS.values())
    assert CHECKS["tool_choice_auto"] == 1
