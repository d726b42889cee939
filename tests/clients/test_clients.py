"""Agent client profiles: each request shaped as its client sends it, seen at the demo
server, and checked against the official SDKs' request types."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import TypeAdapter

from rig_nb import Client, RunRequest, Trace
from rig_nb.clients import CLIENTS, ClientProfile
from rig_nb.compare import COLUMNS, Endpoint, Scenario, compare
from rig_nb.demo import DemoServer, demo_tools
from rig_nb.loop import RunOptions
from rig_nb.testing import RecordedRequest

PROMPT = "What is the weather in Paris?"
SYSTEM = "You are terse."


@pytest.fixture
def demo() -> Iterator[DemoServer]:
    """A demo of this test's own: its requests are this test's alone."""
    with DemoServer(stream_first_delay=0, stream_interval=0) as srv:
        yield srv


def _run(demo: DemoServer, name: str, model: str = "well-behaved") -> tuple[Trace, list[Any]]:
    """A two-turn tool run shaped as client `name`; the bodies the demo received."""
    api = CLIENTS[name].api
    with Client(demo.base_url, api=api) as client:
        trace = client.run_trace(
            RunRequest(
                model,
                512,
                system=SYSTEM,
                prompt=PROMPT,
                tools=demo_tools()[:1],
                max_iterations=2,
                client=name,
            )
        )
    posts: list[RecordedRequest] = [r for r in demo.requests if r.method == "POST"]
    return trace, [r.json for r in posts]


def test_the_profiles_and_their_wires() -> None:
    assert list(CLIENTS) == ["claude-code", "codex", "opencode"]
    assert {n: p.api for n, p in CLIENTS.items()} == {
        "claude-code": "messages",
        "codex": "responses",
        "opencode": "chat",
    }
    for name, profile in CLIENTS.items():
        assert isinstance(profile, ClientProfile) and profile.name == name
        assert profile.sources and all(
            re.fullmatch(r"[\w.-]+/[\w.-]+#\d+", s) for s in profile.sources
        )


@pytest.mark.parametrize("name", list(CLIENTS))
def test_every_rule_names_its_source_in_the_docstring(name: str) -> None:
    module = inspect.getmodule(CLIENTS[name].shaper)
    assert module is not None and module.__name__.startswith("rig_nb.clients.")
    doc = module.__doc__ or ""
    for source in CLIENTS[name].sources:
        assert source in doc, source
    # Each bullet (a rule) names at least one public report.
    rules = [r for r in doc.split("\n- ")[1:]]
    assert rules and all(re.search(r"[\w.-]+/[\w.-]+#\d+", r) for r in rules), rules


# --- claude-code ---------------------------------------------------------------------------


def test_claude_code_shape_at_the_server(demo: DemoServer) -> None:
    trace, bodies = _run(demo, "claude-code")
    assert trace.outcome == "ok" and trace.client == "claude-code"
    assert len(bodies) == 2
    nonces = []
    for body in bodies:
        system = body["system"]
        assert isinstance(system, list) and len(system) == 3
        assert all(
            b["type"] == "text" and b["cache_control"] == {"type": "ephemeral"} for b in system
        )
        found = re.search(r"\bcch=([0-9a-f]+);", system[0]["text"])
        assert found is not None and system[0]["text"].startswith("x-anthropic-billing-header:")
        nonces.append(found.group(1))
        assert system[2]["text"] == SYSTEM
        # The reminder: a system turn right after the first user turn.
        assert body["messages"][0]["role"] == "user"
        assert body["messages"][1]["role"] == "system"
        assert "<system-reminder>" in body["messages"][1]["content"]
        # A JSON string of the device, account and session ids (Claude Code 2.1.78+).
        user = json.loads(body["metadata"]["user_id"])
        assert set(user) == {"device_id", "account_uuid", "session_id"}
        assert all(
            t["input_schema"]["$schema"].startswith("http://json-schema.org/")
            for t in body["tools"]
        )
        # Never under the API's least budget: max_tokens rises to hold it.
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
        assert body["max_tokens"] == 1025
        assert body["stream"] is True
    assert nonces[0] != nonces[1]  # fresh per request: the prefix differs every turn
    assert bodies[0]["metadata"] == bodies[1]["metadata"]  # one session
    # The second request carries the turn: tool_use, then its tool_result.
    kinds = [
        b["type"]
        for m in bodies[1]["messages"]
        for b in m["content"]
        if isinstance(m["content"], list)
    ]
    assert "tool_use" in kinds and "tool_result" in kinds
    assert all(it.streamed for it in trace.iterations)


def _valid(kind: Any, value: Any) -> None:
    """`value` validated as the SDK's type `kind` (ValidationError, a ValueError, if not).

    pydantic reads an SDK's `Iterable[...]` fields lazily: lists are checked item by item."""
    TypeAdapter(kind).validate_python(value)


def test_claude_code_bodies_are_anthropic_sdk_requests(demo: DemoServer) -> None:
    from anthropic.types import ContentBlockParam, MessageParam, TextBlockParam, ToolParam
    from anthropic.types.message_create_params import MessageCreateParamsStreaming

    _, bodies = _run(demo, "claude-code")
    for body in bodies:
        _valid(MessageCreateParamsStreaming, body)
        for block in body["system"]:
            _valid(TextBlockParam, block)
        for message in body["messages"]:
            _valid(MessageParam, message)
            content = message["content"]
            for block in content if isinstance(content, list) else []:
                _valid(ContentBlockParam, block)
        for tool in body["tools"]:
            _valid(ToolParam, tool)
    with pytest.raises(ValueError):
        _valid(MessageParam, {"role": "tool", "content": "x"})
    with pytest.raises(ValueError):
        _valid(MessageCreateParamsStreaming, {**bodies[0], "stream": False})


@pytest.mark.parametrize(
    ("max_tokens", "budget", "sent"),
    [
        pytest.param(32000, 31999, 32000, id="claude-codes-own"),
        pytest.param(2048, 2047, 2048, id="one-under"),
        pytest.param(64, 1024, 1025, id="least-budget"),
    ],
)
def test_claude_code_thinking_budget(max_tokens: int, budget: int, sent: int) -> None:
    from rig_nb.wire import Request, Turn

    request = Request("m", (Turn("user", "hi"),), max_tokens)
    body = CLIENTS["claude-code"].shape({"model": "m", "max_tokens": max_tokens}, request)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["max_tokens"] == sent


def test_two_runs_have_two_sessions(demo: DemoServer) -> None:
    _, first = _run(demo, "claude-code")
    _, both = _run(demo, "claude-code")
    assert first[0]["metadata"] != both[2]["metadata"]


# --- codex ---------------------------------------------------------------------------------


def test_codex_shape_at_the_server(demo: DemoServer) -> None:
    trace, bodies = _run(demo, "codex")
    assert trace.outcome == "ok" and trace.client == "codex"
    assert len(bodies) == 2
    for body in bodies:
        assert body["instructions"] == SYSTEM
        assert body["store"] is False
        assert body["include"] == ["reasoning.encrypted_content"]
        kinds = [(t["type"], t["name"]) for t in body["tools"]]
        assert kinds == [("function", "get_weather"), ("custom", "apply_patch")]
        assert body["tools"][0]["strict"] is False
        custom = body["tools"][1]
        assert custom["format"]["type"] == "grammar" and custom["format"]["syntax"] == "lark"
        assert body["parallel_tool_calls"] is False
        assert body["tool_choice"] == "auto"
        assert all("id" not in i and "status" not in i for i in body["input"])
    assert bodies[0]["prompt_cache_key"] == bodies[1]["prompt_cache_key"]
    replayed = [i["type"] for i in bodies[1]["input"]]
    assert "function_call" in replayed and "function_call_output" in replayed


def test_codex_drops_id_and_status_from_every_item() -> None:
    shape = CLIENTS["codex"].session()
    request = RunRequest("m", 64)  # only its max_tokens is read; any Request will do
    from rig_nb.wire import Request, Turn

    sent = Request("m", (Turn("user", "hi"),), request.max_tokens)
    body = {
        "model": "m",
        "input": [
            {
                "type": "function_call",
                "id": "fc_1",
                "status": "completed",
                "call_id": "c",
                "name": "f",
                "arguments": "{}",
            },
            {
                "type": "message",
                "role": "assistant",
                "id": "msg_1",
                "status": "completed",
                "content": [],
            },
        ],
    }
    out = shape(body, sent)
    assert out["input"] == [
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        {"type": "message", "role": "assistant", "content": []},
    ]
    assert body["input"][0]["id"] == "fc_1"  # the wire's body is not changed in place
    assert out["instructions"]  # its base instructions when the run has no system prompt


def test_codex_bodies_are_openai_sdk_requests(demo: DemoServer) -> None:
    from openai.types.responses import ResponseInputItemParam, ToolParam
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

    _, bodies = _run(demo, "codex")
    for body in bodies:
        _valid(ResponseCreateParamsNonStreaming, body)
        for item in body["input"]:
            _valid(ResponseInputItemParam, item)
        for tool in body["tools"]:
            _valid(ToolParam, tool)
    with pytest.raises(ValueError):
        _valid(ToolParam, {"type": "custom"})  # a custom tool needs its name


# --- opencode ------------------------------------------------------------------------------


def test_opencode_shape_at_the_server(demo: DemoServer) -> None:
    # A persona that sends its reasoning in reasoning_content: opencode sends it back as
    # `reasoning`.
    trace, bodies = _run(demo, "opencode", "reasoning-field")
    assert trace.outcome == "ok" and trace.client == "opencode"
    assert len(bodies) == 2
    for body in bodies:
        assert body["tool_choice"] == "auto"
        assert body["stream"] is True
    assistant = [m for m in bodies[1]["messages"] if m["role"] == "assistant"]
    assert len(assistant) == 1 and assistant[0]["tool_calls"]
    assert assistant[0]["reasoning"] == trace.iterations[0].reasoning_content != ""
    assert "reasoning_content" not in assistant[0]
    assert trace.iterations[0].replayed == "reasoning"


def test_opencode_bodies_are_openai_sdk_requests(demo: DemoServer) -> None:
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam
    from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

    _, bodies = _run(demo, "opencode", "reasoning-field")
    for body in bodies:
        _valid(CompletionCreateParamsStreaming, body)
        for message in body["messages"]:
            _valid(ChatCompletionMessageParam, message)
        for tool in body["tools"]:
            _valid(ChatCompletionToolParam, tool)
    with pytest.raises(ValueError):
        _valid(ChatCompletionMessageParam, {"role": "reasoner", "content": "x"})


def test_a_run_without_a_client_is_shaped_as_before(demo: DemoServer) -> None:
    with Client(demo.base_url) as client:
        trace = client.run_trace(RunRequest("well-behaved", 256, prompt=PROMPT, tools=demo_tools()))
    body = demo.requests[-1].json
    assert trace.client is None and "stream" not in body and "reasoning" not in json.dumps(body)


# --- refusals before any request -----------------------------------------------------------


@pytest.mark.parametrize(
    ("api", "name"),
    [
        pytest.param("chat", "claude-code", id="claude-code-over-chat"),
        pytest.param("messages", "codex", id="codex-over-messages"),
        pytest.param("responses", "opencode", id="opencode-over-responses"),
    ],
)
def test_a_profile_over_another_wire_is_refused_before_any_request(
    demo: DemoServer, api: str, name: str
) -> None:
    with Client(demo.base_url, api=api) as client:
        with pytest.raises(ValueError) as caught:
            client.run(RunRequest("well-behaved", 64, prompt="hi", client=name))
    message = str(caught.value)
    assert name in message and CLIENTS[name].api in message and api in message
    assert not [r for r in demo.requests if r.method == "POST"]


def test_an_unknown_profile_is_refused_listing_the_names(demo: DemoServer) -> None:
    with Client(demo.base_url) as client:
        with pytest.raises(ValueError) as caught:
            client.run(RunRequest("well-behaved", 64, prompt="hi", client="cursor"))
    message = str(caught.value)
    assert "cursor" in message and all(name in message for name in CLIENTS)
    assert not demo.requests


# --- where a profile's name is kept -------------------------------------------------------


def test_run_options_carry_the_client_to_requests_and_scenarios() -> None:
    field = {f.name: f for f in dataclasses.fields(RunOptions)}["client"]
    assert field.default is None
    assert RunRequest("m", 1, client="codex").client == "codex"
    assert Scenario("s", client="codex").client == "codex"


def test_the_trace_keeps_its_client_through_json(demo: DemoServer) -> None:
    trace, _ = _run(demo, "codex")
    again = Trace.from_json(trace.to_json())
    assert again.client == "codex" and again == trace
    assert Trace.from_json(Trace().to_json()).client is None
    assert json.loads(trace.to_json())["client"] == "codex"
    with pytest.raises(ValueError, match="client"):
        Trace.from_dict({**trace.to_dict(), "client": 3})


def test_compare_rows_carry_the_client(demo: DemoServer) -> None:
    endpoints = [
        Endpoint("chat", demo.base_url, "well-behaved"),
        Endpoint("messages", demo.base_url, "well-behaved", api="messages"),
    ]
    scenarios = [
        Scenario("plain", prompt=PROMPT, tools=demo_tools(), max_iterations=3),
        Scenario(
            "as-claude", prompt=PROMPT, tools=demo_tools(), max_iterations=3, client="claude-code"
        ),
    ]
    df = compare(endpoints, scenarios=scenarios)
    assert list(df.columns) == COLUMNS and COLUMNS[-1] == "client"
    assert COLUMNS[:-1] == [c for c in COLUMNS if c != "client"]
    rows = {(r.endpoint, r.scenario): r for r in df.itertuples()}
    assert rows[("chat", "plain")].client == "" and rows[("chat", "plain")].outcome == "ok"
    assert rows[("messages", "as-claude")].client == "claude-code"
    assert rows[("messages", "as-claude")].outcome == "ok"
    # Over a wire it does not speak, the row says why and the others are unaffected.
    refused = rows[("chat", "as-claude")]
    assert refused.client == "claude-code" and refused.outcome != "ok"
    assert "messages" in refused.error


def test_compare_refuses_an_unknown_client_before_any_request(demo: DemoServer) -> None:
    endpoints = [Endpoint("chat", demo.base_url, "well-behaved")]
    df = compare(endpoints, scenarios=[Scenario("s", prompt=PROMPT, client="cursor")])
    (row,) = df.itertuples()
    assert row.outcome != "ok" and row.client == "cursor"
    assert "cursor" in row.error and all(name in row.error for name in CLIENTS)
    assert not [r for r in demo.requests if r.method == "POST"]
