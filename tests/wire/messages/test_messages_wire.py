"""The Anthropic Messages wire (issue 32): what goes on the wire and how replies are read.

Requests (blocks, tools, tool_choice, the thinking switch and its budget, replay of
thinking blocks with their signature, tool results in one user turn), headers, and
replies (joined blocks, the last signature, stop reasons, usage with the cached part)
over a scripted server and the demo.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from rig_nb import BackendError, Client, OutputLimitError, RunRequest, tool
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools
from rig_nb.testing import Response, ScriptedServer, sse_body
from rig_nb.wire import WIRES, Call, Request, ToolSpec, Turn

MESSAGES = WIRES["messages"]
KEY = "sk-ant-api03-secret-0123456789abcdef"
SSE = {"content-type": "text/event-stream"}
USAGE_2 = {"output_tokens": 2}
PING = ToolSpec("ping", "Ping.", {"type": "object", "properties": {"n": {"type": "integer"}}})


def message(*blocks: dict[str, Any], stop: str = "end_turn", **usage: int) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": list(blocks),
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 5, "output_tokens": 3},
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking(value: str, signature: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": signature}


def use(call_id: str, name: str, given: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": given}


def sse(events: list[dict[str, Any]]) -> Response:
    framed = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]
    return Response(sse_body(framed, done=False), headers=SSE)


def test_the_request_is_a_messages_request() -> None:
    turns = (
        Turn("system", "Be brief."),
        Turn("user", "Ping twice."),
        Turn(
            "assistant",
            "Pinging.",
            reasoning="I should ping.",
            reasoning_field="thinking",
            signature="sig-abc",
            redacted=("opaque==",),
            calls=(Call("toolu_1", "ping", '{"n": 1}'), Call("toolu_2", "ping", '{"n": 2}')),
        ),
        Turn("tool", "pong 1", call_id="toolu_1", name="ping"),
        Turn("tool", "no such n", call_id="toolu_2", name="ping", is_error=True),
    )
    body = MESSAGES.body(Request("m", turns, 256, tools=(PING,), tool_choice="required"))
    assert body == {
        "model": "m",
        "max_tokens": 256,
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": [text("Ping twice.")]},
            {
                "role": "assistant",
                "content": [
                    thinking("I should ping.", "sig-abc"),
                    {"type": "redacted_thinking", "data": "opaque=="},
                    text("Pinging."),
                    use("toolu_1", "ping", {"n": 1}),
                    use("toolu_2", "ping", {"n": 2}),
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "pong 1"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": "no such n",
                        "is_error": True,
                    },
                ],
            },
        ],
        "tools": [{"name": "ping", "description": "Ping.", "input_schema": dict(PING.parameters)}],
        "tool_choice": {"type": "any"},
    }


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("auto", {"type": "auto"}),
        ("required", {"type": "any"}),
        ("none", {"type": "none"}),
        ({"type": "function", "function": {"name": "ping"}}, {"type": "tool", "name": "ping"}),
    ],
)
def test_tool_choice_takes_the_messages_shape(choice: Any, sent: Any) -> None:
    request = Request("m", (Turn("user", "hi"),), 64, tools=(PING,), tool_choice=choice)
    assert MESSAGES.body(request)["tool_choice"] == sent


def test_temperature_goes_out_only_when_not_zero_and_stream_only_when_asked() -> None:
    plain = MESSAGES.body(Request("m", (Turn("user", "hi"),), 64))
    assert "temperature" not in plain and "stream" not in plain and "tools" not in plain
    warm = MESSAGES.body(Request("m", (Turn("user", "hi"),), 64, temperature=0.7, stream=True))
    assert warm["temperature"] == 0.7 and warm["stream"] is True


@pytest.mark.parametrize(
    ("thinking", "max_tokens", "sent"),
    [
        (False, 512, {"type": "disabled"}),
        (True, 8192, {"type": "enabled", "budget_tokens": 4096}),
        ("low", 8192, {"type": "enabled", "budget_tokens": 1024}),
        ("medium", 8192, {"type": "enabled", "budget_tokens": 4096}),
        ("high", 32000, {"type": "enabled", "budget_tokens": 16384}),
        (300, 8192, {"type": "enabled", "budget_tokens": 300}),
        # Held to max_tokens - 1, an explicit budget too; no lower bound.
        (True, 512, {"type": "enabled", "budget_tokens": 511}),
        (10_000, 2048, {"type": "enabled", "budget_tokens": 2047}),
        (0, 512, {"type": "enabled", "budget_tokens": 0}),
    ],
)
def test_thinking_maps_to_the_thinking_field(
    server: ScriptedServer, thinking: Any, max_tokens: int, sent: Any
) -> None:
    server.push(message(text("Hi.")))
    # server= names the kind: no model-list request is spent finding it out.
    with Client(server.base_url, api="messages", server="llama.cpp") as client:
        trace = client.run_trace(RunRequest("m", max_tokens, prompt="hi", thinking=thinking))
    assert trace.outcome == "ok"
    body = server.requests[-1].json
    assert body["thinking"] == sent
    assert trace.iterations[0].thinking_sent == {"thinking": sent}  # recorded as sent
    assert "chat_template_kwargs" not in body and "reasoning_effort" not in body


def test_a_callers_thinking_field_wins(server: ScriptedServer) -> None:
    server.push(message(text("Hi.")))
    mine = {"type": "enabled", "budget_tokens": 100}
    with Client(server.base_url, api="messages", server="llama.cpp") as client:
        client.run(RunRequest("m", 512, prompt="hi", thinking=False, extra_body={"thinking": mine}))
    assert server.requests[-1].json["thinking"] == mine


@pytest.mark.parametrize(
    ("key", "expected"),
    [(KEY, {"x-api-key": KEY, "anthropic-version": "2023-06-01"}), ("", None)],
    ids=["key", "no-key"],
)
def test_headers_name_the_key_in_x_api_key_only(
    server: ScriptedServer, key: str, expected: Any
) -> None:
    server.push(message(text("Hi.")), {"data": [{"id": "m", "type": "model"}]})
    with Client(server.base_url, key, api="messages") as client:
        client.run(RunRequest("m", 64, prompt="hi"))
        assert [m["id"] for m in client.list_models().items] == ["m"]
    for sent in server.requests:
        assert "authorization" not in sent.headers
        assert sent.headers["anthropic-version"] == "2023-06-01"
        if expected is None:
            assert "x-api-key" not in sent.headers
        else:
            assert sent.headers["x-api-key"] == KEY
    assert [r.path for r in server.requests] == ["/v1/messages", "/v1/models"]


def _both_ways(server: ScriptedServer, reply: dict[str, Any], events: list[Any]) -> list[Any]:
    server.push(Response(reply), sse(events))
    request = Request("m", (Turn("user", "hi"),), 64)
    with Client(server.base_url, api="messages") as client:
        whole = client.chat(request)
        live = client.stream(Request("m", request.turns, 64, stream=True), client.reader())
    return [whole, live]


def _events_of(reply: dict[str, Any]) -> list[dict[str, Any]]:
    head = {**reply, "content": [], "stop_reason": None}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": head}]
    for index, block in enumerate(reply["content"]):
        start = {**block}
        delta: dict[str, Any] | None = None
        if block["type"] == "redacted_thinking":
            pass  # it arrives whole in its start, with no deltas
        elif block["type"] == "text":
            start["text"], delta = "", {"type": "text_delta", "text": block["text"]}
        elif block["type"] == "thinking":
            start["thinking"], delta = "", {"type": "thinking_delta", "thinking": block["thinking"]}
        else:
            start["input"] = {}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        if delta is not None:
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {"type": "message_delta", "delta": {"stop_reason": reply["stop_reason"]}, "usage": {}}
    )
    events.append({"type": "message_stop"})
    return events


def test_blocks_are_joined_and_the_last_signature_kept(server: ScriptedServer) -> None:
    reply = message(
        thinking("First. ", "sig-1"),
        text("Hello, "),
        thinking("Second.", "sig-2"),
        text("world."),
        use("toolu_9", "ping", {"n": 3}),
        stop="tool_use",
    )
    for got in _both_ways(server, reply, _events_of(reply)):
        assert got.content == "Hello, world."
        assert got.reasoning == "First. Second." and got.reasoning_field == "thinking"
        assert got.reasoning_signature == "sig-2"
        assert got.finish_reason == "tool_calls"
        call = got.tool_calls[0]
        assert call.id == "toolu_9" and call.name == "ping"
        assert json.loads(call.arguments) == {"n": 3}


def test_a_signature_delta_replaces_the_signature(server: ScriptedServer) -> None:
    def delta(**fields: str) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": 0, "delta": fields}

    events = [
        {"type": "message_start", "message": {**message(), "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": thinking("", "")},
        delta(type="thinking_delta", thinking="Hm."),
        delta(type="signature_delta", signature="old"),
        delta(type="signature_delta", signature="new"),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 2},
        },
        {"type": "message_stop"},
    ]
    server.push(sse(events))
    with Client(server.base_url, api="messages") as client:
        got = client.stream(Request("m", (Turn("user", "hi"),), 64, stream=True), client.reader())
    assert got.reasoning == "Hm." and got.reasoning_signature == "new"
    assert got.usage == {"prompt_tokens": 5, "completion_tokens": 2}


@pytest.mark.parametrize(
    ("stop", "finish", "cut"),
    [
        ("end_turn", "stop", False),
        ("stop_sequence", "stop", False),
        ("max_tokens", "length", False),
        ("refusal", "content_filter", False),
        ("model_context_window_exceeded", "length", True),
    ],
)
def test_stop_reasons_are_chat_finish_reasons(
    server: ScriptedServer, stop: str, finish: str, cut: bool
) -> None:
    reply = message(text("Partial"), stop=stop)
    for got in _both_ways(server, reply, _events_of(reply)):
        assert (got.finish_reason, got.context_cut) == (finish, cut)


def test_a_refusal_ends_the_run_as_content_filter(server: ScriptedServer) -> None:
    server.push(message(text("I can't"), stop="refusal"))
    with Client(server.base_url, api="messages") as client:
        trace = client.run_trace(RunRequest("m", 64, prompt="hi"))
    assert trace.iterations[-1].ending == "content_filter"


def test_the_context_window_stop_marks_the_iteration_cut(server: ScriptedServer) -> None:
    server.push(message(text("Partial"), stop="model_context_window_exceeded"))
    with Client(server.base_url, api="messages") as client:
        with pytest.raises(OutputLimitError) as raised:
            client.run(RunRequest("m", 64, prompt="hi"))
    it = raised.value.trace.iterations[-1]
    assert it.context_cut is True and it.finish_reason == "length"


def test_pause_turn_is_a_reply_error_naming_it(server: ScriptedServer) -> None:
    reply = message(text("Searching"), stop="pause_turn")
    server.push(Response(reply), sse(_events_of(reply)))
    with Client(server.base_url, api="messages") as client:
        for stream in (False, True):
            trace = client.run_trace(RunRequest("m", 64, prompt="hi", stream=stream))
            assert isinstance(trace.exception, BackendError)
            assert trace.exception.kind == "reply" and "pause_turn" in trace.exception.message


def test_usage_counts_the_cached_part_of_the_prompt(server: ScriptedServer) -> None:
    usage = {
        "input_tokens": 10,
        "cache_read_input_tokens": 500,
        "cache_creation_input_tokens": 40,
        "output_tokens": 7,
    }
    reply = message(text("Hi."), **usage)
    for got in _both_ways(server, reply, _events_of(reply)):
        assert got.usage == {
            "prompt_tokens": 550,
            "completion_tokens": 7,
            "cached_tokens": 500,
            "cache_write_tokens": 40,
        }


def test_an_error_body_is_a_backend_error_with_its_message(server: ScriptedServer) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded now"}}
    server.push(Response(error, 529))
    with Client(server.base_url, api="messages", max_retries=0) as client:
        with pytest.raises(BackendError) as raised:
            client.chat(Request("m", (Turn("user", "hi"),), 64))
    assert raised.value.status_code == 529 and "Overloaded now" in raised.value.message


def test_a_server_without_the_route_says_so(server: ScriptedServer) -> None:
    server.push(Response({"error": {"message": "File Not Found"}}, 404))
    with Client(server.base_url, api="messages", max_retries=0) as client:
        with pytest.raises(BackendError) as raised:
            client.chat(Request("m", (Turn("user", "hi"),), 64))
    assert "/messages answered 404" in raised.value.message


@tool
def ping(n: int) -> str:
    """Ping."""
    return f"pong {n}"


def _push_tool_round(server: ScriptedServer, first: dict[str, Any], stream: bool) -> None:
    """`first` (a reply calling `ping`), then a closing "Done.", whole or as event streams."""
    replies = [first, message(text("Done."))]
    server.push(*([sse(_events_of(r)) for r in replies] if stream else replies))


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_thinking_goes_back_first_with_its_signature_unchanged(
    server: ScriptedServer, stream: bool
) -> None:
    first = message(
        thinking("Ping it.", "sig-opaque/+=="),
        text("On it."),
        use("toolu_1", "ping", {"n": 1}),
        use("toolu_2", "ping", {"n": 2}),
        stop="tool_use",
    )
    _push_tool_round(server, first, stream)
    with Client(server.base_url, api="messages", server="llama.cpp") as client:
        trace = client.run_trace(
            RunRequest("m", 256, prompt="ping", tools=(ping,), stream=stream, thinking=True)
        )
    assert trace.outcome == "ok", trace.error
    assert trace.iterations[0].reasoning_signature == "sig-opaque/+=="
    echoed = server.requests[1].json["messages"]
    assert [m["role"] for m in echoed] == ["user", "assistant", "user"]
    assert [b["type"] for b in echoed[1]["content"]] == ["thinking", "text", "tool_use", "tool_use"]
    assert echoed[1]["content"][0] == thinking("Ping it.", "sig-opaque/+==")
    assert [(b["type"], b["tool_use_id"]) for b in echoed[2]["content"]] == [
        ("tool_result", "toolu_1"),
        ("tool_result", "toolu_2"),
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_demo_takes_its_own_signatures_back(demo: DemoServer, stream: bool) -> None:
    # The demo refuses a thinking block whose signature does not match its text: a run
    # that replays reasoning over several rounds proves the signature went back unchanged.
    with Client(demo.base_url, api="messages") as client:
        trace = client.run_trace(
            RunRequest(
                "deepseek-thinking-tools",
                512,
                system=DEMO_SYSTEM,
                prompt=DEMO_PROMPT,
                tools=demo_tools(),
                stream=stream,
                reasoning_replay="all",
            )
        )
    assert trace.outcome == "ok", trace.error
    assert len(trace.iterations) >= 2
    assert all(it.reasoning_signature.startswith("sig-") for it in trace.iterations[:-1])
    assert [it.replayed for it in trace.iterations[:-1]] == ["thinking"] * (
        len(trace.iterations) - 1
    )


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("with_text", [True, False], ids=["thinking-too", "redacted-only"])
def test_redacted_thinking_goes_back_unchanged(
    server: ScriptedServer, stream: bool, with_text: bool
) -> None:
    hidden = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a=="}
    blocks = [thinking("Ping it.", "sig-1")] if with_text else []
    first = message(*blocks, hidden, use("toolu_1", "ping", {"n": 1}), stop="tool_use")
    _push_tool_round(server, first, stream)
    with Client(server.base_url, api="messages") as client:
        trace = client.run_trace(RunRequest("m", 256, prompt="ping", tools=(ping,), stream=stream))
    assert trace.outcome == "ok", trace.error
    echoed = server.requests[1].json["messages"][1]["content"]
    kinds = ["thinking"] * with_text + ["redacted_thinking", "tool_use"]
    assert [b["type"] for b in echoed] == kinds
    assert echoed[kinds.index("redacted_thinking")] == hidden
