"""RecordingProxy in front of a scripted server (bodies and streams), and the tool_choice matrix."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rig_nb import BackendError, Client, NoToolCallingError, RunRequest
from rig_nb.capabilities import tool_choice_matrix
from rig_nb.demo.recording import RecordingProxy
from rig_nb.testing import RecordedRequest, Response, ScriptedServer, chat_reply, sse_body, streamed
from rig_nb.testing import tool_call as make_call
from rig_nb.wire import stream_chunks

KEY = "sk-recording-secret-123"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_proxy_forwards_and_records_without_key_or_host(tmp_path: Path) -> None:
    out = tmp_path / "session.jsonl"
    reply = chat_reply(None, tool_calls=[make_call("ping", {"message": "hello"}, id="call_1")])
    with ScriptedServer([reply]) as upstream, RecordingProxy(upstream.base_url, out) as proxy:
        with Client(proxy.base_url, KEY) as client:
            client.probe_tool_calling("m")
        # The key reaches the real server: the proxy is transparent to it.
        assert upstream.requests[0].headers["authorization"] == f"Bearer {KEY}"
        assert upstream.requests[0].path == "/v1/chat/completions"
        text = out.read_text()
        assert KEY not in text
        assert upstream.origin not in text
        assert f"127.0.0.1:{upstream.port}" not in text
        assert f"127.0.0.1:{proxy.port}" not in text
    [record] = _lines(out)
    assert record["request"]["method"] == "POST"
    assert record["request"]["path"] == "chat/completions"
    assert record["request"]["body"]["tool_choice"] == "auto"
    assert record["request"]["body"]["model"] == "m"
    assert "headers" not in record["request"]
    assert record["response"] == {"status": 200, "body": reply}
    assert proxy.exchanges == 1


def test_proxy_scrubs_upstream_address_from_recorded_replies(tmp_path: Path) -> None:
    out = tmp_path / "session.jsonl"

    def echo_address(request: RecordedRequest) -> dict[str, Any]:
        return chat_reply(f"served by {upstream.base_url} at {upstream.origin}")

    with ScriptedServer([echo_address]) as upstream, RecordingProxy(upstream.base_url, out) as p:
        with Client(p.base_url) as client:
            with pytest.raises(NoToolCallingError):
                client.probe_tool_calling("m")
    [record] = _lines(out)
    content = record["response"]["body"]["choices"][0]["message"]["content"]
    assert content == "served by [redacted] at [redacted]"


def test_proxy_appends_error_replies_and_keeps_their_status(tmp_path: Path) -> None:
    out = tmp_path / "session.jsonl"
    out.write_text('{"request": {}, "response": {}}\n')  # an earlier session stays
    error = Response({"error": {"message": "tool_choice required is not supported"}}, status=500)
    with ScriptedServer([error]) as upstream, RecordingProxy(upstream.base_url, out) as proxy:
        with Client(proxy.base_url) as client:
            with pytest.raises(BackendError) as info:
                client.probe_tool_calling("m", tool_choice="required")
    assert info.value.status_code == 500
    first, record = _lines(out)
    assert first == {"request": {}, "response": {}}
    assert record["request"]["body"]["tool_choice"] == "required"
    assert record["response"]["status"] == 500
    assert record["response"]["body"]["error"]["message"].startswith("tool_choice required")


def test_proxy_reports_an_unreachable_upstream_as_502_without_its_address(tmp_path: Path) -> None:
    out = tmp_path / "session.jsonl"
    with ScriptedServer() as gone:
        dead = gone.base_url
    with RecordingProxy(dead, out) as proxy, Client(proxy.base_url, max_retries=0) as client:
        with pytest.raises(BackendError) as info:
            client.probe_tool_calling("m")
    assert info.value.status_code == 502
    [record] = _lines(out)
    assert record["response"]["status"] == 502
    assert dead.split("//")[1].split("/")[0] not in out.read_text()


def test_proxy_refuses_a_non_http_upstream(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        RecordingProxy("ftp://example.org/v1", tmp_path / "x.jsonl")


def _llama_like(request: RecordedRequest) -> Response | dict[str, Any]:
    """What llama.cpp's chatml-function-calling server does with each tool_choice."""
    choice = request.json.get("tool_choice")
    if choice == "required":
        return Response({"error": {"message": "Internal Server Error"}}, status=500)
    if choice == "auto":
        return chat_reply(None, tool_calls=[make_call("ping", {"message": "hello"})])
    return chat_reply("hello")


def test_tool_choice_matrix_names_each_behaviour(server: ScriptedServer) -> None:
    server.push(_llama_like, _llama_like, _llama_like)
    with Client(server.base_url) as client:
        matrix = tool_choice_matrix(client, "m")
    assert matrix == {"unset": "text", "auto": "tool call", "required": "error 500"}
    sent = [r.json for r in server.requests]
    assert [("tool_choice" in b, b.get("tool_choice")) for b in sent] == [
        (False, None),
        (True, "auto"),
        (True, "required"),
    ]


def test_tool_choice_matrix_reports_truncation_and_transport_errors(
    server: ScriptedServer,
) -> None:
    server.push(
        chat_reply("ping pi", finish_reason="length"),
        Response(b"not json at all", headers={"content-type": "application/json"}),
        Response({"error": {"message": "bad request"}}, status=400),
    )
    with Client(server.base_url, max_retries=0) as client:
        matrix = tool_choice_matrix(client, "m")
    assert matrix == {"unset": "length", "auto": "error", "required": "error 400"}


def test_proxy_passes_a_stream_on_and_records_its_events(tmp_path: Path) -> None:
    out = tmp_path / "session.jsonl"

    def echo_address(request: RecordedRequest) -> dict[str, Any]:
        return chat_reply(f"served by {upstream.base_url}, key {KEY}", reasoning="Thinking.")

    with ScriptedServer([echo_address]) as upstream, RecordingProxy(upstream.base_url, out) as p:
        with Client(p.base_url, KEY) as client:
            trace = client.run_trace(RunRequest("m", 64, prompt="hi", stream=True))
        assert upstream.requests[0].json["stream"] is True
    it = trace.iterations[0]
    assert trace.outcome == "ok" and it.streamed
    assert it.text == f"served by {upstream.base_url}, key {KEY}"  # passed on as sent
    [record] = _lines(out)
    assert record["request"]["body"]["stream"] is True
    response = record["response"]
    assert set(response) == {"status", "events"} and response["status"] == 200
    events = response["events"]
    assert events[-1] == "[DONE]"
    assert all(e["object"] == "chat.completion.chunk" for e in events[:-1])
    assert it.chunks == len(events) - 1  # every event passed on, none merged
    content = "".join(
        e["choices"][0]["delta"].get("content") or "" for e in events[:-1] if e["choices"]
    )
    assert content == "served by [redacted], key [redacted]"
    assert events[-2]["usage"]["completion_tokens"] == 5
    text = out.read_text()
    assert KEY not in text and upstream.origin not in text


def test_proxy_records_the_text_not_the_key_nor_the_address(tmp_path: Path) -> None:
    # The upstream itself redacts nothing: what the recording holds is the proxy's doing.
    out = tmp_path / "session.jsonl"
    with ScriptedServer() as upstream:
        gateway = f"{upstream.origin}/gw-t0k3n-123456/v1"
        said = f"host 127.0.0.1 and localhost, path /v1, gateway /gw-t0k3n-123456, {gateway}, {KEY}"
        upstream.push(chat_reply(said))
        with RecordingProxy(gateway, out) as proxy, Client(proxy.base_url, KEY) as client:
            client.run(RunRequest("m", 64, prompt=f"repeat {KEY}"))
        assert upstream.requests[0].path == "/gw-t0k3n-123456/v1/chat/completions"
    [record] = _lines(out)
    assert record["response"]["body"]["choices"][0]["message"]["content"] == (
        "host 127.0.0.1 and localhost, path /v1, gateway [redacted], [redacted], [redacted]"
    )
    assert record["request"]["body"]["messages"][0]["content"] == "repeat [redacted]"


def test_proxy_passes_a_stream_on_as_it_arrives(tmp_path: Path) -> None:
    out = tmp_path / "session.jsonl"

    def slow(request: RecordedRequest) -> Response:
        return streamed(chat_reply("word " * 20), piece_chars=5, interval=0.03)

    with ScriptedServer([slow]) as upstream, RecordingProxy(upstream.base_url, out) as proxy:
        with Client(proxy.base_url) as client:
            it = client.run(RunRequest("m", 64, prompt="hi", stream=True)).trace.iterations[0]
    assert it.chunks > 20
    # Buffered, the first event would arrive with the last one.
    assert it.ttft_s < it.latency_s / 2


def test_closing_the_proxy_waits_for_a_stream_to_be_recorded(tmp_path: Path) -> None:
    # The client reads [DONE] while the upstream has not yet ended its body: the proxy
    # records the stream only once it has, and a file read right after close must hold it.
    out = tmp_path / "session.jsonl"
    closing, release = threading.Event(), threading.Event()
    events = stream_chunks(chat_reply("recorded before close"), piece_chars=6)

    def held_open() -> Iterator[bytes]:
        yield from sse_body(events)
        release.wait(10)

    class Proxy(RecordingProxy):
        def close(self) -> None:
            closing.set()
            super().close()

    reply = Response(held_open(), headers={"content-type": "text/event-stream"})
    releaser = threading.Thread(target=lambda: closing.wait(10) and release.set())
    with ScriptedServer([reply]) as upstream:
        with Proxy(upstream.base_url, out) as proxy, Client(proxy.base_url) as client:
            trace = client.run_trace(RunRequest("m", 64, prompt="hi", stream=True))
            assert not release.is_set()
            releaser.start()
        [record] = _lines(out)
    releaser.join()
    assert trace.outcome == "ok"
    assert record["response"]["events"][-1] == "[DONE]"


def test_a_stream_broken_off_is_recorded_as_it_arrived(tmp_path: Path) -> None:
    out = tmp_path / "session.jsonl"
    events = stream_chunks(chat_reply("a reply that never ends"), piece_chars=4)[:4]
    broken = Response(sse_body(events, done=False), headers={"content-type": "text/event-stream"})
    with ScriptedServer([broken]) as upstream, RecordingProxy(upstream.base_url, out) as proxy:
        with Client(proxy.base_url, max_retries=0) as client:
            with pytest.raises(BackendError) as info:
                client.run(RunRequest("m", 64, prompt="hi", stream=True))
    assert info.value.kind == "protocol"
    assert info.value.trace is not None
    assert info.value.trace.iterations[0].raw_content == "a reply that"
    [record] = _lines(out)
    assert record["response"] == {"status": 200, "events": events}


def test_a_key_split_over_argument_deltas_is_redacted(tmp_path: Path) -> None:
    out = tmp_path / "session.jsonl"
    call = make_call("ping", {"message": f"hello {KEY} bye"}, id="call_1")
    with ScriptedServer([chat_reply(None, tool_calls=[call])]) as upstream:
        with RecordingProxy(upstream.base_url, out) as proxy, Client(proxy.base_url, KEY) as c:
            c.probe_tool_calling("m", stream=True)
    [record] = _lines(out)
    fragments = [
        e["choices"][0]["delta"]["tool_calls"][0]["function"].get("arguments")
        for e in record["response"]["events"][:-1]
        if e["choices"] and e["choices"][0]["delta"].get("tool_calls")
    ]
    pieces = [f for f in fragments if f is not None]
    assert len(pieces) > 2  # the key did arrive split
    assert "".join(pieces) == '{"message": "hello [redacted] bye"}'
    assert KEY[:8] not in out.read_text()
