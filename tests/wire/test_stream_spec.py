"""Chat streams read as their specifications say (issue 35).

SSE line ends (LF, CRLF, a lone CR, split anywhere), surrogate pairs split
across deltas, the terminal event ending a reply while the server holds the
connection open, and the faults a chat stream's grammar does not allow.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from loopback import SocketServer

from rig_nb import Client, RunRequest
from rig_nb.errors import BackendError
from rig_nb.testing import Response, ScriptedServer, chat_reply, sse_body, tool_call
from rig_nb.wire import StreamAssembler, iter_events, read_stream, stream_chunks

GRIN = "\U0001f600"  # JSON escapes it as the pair \ud83d\ude00
HIGH, LOW = "\\ud83d", "\\ude00"  # the halves as JSON text


def sse(text: str, end: str) -> bytes:
    """`text` written with LF line ends, sent with `end` instead."""
    return text.replace("\n", end).encode()


STREAM = ': ping\ndata: {"a": 1}\ndata: two\n\nevent: x\nid: 7\ndata: \u00e9\u20ac\n\n'
EXPECTED = ['{"a": 1}\ntwo', "\u00e9\u20ac"]


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_every_line_end_at_every_split_reads_the_same_events(end: str) -> None:
    data = sse(STREAM, end)
    for i in range(len(data) + 1):
        for j in range(i, len(data) + 1):
            assert list(iter_events([data[:i], data[i:j], data[j:]])) == EXPECTED, (i, j)


def test_line_ends_mixed_in_one_stream() -> None:
    data = b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r: x\r\n\ndata: e\n\r"
    assert list(iter_events([data])) == ["a\nb\nc", "d", "e"]
    assert list(iter_events([bytes([b]) for b in data])) == ["a\nb\nc", "d", "e"]


def test_an_lf_after_a_cr_in_the_next_chunk_ends_no_line() -> None:
    # Were the LF a line of its own, it would be a blank line ending the event after "a".
    chunks = [b"data: a\r", b"\n", b"data: b\r", b"\n\r", b"\n"]
    assert list(iter_events(chunks)) == ["a\nb"]


def test_a_cr_ends_its_event_without_waiting_for_another_byte() -> None:
    def chunks() -> Iterator[bytes]:
        yield b"data: first\r"
        yield b"\r"
        raise AssertionError("read past the event's blank line")

    events = iter_events(chunks())
    assert next(events) == "first"


def test_hostile_line_ends_are_bounded() -> None:
    assert list(iter_events([b"\r" * 1_000_000])) == []
    assert list(iter_events([b"\r\n" * 300_000, b"data: x\r\r"])) == ["x"]
    line = b"data: " + b"y" * 200_000 + b"\r\r"
    assert list(iter_events(line[i : i + 1] for i in range(len(line)))) == ["y" * 200_000]
    with pytest.raises(BackendError) as info:
        list(iter_events([b"data: \xff\r\r"]))
    assert info.value.kind == "protocol"


def events_bytes(events: list[str], end: str = "\n") -> bytes:
    return "".join(f"data: {e}{end}{end}" for e in events).encode()


def chunk(delta: str, finish: str = "null", usage: str = "") -> str:
    extra = f', "usage": {usage}' if usage else ""
    return f'{{"choices": [{{"index": 0, "delta": {delta}, "finish_reason": {finish}}}]{extra}}}'


def call_fragment(index: int, args: str, head: str = "") -> str:
    return f'{{"tool_calls": [{{"index": {index}, {head}"function": {{"arguments": "{args}"}}}}]}}'


def test_a_surrogate_pair_split_across_deltas_is_one_character() -> None:
    events = [
        chunk(f'{{"reasoning_content": "think {HIGH}"}}'),
        chunk(f'{{"reasoning_content": "{LOW} done"}}'),
        chunk(f'{{"content": "a {HIGH}"}}'),
        chunk(f'{{"content": "{LOW}{HIGH}"}}'),
        chunk(f'{{"content": "{LOW} b"}}'),
        chunk(call_fragment(0, f'{{\\"x\\": \\"{HIGH}', '"id": "c1", "type": "function", ')),
        chunk(call_fragment(0, f'{LOW}\\"}}')),
        chunk("{}", '"tool_calls"'),
        "[DONE]",
    ]
    reply = read_stream([events_bytes(events)], StreamAssembler())
    assert reply.reasoning == f"think {GRIN} done"
    assert reply.content == f"a {GRIN}{GRIN} b"
    assert json.loads(reply.tool_calls[0].arguments) == {"x": GRIN}
    assert reply.stream_faults == []


def lone_surrogates(text: str) -> bool:
    return any("\ud800" <= c <= "\udfff" for c in text)


def test_the_live_text_never_shows_a_lone_half() -> None:
    a = StreamAssembler()
    a.feed(json.loads(chunk(f'{{"content": "x{HIGH}"}}')))
    assert a.content == "x" and not lone_surrogates(a.content)
    assert a.reply().content == "x\ufffd"  # the reply so far: the half alone, as it stands
    a.feed(json.loads(chunk(f'{{"content": "{LOW}"}}')))
    assert a.content == f"x{GRIN}"


@pytest.mark.parametrize(
    "pieces, expected",
    [
        pytest.param([f"a{HIGH}"], "a\ufffd", id="high-half-at-the-end"),
        pytest.param([f"a{HIGH}", "b"], "a\ufffdb", id="high-half-then-text"),
        pytest.param([HIGH, HIGH, LOW], f"\ufffd{GRIN}", id="two-highs-then-a-low"),
        pytest.param([f"{LOW}a"], "\ufffda", id="low-half-first"),
        pytest.param(["a", f"{LOW}{LOW}"], "a\ufffd\ufffd", id="two-lows"),
    ],
)
def test_a_half_left_alone_is_a_replacement_character(pieces: list[str], expected: str) -> None:
    events = [chunk(f'{{"content": "{p}"}}') for p in pieces] + [chunk("{}", '"stop"')]
    a = StreamAssembler()
    reply = read_stream([events_bytes(events)], a)
    assert reply.content == expected
    assert not lone_surrogates(a.content)


def test_lone_halves_in_a_tool_name_and_id_are_replacement_characters() -> None:
    head = f'"id": "id{LOW}", "type": "function", '
    fragment = f'{{"tool_calls": [{{"index": 0, {head}"function": {{"name": "f{HIGH}"}}}}]}}'
    reply = read_stream([events_bytes([chunk(fragment), "[DONE]"])], StreamAssembler())
    assert reply.tool_calls[0].id == "id\ufffd"
    assert reply.tool_calls[0].name == "f\ufffd"


class HoldOpen(SocketServer):
    """Answers with `body` as an event stream, then holds the connection until `release`."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.release = threading.Event()
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        conn.recv(65536)
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        conn.sendall(head + self.body)
        self.release.wait(timeout=120)


ANSWER = [chunk('{"role": "assistant", "content": "the answer"}'), chunk("{}", '"stop"')]
USAGE = '{"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}'


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(events_bytes([*ANSWER, "[DONE]"]), id="done"),
        pytest.param(events_bytes([*ANSWER, "[DONE]"], "\r"), id="done-cr"),
        pytest.param(
            events_bytes([*ANSWER, f'{{"choices": [], "usage": {USAGE}}}'], "\r"),
            id="finish-then-usage-cr",
        ),
        pytest.param(
            events_bytes([ANSWER[0], chunk("{}", '"stop"', USAGE)]), id="finish-with-usage"
        ),
    ],
)
def test_the_terminal_event_ends_the_reply_while_the_server_holds_on(body: bytes) -> None:
    with HoldOpen(body) as srv:
        try:
            # A deadline far beyond the test: only the terminal event can end the run in time.
            with Client(f"http://127.0.0.1:{srv.port}/v1", timeout=300, deadline=300) as c:
                result = c.run(RunRequest("m", 16, prompt="hi", stream=True))
            assert result.text == "the answer"
            assert result.trace.outcome == "ok"
            assert not srv.release.is_set()  # the server still held the connection open
        finally:
            srv.release.set()


def test_nothing_after_done_is_read() -> None:
    body = events_bytes([*ANSWER, "[DONE]"]) + b"data: {not json\n\ndata: more"
    reply = read_stream([body], StreamAssembler())
    assert (reply.content, reply.stream_faults) == ("the answer", [])


def fed(events: list[dict[str, Any]]) -> StreamAssembler:
    a = StreamAssembler()
    for event in events:
        a.feed(event)
    return a


def delta(d: dict[str, Any], finish: str | None = None, index: int = 0) -> dict[str, Any]:
    return {"choices": [{"index": index, "delta": d, "finish_reason": finish}]}


def frag(index: int | None, args: str, **head: Any) -> dict[str, Any]:
    f: dict[str, Any] = {**head, "function": {"arguments": args}}
    if index is not None:
        f["index"] = index
    return delta({"tool_calls": [f]})


FAULTS = [
    pytest.param(
        [frag(0, "{}", id="a"), frag(2, "{}", id="c"), frag(1, "{}", id="b")],
        ["tool call index 2 before index 1"],
        ["a", "b", "c"],
        id="index-out-of-order",
    ),
    pytest.param(
        [frag(None, '{"x":', id="a"), frag(None, "1}"), frag(None, "{}", id="b")],
        ["a tool call fragment without index"],
        ["a", "b"],
        id="no-index",
    ),
    pytest.param(
        [frag(0, '{"x":', id="a"), frag(0, "1}", id="b")],
        ["tool call 0 got a second, different id"],
        ["a"],
        id="second-id-mid-call",
    ),
    pytest.param(
        [frag(0, '{"x": 1}', id="a"), frag(0, '{"y": 2}', id="b"), frag(0, "", id="b")],
        ["tool call index 0 used again for another call"],
        ["a", "b"],
        id="one-index-for-every-call",
    ),
    pytest.param(
        [delta({"content": "a"}), delta({}, "stop"), delta({"content": "b"})],
        ["a delta after the finish_reason"],
        [],
        id="delta-after-finish",
    ),
    pytest.param(
        [delta({"content": "a"}, "stop"), delta({}, "length")],
        ["a second finish_reason 'length' after 'stop'"],
        [],
        id="second-finish",
    ),
    pytest.param(
        [delta({"content": "a"}), delta({"content": "zz"}, index=1), delta({}, "stop")],
        [],
        [],
        id="another-choice-is-no-fault",
    ),
]


@pytest.mark.parametrize("events, faults, ids", FAULTS)
def test_stream_faults(events: list[dict[str, Any]], faults: list[str], ids: list[str]) -> None:
    reply = fed(events).reply()
    assert reply.stream_faults == faults
    assert [c.id for c in reply.tool_calls] == ids


def test_faults_are_said_once_and_at_most_twenty() -> None:
    events = [frag(None, "x", id=f"c{n}") for n in range(30)]
    assert fed(events).faults == ["a tool call fragment without index"]
    a = StreamAssembler()
    for n in range(30):
        a.fault(f"fault {n}")
    assert a.faults == [f"fault {n}" for n in range(20)]


def test_a_conforming_stream_has_no_faults() -> None:
    calls = [tool_call("f", {"a": 1}, id="c1"), tool_call("g", {"b": GRIN}, id="c2")]
    body = chat_reply("text " * 20, tool_calls=calls, reasoning_content="why " * 10)
    assert fed(stream_chunks(body, piece_chars=3)).faults == []


def test_faults_reach_the_trace(server: ScriptedServer) -> None:
    events: list[Any] = [
        delta({"role": "assistant", "content": "fine"}),
        delta({}, "stop"),
        delta({"content": " late"}),
    ]
    server.push(Response(sse_body(events), headers={"content-type": "text/event-stream"}))
    with Client(server.base_url) as c:
        result = c.run(RunRequest("m", 16, prompt="hi", stream=True))
    assert result.text == "fine late"
    assert result.trace.iterations[0].stream_faults == ["a delta after the finish_reason"]


def test_hostile_tool_call_fragments_stay_linear() -> None:
    # Quadratic work in either stream would take minutes, not the moment these take.
    many = fed([frag(n, "{}", id=f"c{n}") for n in range(20_000)])
    assert len(many.reply().tool_calls) == 20_000 and many.faults == []
    piece = '"' + "x" * 48 + '",'
    churn = [frag(0, "[" if n == 0 else piece, id=f"id{n % 2}") for n in range(20_000)]
    reply = fed(churn).reply()
    assert len(reply.tool_calls) == 1
    assert len(reply.tool_calls[0].arguments) == 1 + len(piece) * 19_999
    assert reply.stream_faults == ["tool call 0 got a second, different id"]
