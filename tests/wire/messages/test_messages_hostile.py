"""Bad input over the Messages wire (issue 32): each a clear BackendError or a recorded
stream fault where the reader can go on, the partial reply kept, no secret in any text,
and `message_stop` ending the reply even when the connection stays open.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from rig_nb import BackendError, Client, ResponseTooLargeError, RunRequest, tool
from rig_nb.testing import Response, ScriptedServer, sse_body
from rig_nb.wire import Request, Turn

KEY = "sk-ant-api03-Zq8Xw2Vb7Nm4Kp1Lr6Ty9Ue3Io5Pa0Sd"
SSE = {"content-type": "text/event-stream"}
WAIT_S = 10.0
ASK = Request("m", (Turn("user", "hi"),), 64, stream=True)


def frame(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def sse(events: list[dict[str, Any]]) -> Response:
    return Response(sse_body([frame(e) for e in events], done=False), headers=SSE)


START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 4, "output_tokens": 1},
    },
}


def start(index: int, kind: str, **fields: Any) -> dict[str, Any]:
    block = {"text": {"text": ""}, "thinking": {"thinking": "", "signature": ""}}.get(kind, {})
    return {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": kind, **block, **fields},
    }


def delta(index: int, kind: str, value: str) -> dict[str, Any]:
    key = {"text_delta": "text", "thinking_delta": "thinking"}.get(kind, "partial_json")
    return {"type": "content_block_delta", "index": index, "delta": {"type": kind, key: value}}


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def end(reason: str = "end_turn") -> list[dict[str, Any]]:
    return [
        {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    ]


def read(server: ScriptedServer, response: Response) -> Any:
    server.push(response)
    with Client(server.base_url, KEY, api="messages", max_retries=0) as client:
        reader = client.reader()
        try:
            return client.stream(ASK, reader), reader
        except BackendError as exc:
            return exc, reader


def test_a_delta_for_a_block_never_started_opens_it(server: ScriptedServer) -> None:
    events = [START, delta(0, "text_delta", "Hello"), stop(0), *end()]
    reply, _ = read(server, sse(events))
    assert reply.content == "Hello"
    assert reply.stream_faults == ["text_delta for index 0, never started"]


def test_a_delta_after_its_block_stopped_is_dropped(server: ScriptedServer) -> None:
    events = [START, start(0, "text"), delta(0, "text_delta", "Kept."), stop(0)]
    events += [delta(0, "text_delta", " Late."), *end()]
    reply, _ = read(server, sse(events))
    assert reply.content == "Kept."
    assert reply.stream_faults == ["text_delta after index 0 stopped (dropped)"]


def test_blocks_out_of_order_are_read_by_index(server: ScriptedServer) -> None:
    # Ollama #14825: the text block starts before the thinking block, and they interleave.
    events = [
        START,
        start(1, "text"),
        delta(1, "text_delta", "Answer."),
        start(0, "thinking"),
        delta(0, "thinking_delta", "Reason."),
        stop(1),
        stop(0),
        *end(),
    ]
    reply, _ = read(server, sse(events))
    assert (reply.reasoning, reply.content) == ("Reason.", "Answer.")
    assert reply.stream_faults == [
        "content_block_start for index 1 out of order (after -1)",
        "content_block_start for index 0 out of order (after 1)",
        "content_block_start for index 0 while index 1 is open",
    ]


def test_an_unknown_block_type_is_a_clear_error_keeping_the_partial_reply(
    server: ScriptedServer,
) -> None:
    events = [START, start(0, "text"), delta(0, "text_delta", "Before"), stop(0)]
    events += [start(1, "<script>alert(1)</script>"), *end()]
    error, reader = read(server, sse(events))
    assert isinstance(error, BackendError) and error.kind == "reply"
    assert "content block of unknown type" in error.message
    assert reader.reply().content == "Before"


def test_an_unknown_block_type_in_a_whole_reply_is_a_clear_error(server: ScriptedServer) -> None:
    body = {"type": "message", "content": [{"type": "server_tool_use"}], "stop_reason": "end_turn"}
    server.push(Response(body))
    with Client(server.base_url, api="messages") as client, pytest.raises(BackendError) as raised:
        client.chat(Request("m", (Turn("user", "hi"),), 64))
    assert "unknown type 'server_tool_use'" in raised.value.message


@tool
def ping(n: int) -> str:
    """Ping."""
    return f"pong {n}"


@pytest.mark.parametrize(
    ("pieces", "first"),
    [
        # vLLM PR#34887: the leading `{"` of the arguments dropped.
        (['n": 1}'], 'n": 1}'),
        # A stream cut inside the arguments.
        (['{"n": '], '{"n": '),
    ],
    ids=["vllm-dropped-opening", "never-closed"],
)
def test_arguments_that_never_form_json_are_a_tool_error_fed_back(
    server: ScriptedServer, pieces: list[str], first: str
) -> None:
    events = [START, start(0, "tool_use", id="toolu_1", name="ping", input={})]
    events += [delta(0, "input_json_delta", p) for p in pieces]
    events += [stop(0), *end("tool_use")]
    last = [START, start(0, "text"), delta(0, "text_delta", "Sorry."), stop(0), *end()]
    server.push(sse(events), sse(last))
    with Client(server.base_url, api="messages") as client:
        trace = client.run_trace(RunRequest("m", 64, prompt="ping", tools=(ping,), stream=True))
    call = trace.iterations[0].tool_calls[0]
    assert call.is_error and call.arguments == first and "not valid JSON" in call.result
    result = server.requests[1].json["messages"][-1]["content"][0]
    assert result["tool_use_id"] == "toolu_1" and result["is_error"] is True
    assert trace.outcome == "ok" and trace.iterations[-1].text == "Sorry."


def test_a_start_with_input_then_deltas_reads_the_deltas(server: ScriptedServer) -> None:
    # LiteLLM #25321: content_block_start carries `input: {}`, then the deltas follow.
    events = [START, start(0, "tool_use", id="toolu_1", name="ping", input={})]
    events += [delta(0, "input_json_delta", p) for p in ('{"n"', ": 7}")]
    reply, _ = read(server, sse([*events, stop(0), *end("tool_use")]))
    assert reply.tool_calls[0].arguments == '{"n": 7}'
    assert reply.stream_faults == []


def test_a_tool_use_with_no_deltas_has_empty_arguments_as_an_object(
    server: ScriptedServer,
) -> None:
    events = [START, start(0, "tool_use", id="toolu_1", name="ping", input={}), stop(0)]
    reply, _ = read(server, sse([*events, *end("tool_use")]))
    assert reply.tool_calls[0].arguments == "{}"


def test_an_error_event_mid_stream_is_a_backend_error_without_the_key(
    server: ScriptedServer,
) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": f"bad key {KEY}"}}
    events = [START, start(0, "text"), delta(0, "text_delta", "Partial"), error]
    got, reader = read(server, sse(events))
    assert isinstance(got, BackendError) and got.kind == "reply"
    assert "overloaded_error" in got.message and KEY not in got.message
    assert "[redacted]" in got.message
    assert reader.reply().content == "Partial"


def test_a_key_echoed_in_an_error_body_is_redacted(server: ScriptedServer) -> None:
    body = {"type": "error", "error": {"type": "authentication_error", "message": f"key {KEY}"}}
    server.push(Response(body, 401))
    with Client(server.base_url, KEY, api="messages", max_retries=0) as client:
        trace = client.run_trace(RunRequest("m", 64, prompt="hi"))
    assert trace.exception is not None and trace.exception.status_code == 401
    assert KEY not in json.dumps(trace.to_dict()) and KEY not in str(trace.exception)
    assert "key [redacted]" in trace.exception.message


def test_message_stop_ends_the_reply_with_the_connection_open(server: ScriptedServer) -> None:
    release = threading.Event()

    def body() -> Iterator[bytes]:
        yield from (frame(e) for e in [START, start(0, "text"), delta(0, "text_delta", "Done.")])
        yield from (frame(e) for e in [stop(0), *end()])
        release.wait(WAIT_S)  # the server holds the connection open after message_stop
        yield frame({"type": "ping"})

    try:
        reply, reader = read(server, Response(body(), headers=SSE))
        assert reply.content == "Done." and reader.done
        assert not release.is_set()  # returned while the server still held the stream
    finally:
        release.set()


def test_a_stream_cut_before_message_stop_keeps_what_arrived(server: ScriptedServer) -> None:
    events = [START, start(0, "text"), delta(0, "text_delta", "Half an ans")]
    got, reader = read(server, sse(events))
    assert isinstance(got, BackendError) and got.kind == "protocol"
    assert "without message_stop" in got.message
    assert reader.reply().content == "Half an ans"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_http_200_with_an_html_body_is_a_clear_error(server: ScriptedServer, stream: bool) -> None:
    page = b"<html><body><script>alert(1)</script>Gateway says hi</body></html>"
    server.push(Response(page, headers={"content-type": "text/html"}))
    with Client(server.base_url, api="messages", max_retries=0) as client:
        trace = client.run_trace(RunRequest("m", 64, prompt="hi", stream=stream))
    assert isinstance(trace.exception, BackendError)
    assert trace.exception.kind in ("reply", "protocol")
    assert "<script>" not in trace.exception.message


def test_pings_and_unknown_events_are_skipped(server: ScriptedServer) -> None:
    events = [START, {"type": "ping"}, {"type": "future_event", "x": 1}, start(0, "text")]
    events += [delta(0, "text_delta", "Hi."), stop(0), *end()]
    reply, _ = read(server, sse(events))
    assert reply.content == "Hi." and reply.stream_faults == []


def test_deeply_nested_input_is_a_clear_error_not_a_crash(server: ScriptedServer) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    events = [START, start(0, "tool_use", id="toolu_1", name="ping", input={})]
    events += [delta(0, "input_json_delta", deep), stop(0), *end("tool_use")]
    last = [START, start(0, "text"), delta(0, "text_delta", "Ok."), stop(0), *end()]
    server.push(sse(events), sse(last))
    with Client(server.base_url, api="messages", max_response_bytes=1 << 22) as client:
        trace = client.run_trace(RunRequest("m", 64, prompt="ping", tools=(ping,), stream=True))
    assert trace.iterations[0].tool_calls[0].is_error
    assert trace.outcome == "ok"


def test_an_endless_stream_stops_at_the_size_cap_keeping_what_arrived(
    server: ScriptedServer,
) -> None:
    def body() -> Iterator[bytes]:
        yield from (frame(e) for e in [START, start(0, "text")])
        while True:  # never message_stop
            yield frame(delta(0, "text_delta", "more "))

    server.push(Response(body(), headers=SSE))
    with Client(server.base_url, api="messages", max_response_bytes=1 << 16) as client:
        reader = client.reader()
        with pytest.raises(ResponseTooLargeError):
            client.stream(ASK, reader)
    assert reader.content.startswith("more more ")


def test_a_stalled_stream_stops_at_the_deadline_keeping_what_arrived(
    server: ScriptedServer,
) -> None:
    release = threading.Event()

    def body() -> Iterator[bytes]:
        yield from (frame(e) for e in [START, start(0, "text"), delta(0, "text_delta", "Wait")])
        release.wait(WAIT_S)  # the server stops sending, the connection open
        yield frame(stop(0))

    server.push(Response(body(), headers=SSE))
    try:
        with Client(server.base_url, api="messages", deadline=0.5, max_retries=0) as client:
            reader = client.reader()
            with pytest.raises(BackendError) as raised:
                client.stream(ASK, reader)
        assert raised.value.kind == "deadline"
        assert reader.content == "Wait"
    finally:
        release.set()


def test_an_event_that_is_not_json_is_a_protocol_error(server: ScriptedServer) -> None:
    chunks = [frame(START), b"event: content_block_start\ndata: {not json\n\n"]
    got, _ = read(server, Response(sse_body(chunks, done=False), headers=SSE))
    assert isinstance(got, BackendError) and got.kind == "protocol"
    assert "not valid JSON" in got.message


def test_a_start_after_its_deltas_still_names_the_call(server: ScriptedServer) -> None:
    events = [START, delta(0, "input_json_delta", '{"n": 2}')]
    events += [start(0, "tool_use", id="toolu_7", name="ping", input={}), stop(0)]
    reply, _ = read(server, sse([*events, *end("tool_use")]))
    call = reply.tool_calls[0]
    assert (call.id, call.name, call.arguments) == (
        "toolu_7",
        "ping",
        '{"n": 2}',
    )
    assert reply.stream_faults == [
        "input_json_delta for index 0, never started",
        "content_block_start for index 0 after its deltas",
    ]
