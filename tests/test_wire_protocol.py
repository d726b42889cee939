"""rig_nb.wire.WIRES and Wire: every wire held to the same protocol, each to its own shapes.

The generic tests iterate over WIRES, so a wire added later is covered by them as soon as
it is registered; what each wire is expected to send and read lives in WIRE_ROWS, keyed by
name. A wire with no row fails `test_every_wire_has_a_row` (add its row): nothing skips.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from rig_nb import BackendError
from rig_nb.servers import SERVER_KINDS
from rig_nb.wire import WIRES, Call, Reply, Request, ToolSpec, Turn, Wire

KEY = "sk-wire-4242"
FIELDS = ("reasoning_content", "reasoning", "thinking", "content")
TOOL = ToolSpec(
    "get_weather",
    "Weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
CALL = Call("call_1", "get_weather", '{"city": "Paris"}')


def conversation(reasoning_field: str, *, stream: bool = False) -> Request:
    """Every turn kind: system, user, assistant (text, reasoning, signature, a call), tool."""
    turns = (
        Turn("system", "Be brief."),
        Turn("user", "Weather in Paris?"),
        Turn(
            "assistant",
            text="Checking.",
            reasoning="Need the tool.",
            reasoning_field=reasoning_field,
            signature="sig-opaque-1",
            calls=(CALL,),
        ),
        Turn("tool", "Paris: 16 C", call_id="call_1", name="get_weather"),
    )
    return Request(
        "m", turns, 64, tools=(TOOL,), temperature=0.5, stream=stream, extra={"top_k": 5}
    )


def seen(reply: Reply) -> dict[str, Any]:
    """What a reply says, in one comparable shape (arguments parsed)."""
    return {
        "content": reply.content,
        "reasoning": reply.reasoning,
        "reasoning_field": reply.reasoning_field,
        "finish_reason": reply.finish_reason,
        "calls": [
            (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
            for c in reply.tool_calls
        ],
        "usage": dict(reply.usage),
    }


def sse(*events: Any, done: bool = False) -> bytes:
    out = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    return out + (b"data: [DONE]\n\n" if done else b"")


# What the replies below say: one reasoning, one answer, one call, usage.
SAID = {
    "content": "Let me check.",
    "reasoning": "Need weather.",
    "calls": [("call_9", "get_weather", {"city": "Oslo"})],
    "usage": {
        "prompt_tokens": 20,
        "completion_tokens": 10,
        "reasoning_tokens": 4,
        "cached_tokens": 8,
    },
}


@dataclass(frozen=True)
class Row:
    """What one wire is expected to do."""

    route: str
    framing: str
    models_route: str
    root: str  # the root for base URL http://h:1/v1
    headers: dict[str, str]  # with KEY
    body: Callable[[str], dict[str, Any]]  # the conversation's body, per reasoning field
    minimal: bytes
    minimal_said: dict[str, Any]
    full: bytes
    full_said: dict[str, Any]
    stream: bytes
    stream_said: dict[str, Any]
    thinking: dict[tuple[Any, str], dict[str, Any]]
    replay: dict[str, str]
    models: bytes
    model_ids: list[str]
    headers_no_key: dict[str, str] = field(default_factory=dict)


# The chat completions wire.


def chat_body(reasoning_field: str) -> dict[str, Any]:
    assistant: dict[str, Any] = {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    if reasoning_field == "content":
        assistant["content"] = "<think>Need the tool.</think>\n\nChecking."
    else:
        assistant[reasoning_field] = "Need the tool."
    return {
        "model": "m",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            assistant,
            {"role": "tool", "tool_call_id": "call_1", "content": "Paris: 16 C"},
        ],
        "max_tokens": 64,
        "temperature": 0.5,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather for a city.",
                    "parameters": dict(TOOL.parameters),
                },
            }
        ],
        "tool_choice": "auto",
        "top_k": 5,
    }


CHAT_USAGE = {
    "prompt_tokens": 20,
    "completion_tokens": 10,
    "total_tokens": 30,
    "completion_tokens_details": {"reasoning_tokens": 4},
    "prompt_tokens_details": {"cached_tokens": 8},
}
CHAT_CALL = {
    "id": "call_9",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
}


def _delta(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _frag(**fn: Any) -> dict[str, Any]:
    return {"tool_calls": [{"index": 0, **fn}]}


CHAT_ROW = Row(
    route="/chat/completions",
    framing="sse",
    models_route="/models",
    root="http://h:1/v1",
    headers={"Authorization": f"Bearer {KEY}"},
    body=chat_body,
    minimal=b'{"choices":[{"message":{"content":"hi"}}]}',
    minimal_said={
        "content": "hi",
        "reasoning": "",
        "reasoning_field": "",
        "calls": [],
        "usage": {},
    },
    full=json.dumps(
        {
            "id": "c1",
            "object": "chat.completion",
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": "Let me check.",
                        "reasoning_content": "Need weather.",
                        "tool_calls": [CHAT_CALL],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": CHAT_USAGE,
        }
    ).encode(),
    full_said={**SAID, "reasoning_field": "reasoning_content", "finish_reason": "tool_calls"},
    stream=sse(
        _delta({"role": "assistant", "reasoning": "Need "}),
        _delta({"reasoning": "weather."}),
        _delta({"content": "Let me "}),
        _delta({"content": "check."}),
        _delta(
            _frag(
                id="call_9",
                type="function",
                function={"name": "get_weather", "arguments": '{"city":'},
            )
        ),
        _delta(_frag(function={"arguments": '"Oslo"}'})),
        _delta({}, "tool_calls"),
        {"object": "chat.completion.chunk", "choices": [], "usage": CHAT_USAGE},
        done=True,
    ),
    stream_said={**SAID, "reasoning_field": "reasoning", "finish_reason": "tool_calls"},
    thinking={
        (None, "llama.cpp"): {},
        (False, "llama.cpp"): {
            "reasoning_effort": "none",
            "chat_template_kwargs": {"enable_thinking": False},
        },
        (True, "vllm"): {"chat_template_kwargs": {"enable_thinking": True, "thinking": True}},
        ("high", "openai"): {"reasoning_effort": "high"},
        (True, "ollama"): {"reasoning_effort": "medium"},
        (300, "vllm"): {"thinking_token_budget": 300},
        (300, "llama.cpp"): {"thinking_budget_tokens": 300},
        (300, "openai"): {},
    },
    replay={"vllm": "reasoning", "ollama": "reasoning", "llama.cpp": "reasoning_content"},
    models=b'{"object":"list","data":[{"id":"a","object":"model"},"junk",{"id":"b"}]}',
    model_ids=["a", "b"],
)


# The Responses wire.


def responses_body(reasoning_field: str) -> dict[str, Any]:
    return {
        "model": "m",
        "instructions": "Be brief.",
        "input": [
            {"type": "message", "role": "user", "content": "Weather in Paris?"},
            {
                "type": "reasoning",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": "Need the tool."}],
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Checking."}],
            },
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city": "Paris"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "Paris: 16 C"},
        ],
        "store": False,
        "max_output_tokens": 64,
        "temperature": 0.5,
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Weather for a city.",
                "parameters": dict(TOOL.parameters),
            }
        ],
        "tool_choice": "auto",
        "top_k": 5,
    }


RESPONSES_USAGE = {
    "input_tokens": 20,
    "output_tokens": 10,
    "total_tokens": 30,
    "output_tokens_details": {"reasoning_tokens": 4},
    "input_tokens_details": {"cached_tokens": 8},
}
RS_ITEM = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [],
    "content": [{"type": "reasoning_text", "text": "Need weather."}],
}
MSG_ITEM = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Let me check.", "annotations": []}],
}
FC_ITEM = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_9",
    "name": "get_weather",
    "arguments": '{"city":"Oslo"}',
    "status": "completed",
}
RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "status": "completed",
    "model": "m",
    "output": [RS_ITEM, MSG_ITEM, FC_ITEM],
    "usage": RESPONSES_USAGE,
}


def _responses_events() -> Iterator[dict[str, Any]]:
    started = {**RESPONSE, "status": "in_progress", "output": [], "usage": None}
    yield {"type": "response.created", "response": started}
    yield {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {**RS_ITEM, "content": []},
    }
    for piece in ("Need ", "weather."):
        yield {
            "type": "response.reasoning_text.delta",
            "output_index": 0,
            "item_id": "rs_1",
            "content_index": 0,
            "delta": piece,
        }
    yield {"type": "response.output_item.done", "output_index": 0, "item": RS_ITEM}
    yield {
        "type": "response.output_item.added",
        "output_index": 1,
        "item": {**MSG_ITEM, "content": []},
    }
    for piece in ("Let me ", "check."):
        yield {
            "type": "response.output_text.delta",
            "output_index": 1,
            "item_id": "msg_1",
            "content_index": 0,
            "delta": piece,
        }
    yield {"type": "response.output_item.done", "output_index": 1, "item": MSG_ITEM}
    yield {
        "type": "response.output_item.added",
        "output_index": 2,
        "item": {**FC_ITEM, "arguments": ""},
    }
    for piece in ('{"city":', '"Oslo"}'):
        yield {
            "type": "response.function_call_arguments.delta",
            "output_index": 2,
            "item_id": "fc_1",
            "delta": piece,
        }
    yield {
        "type": "response.function_call_arguments.done",
        "output_index": 2,
        "item_id": "fc_1",
        "arguments": '{"city":"Oslo"}',
    }
    yield {"type": "response.output_item.done", "output_index": 2, "item": FC_ITEM}
    yield {"type": "response.completed", "response": RESPONSE}


def _numbered(events: Iterator[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


RESPONSES_ROW = Row(
    route="/responses",
    framing="sse",
    models_route="/models",
    root="http://h:1/v1",
    headers={"Authorization": f"Bearer {KEY}"},
    body=responses_body,
    minimal=b'{"output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}',
    minimal_said={
        "content": "hi",
        "reasoning": "",
        "reasoning_field": "",
        "calls": [],
        "usage": {},
    },
    full=json.dumps(RESPONSE).encode(),
    full_said={**SAID, "reasoning_field": "reasoning_text", "finish_reason": "tool_calls"},
    stream=sse(*_numbered(_responses_events())),
    stream_said={**SAID, "reasoning_field": "reasoning_text", "finish_reason": "tool_calls"},
    thinking={
        (None, "openai"): {},
        ("high", "openai"): {"reasoning_effort": "high"},
        (False, "vllm"): {"chat_template_kwargs": {"enable_thinking": False, "thinking": False}},
        (300, "openai"): {},
    },
    replay={"vllm": "reasoning", "llama.cpp": "reasoning_content"},
    models=b'{"object":"list","data":[{"id":"a"},{"id":"b"}]}',
    model_ids=["a", "b"],
)

WIRE_ROWS: dict[str, Row] = {"chat": CHAT_ROW, "responses": RESPONSES_ROW}


def row_of(name: str) -> Row:
    if name not in WIRE_ROWS:
        pytest.fail(f"wire {name!r} has no row in WIRE_ROWS: add its row")
    return WIRE_ROWS[name]


NAMES = list(WIRES)


def test_every_wire_has_a_row() -> None:
    missing = sorted(set(WIRES) - set(WIRE_ROWS))
    assert not missing, f"add a row to WIRE_ROWS for: {', '.join(missing)}"


def test_wires_are_registered_by_name_chat_first() -> None:
    assert NAMES[:2] == ["chat", "responses"]
    for name, wire in WIRES.items():
        assert isinstance(wire, Wire) and wire.name == name
        assert name in repr(wire)


@pytest.mark.parametrize("name", NAMES)
def test_route_framing_and_model_list_place(name: str) -> None:
    wire, row = WIRES[name], row_of(name)
    assert wire.framing in ("sse", "ndjson")
    assert (wire.route, wire.framing, wire.models_route) == (
        row.route,
        row.framing,
        row.models_route,
    )
    assert wire.route.startswith("/") and wire.models_route.startswith("/")
    assert wire.root("http://h:1/v1") == row.root


@pytest.mark.parametrize("name", NAMES)
def test_headers_with_and_without_a_key(name: str) -> None:
    wire, row = WIRES[name], row_of(name)
    assert wire.headers(KEY) == row.headers
    assert wire.headers("") == row.headers_no_key
    # The key is in exactly one header; without one, nowhere.
    assert sum(KEY in v for v in wire.headers(KEY).values()) == 1
    assert not any("Bearer" in v or KEY in v for v in wire.headers("").values())


@pytest.mark.parametrize("reasoning_field", FIELDS)
@pytest.mark.parametrize("name", NAMES)
def test_body_of_a_conversation_with_every_turn_kind(name: str, reasoning_field: str) -> None:
    wire, row = WIRES[name], row_of(name)
    body = wire.body(conversation(reasoning_field))
    assert body == row.body(reasoning_field)
    text = json.dumps(body)
    for said in ("Be brief.", "Weather in Paris?", "Checking.", "Need the tool.", "Paris: 16 C"):
        assert said in text, said
    assert "sig-opaque-1" not in json.dumps(WIRES["chat"].body(conversation(reasoning_field)))


@pytest.mark.parametrize("name", NAMES)
def test_a_body_is_plain_json_and_does_not_share_the_requests_state(name: str) -> None:
    wire = WIRES[name]
    request = conversation("reasoning_content")
    first = wire.body(request)
    first["model"] = "changed"
    assert json.loads(json.dumps(wire.body(request)))["model"] == "m"


@pytest.mark.parametrize("name", NAMES)
def test_the_loop_owned_fields_cannot_come_from_extra(name: str) -> None:
    request = Request("m", (Turn("user", "hi"),), 8, extra={"model": "other"})
    with pytest.raises(ValueError, match="model"):
        WIRES[name].body(request)


@pytest.mark.parametrize("which", ["minimal", "full"])
@pytest.mark.parametrize("name", NAMES)
def test_parse_a_minimal_and_a_full_reply(name: str, which: str) -> None:
    wire, row = WIRES[name], row_of(name)
    content, said = (
        (row.minimal, row.minimal_said) if which == "minimal" else (row.full, row.full_said)
    )
    got = seen(wire.parse(content))
    for key, value in said.items():
        assert got[key] == value, key


@pytest.mark.parametrize(
    "garbage", [b"", b"not json", b"[]", b'"text"', b"<html>502</html>", b'{"a": ' * 10_000]
)
@pytest.mark.parametrize("name", NAMES)
def test_parse_of_what_is_not_a_reply_is_a_reply_error(name: str, garbage: bytes) -> None:
    with pytest.raises(BackendError) as info:
        WIRES[name].parse(garbage)
    assert info.value.kind == "reply"


def _chunks(data: bytes, size: int) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


@pytest.mark.parametrize("size", [1, 7, 1 << 16])
@pytest.mark.parametrize("name", NAMES)
def test_reader_and_read_stream_build_the_reply(name: str, size: int) -> None:
    wire, row = WIRES[name], row_of(name)
    reader = wire.reader()
    events: list[bool] = []
    reply = wire.read_stream(_chunks(row.stream, size), reader, events.append)
    got = seen(reply)
    for key, value in row.stream_said.items():
        assert got[key] == value, key
    assert seen(reader.reply()) == got  # the reader holds the reply read
    assert any(events)  # text arrived, so some event grew the reply
    assert (reader.content, reader.reasoning) == (reply.content, reply.reasoning)


@pytest.mark.parametrize("name", NAMES)
def test_a_stream_cut_short_is_a_protocol_error_that_keeps_what_arrived(name: str) -> None:
    wire, row = WIRES[name], row_of(name)
    reader = wire.reader()
    cut = row.stream[: row.stream.index(b"check.")]
    with pytest.raises(BackendError) as info:
        wire.read_stream(_chunks(cut, 64), reader)
    assert info.value.kind == "protocol"
    assert reader.reply().content == "Let me "


@pytest.mark.parametrize("name", NAMES)
def test_thinking_fields(name: str) -> None:
    wire, row = WIRES[name], row_of(name)
    for (thinking, kind), fields in row.thinking.items():
        assert wire.thinking_fields(thinking, kind) == fields, (thinking, kind)
    for kind in SERVER_KINDS:
        assert wire.thinking_fields(None, kind) == {}
        json.dumps(wire.thinking_fields(False, kind))
        with pytest.raises(ValueError):
            wire.thinking_fields("max", kind)


@pytest.mark.parametrize("name", NAMES)
def test_replay_field(name: str) -> None:
    wire, row = WIRES[name], row_of(name)
    for kind, replay in row.replay.items():
        assert wire.replay_field(kind) == replay, kind
    for kind in SERVER_KINDS:
        assert wire.replay_field(kind) in FIELDS


@pytest.mark.parametrize("name", NAMES)
def test_parse_models(name: str) -> None:
    wire, row = WIRES[name], row_of(name)
    assert [m["id"] for m in wire.parse_models(row.models)] == row.model_ids
    for garbage in (b"", b"<html>", b"[]", b'{"data": 5}', b'{"a":' * 10_000):
        assert wire.parse_models(garbage) == []
