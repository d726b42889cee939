"""RecordingProxy in front of a scripted server, and the tool_choice matrix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rig_nb import BackendError, Client, NoToolCallingError
from rig_nb.capabilities import tool_choice_matrix
from rig_nb.testing import RecordedRequest, RecordingProxy, Reply, ScriptedServer, chat_reply
from rig_nb.testing import tool_call as make_call

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
    assert content == "served by  at "


def test_proxy_appends_error_replies_and_keeps_their_status(tmp_path: Path) -> None:
    out = tmp_path / "session.jsonl"
    out.write_text('{"request": {}, "response": {}}\n')  # an earlier session stays
    error = Reply({"error": {"message": "tool_choice required is not supported"}}, status=500)
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


def _llama_like(request: RecordedRequest) -> Reply | dict[str, Any]:
    """What llama.cpp's chatml-function-calling server does with each tool_choice."""
    choice = request.json.get("tool_choice")
    if choice == "required":
        return Reply({"error": {"message": "Internal Server Error"}}, status=500)
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
        Reply(b"not json at all", headers={"content-type": "application/json"}),
        Reply({"error": {"message": "bad request"}}, status=400),
    )
    with Client(server.base_url, max_retries=0) as client:
        matrix = tool_choice_matrix(client, "m")
    assert matrix == {"unset": "length", "auto": "error", "required": "error 400"}
