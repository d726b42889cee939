"""rig_nb.wire.WIRES and Wire: every wire held to the same protocol, each to its own shapes.

The generic tests iterate over WIRES, so a wire added later is covered by them as soon as
it is registered; what each wire is expected to send and read lives in WIRE_ROWS, keyed by
name. A wire with no row fails `test_every_wire_has_a_row` (add its row): nothing skips.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from wire_rows import FIELDS, KEY, Row, conversation
from wire_rows import WIRE_ROWS as OPENAI_ROWS
from wire_rows_native import NATIVE_ROWS

from rig_nb import BackendError
from rig_nb.servers import SERVER_KINDS
from rig_nb.wire import WIRES, Reply, Request, Turn, Wire


def seen(reply: Reply) -> dict[str, Any]:
    """What a reply says, in one comparable shape (arguments parsed)."""
    return {
        "content": reply.content,
        "reasoning": reply.reasoning,
        "reasoning_field": reply.reasoning_field,
        "finish_reason": reply.finish_reason,
        "calls": [(c.name, json.loads(c.arguments or "{}")) for c in reply.tool_calls],
        "call_ids": [c.id for c in reply.tool_calls],
        "signature": reply.reasoning_signature,
        "timings": dict(reply.server_timings),
        "usage": dict(reply.usage),
    }


WIRE_ROWS: dict[str, Row] = {**OPENAI_ROWS, **NATIVE_ROWS}


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
    row.body(body, reasoning_field)
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
