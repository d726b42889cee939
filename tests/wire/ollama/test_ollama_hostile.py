"""Bad input on Ollama's native wire: each a clear error (or a recorded stream fault where
the reader can go on), bounded in time and memory, what arrived kept, no secret shown.

A 50 MB line, `{"error": ...}` mid-stream, HTTP 200 with an HTML page, a key echoed in an
error, a line that is not JSON, a stream without its `done` line, and the `done` line
ending the reply while the connection stays open. A line cut at the deadline is in
test_wire_hostile.py, with the other wires.
"""

from __future__ import annotations

import json
import threading
import tracemalloc
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from hostile_servers import KEY, SECRET_PATH, elapsed
from runs import LoopRunner
from wire_rows_native import ndjson, ollama_line

from rig_nb import BackendError, Client, ResponseTooLargeError, RunRequest, Trace
from rig_nb.testing import Response, ScriptedServer
from rig_nb.wire import WIRES
from rig_nb.wire.ndjson import Lines

NDJSON = {"content-type": "application/x-ndjson"}
OLLAMA = WIRES["ollama"]


def _line(content: str) -> bytes:
    return ndjson(ollama_line(content=content))


DONE = json.dumps(
    {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True}
    | {"done_reason": "stop", "prompt_eval_count": 3, "eval_count": 2}
).encode()


def _run(run_loop: LoopRunner, reply: Any, *, stream: bool = True) -> Trace:
    """One run over /api/chat; `reply` is a Response, or a body sent as NDJSON."""
    if not isinstance(reply, Response):
        reply = Response(reply, headers=NDJSON)
    return run_loop.trace(reply, api="ollama", max_tokens=16, stream=stream)


def _huge_line(total: int) -> Iterator[bytes]:
    yield b'{"model": "m", "message": {"role": "assistant", "content": "'
    piece = b"x" * (1 << 20)
    for _ in range(total >> 20):
        yield piece


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_50_mb_line_is_stopped_at_the_cap(server: ScriptedServer, stream: bool) -> None:
    server.push(Response(_huge_line(50 << 20), headers=NDJSON))
    with Client(server.base_url, api="ollama", max_retries=0) as c:
        tracemalloc.start()
        try:
            with pytest.raises(ResponseTooLargeError):
                c.run(RunRequest("m", 16, prompt="hi", stream=stream))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 32 << 20


def test_an_error_line_mid_stream_keeps_the_partial_reply(run_loop: LoopRunner) -> None:
    body = [_line("partial "), _line("answer"), b'{"error": "model runner has crashed"}\n']
    trace = _run(run_loop, iter(body))
    exc = trace.exception
    assert isinstance(exc, BackendError) and exc.kind == "reply"
    assert "error in stream: model runner has crashed" in exc.message
    assert (trace.iterations[0].ending, trace.iterations[0].raw_content) == (
        "error",
        "partial answer",
    )


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_http_200_with_an_html_page_is_a_clear_error(run_loop: LoopRunner, stream: bool) -> None:
    page = b"<!doctype html><html><head><title>Open WebUI</title></head><body></body></html>"
    trace = _run(run_loop, Response(page, headers={"content-type": "text/html"}), stream=stream)
    exc = trace.exception
    assert isinstance(exc, BackendError) and exc.kind == "reply"
    assert "HTML page, not JSON" in exc.message and "Ollama" in exc.message


@pytest.mark.parametrize("where", ["status", "stream"])
def test_a_key_echoed_in_an_error_is_redacted(where: str) -> None:
    quoted = urllib.parse.quote(KEY, safe="")
    said = f"bad key {KEY} {quoted} at {SECRET_PATH.removesuffix('/v1')}/api/chat"
    with ScriptedServer() as srv:
        if where == "status":
            srv.push(Response({"error": said}, 401))
        else:
            srv.push(
                Response(iter([_line("hi"), json.dumps({"error": said}).encode()]), headers=NDJSON)
            )
        with Client(f"{srv.origin}{SECRET_PATH}", KEY, api="ollama", max_retries=0) as c:
            _, exc = elapsed(lambda: c.run(RunRequest("m", 16, prompt="hi", stream=True)))
    shown = str(exc) + repr(exc)
    for secret in (KEY, quoted, "gw-0123456789abcdef", str(srv.port)):
        assert secret not in shown
    assert "[redacted]" in shown
    assert exc.__cause__ is None and exc.__context__ is None
    assert srv.requests[0].path == "/gw-0123456789abcdef/tenant-x/api/chat"
    assert srv.requests[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            [_line("partial answer"), b"not json\n", DONE], "not valid JSON", id="not-json"
        ),
        pytest.param([_line("partial answer")], "without a line with done", id="no-done"),
        pytest.param([_line("partial answer"), b'{"done": tr'], "ended inside a line", id="cut"),
        pytest.param([_line("partial answer"), b"[1, 2]\n"], "not a JSON object", id="not-object"),
    ],
)
def test_broken_streams_are_protocol_errors(
    run_loop: LoopRunner, body: list[bytes], message: str
) -> None:
    trace = _run(run_loop, iter(body))
    exc = trace.exception
    assert isinstance(exc, BackendError) and exc.kind == "protocol"
    assert message in exc.message
    assert trace.iterations[0].raw_content == "partial answer"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            {"error": "model 'x' not found"}, "error in reply: model 'x' not found", id="error"
        ),
        pytest.param({"model": "m", "done": True}, "reply has no message", id="no-message"),
        pytest.param(b"[]", "not a JSON object", id="not-object"),
        pytest.param(b"{truncated", "not valid JSON", id="not-json"),
    ],
)
def test_bad_replies_are_clear_errors(run_loop: LoopRunner, body: Any, message: str) -> None:
    trace = _run(run_loop, body, stream=False)
    exc = trace.exception
    assert isinstance(exc, BackendError) and exc.kind == "reply" and message in exc.message


def test_ndjson_lines_to_stream_false_are_read_and_said(run_loop: LoopRunner) -> None:
    trace = _run(run_loop, _line("streamed ") + _line("anyway") + DONE + b"\n", stream=False)
    it = trace.iterations[0]
    assert (trace.outcome, it.text) == ("ok", "streamed anyway")
    assert it.stream_faults == ["NDJSON lines in reply to stream: false"]
    broken = _run(run_loop, _line("no done line") + _line("at all"), stream=False)
    assert isinstance(broken.exception, BackendError)
    assert "not valid JSON" in broken.exception.message


def test_the_done_line_ends_the_reply_while_the_connection_stays_open(run_loop: LoopRunner) -> None:
    release = threading.Event()

    def held_open() -> Iterator[bytes]:
        yield _line("The answer.")
        yield DONE + b"\n"
        release.wait(30)  # the connection stays open until the client has its reply
        yield _line("never read")

    try:
        trace = _run(run_loop, held_open())
        returned_while_open = not release.is_set()
    finally:
        release.set()
    assert returned_while_open and trace.outcome == "ok"
    it = trace.iterations[0]
    assert (it.text, it.finish_reason, it.usage) == (
        "The answer.",
        "stop",
        {"prompt_tokens": 3, "completion_tokens": 2},
    )
    assert it.stream_faults == []


def test_a_surrogate_pair_split_across_lines_is_one_character(run_loop: LoopRunner) -> None:
    first = b'{"message": {"content": "smile \\ud83d"}, "done": false}\n'
    second = b'{"message": {"content": "\\ude00!"}, "done": false}\n'
    trace = _run(run_loop, iter([first, second, DONE]))
    assert trace.iterations[0].text == "smile \U0001f600!"


# The NDJSON framing itself.


def test_lines_cut_anywhere_across_chunks_are_whole() -> None:
    data = b'{"a": 1}\r\n\n  \n{"b": "x y"}\n{"c": [1, 2]}\n'
    want = [b'{"a": 1}', b'{"b": "x y"}', b'{"c": [1, 2]}']
    for cut in range(len(data) + 1):
        for second in range(cut, len(data) + 1):
            lines = Lines([data[:cut], data[cut:second], data[second:]])
            assert list(lines) == want and not lines.cut


def test_a_line_in_a_hundred_thousand_chunks_is_joined_once() -> None:
    line = b'{"message": {"content": "' + b"y" * 100_000 + b'"}}'
    lines = Lines(line[i : i + 1] for i in range(len(line)))
    assert list(lines) == [line] and lines.cut


def test_read_stream_stops_at_done_without_reading_more() -> None:
    read: list[bytes] = []

    def chunks() -> Iterator[bytes]:
        for chunk in (_line("hi"), DONE + b"\n", _line("after")):
            read.append(chunk)
            yield chunk

    reply = OLLAMA.read_stream(chunks(), OLLAMA.reader())
    assert reply.content == "hi" and len(read) == 2
