"""The doctor over the Messages wire (issue 32): `api_parity` on a server without
/v1/messages, and `stream_grammar` naming the faults of a Messages stream."""

from __future__ import annotations

from typing import Any

from rig_nb import Client
from rig_nb.capabilities import endpoint_report
from rig_nb.demo import DemoServer
from rig_nb.testing import (
    RecordedRequest,
    Response,
    ScriptedServer,
    as_message,
    chat_reply,
    sse_body,
    tool_call,
    wants_stream,
)
from rig_nb.wire.messages.serve import message_events, sse_event

MODELS = {"object": "list", "data": [{"id": "m", "object": "model"}]}
CALL = chat_reply(None, tool_calls=[tool_call("ping", {"message": "hello"}, id="toolu_1")])


def test_a_server_without_messages_is_messages_unsupported_with_what_to_do() -> None:
    def serve(request: RecordedRequest) -> Any:
        if request.method == "GET":
            return MODELS
        if request.path.endswith("/messages"):
            return Response({"error": {"message": "File Not Found"}}, 404)
        return CALL if '"tools"' in request.body.decode() else chat_reply("Paris.")

    with ScriptedServer([serve] * 40) as server, Client(server.base_url, max_retries=0) as client:
        report = endpoint_report(client, "m", stream=False)
    check = report.check("api_parity")
    assert check.verdict == "same; messages unsupported (404)"
    assert "/v1/messages" in check.advice and "Anthropic" in check.advice


def test_the_demo_is_the_same_over_every_wire(demo: DemoServer) -> None:
    with Client(demo.base_url, api="messages") as client:
        report = endpoint_report(client, "well-behaved", stream=False)
    check = report.check("api_parity")
    assert check.verdict == "same" and check.advice == ""
    assert "over messages and chat and responses" in check.evidence


def _interleaved(body: dict[str, Any]) -> Response:
    """Two tool_use blocks streamed as llama-server streams them: the second starts before
    the first stops (tests/real/FINDINGS.md, "The Anthropic Messages wire")."""
    events = message_events(body)
    starts = [e for e in events if e["type"] == "content_block_start"]
    stops = [e for e in events if e["type"] == "content_block_stop"]
    rest = [e for e in events if e not in starts and e not in stops]
    head, blocks, tail = rest[:1], rest[1:-2], rest[-2:]
    ordered = head + starts + blocks + stops + tail
    return Response(sse_body([sse_event(e) for e in ordered], done=False))


def test_stream_grammar_names_a_messages_stream_fault() -> None:
    two = chat_reply(
        None,
        tool_calls=[
            tool_call("ping", {"message": "a"}, id="toolu_1"),
            tool_call("ping", {"message": "b"}, id="toolu_2"),
        ],
    )

    def serve(request: RecordedRequest) -> Any:
        if request.method == "GET":
            return MODELS
        if not request.path.endswith("/messages"):
            return two if '"tools"' in request.body.decode() else chat_reply("Paris.")
        if wants_stream(request) and '"tools"' in request.body.decode():
            return _interleaved(two)
        reply = two if '"tools"' in request.body.decode() else chat_reply("Paris.")
        return as_message(reply, stream=wants_stream(request))

    with ScriptedServer([serve] * 40) as server, Client(server.base_url, api="messages") as client:
        report = endpoint_report(client, "m")
    check = report.check("stream_grammar")
    assert check.verdict.startswith("faults: ")
    assert "content_block_start for index 1 while index 0 is open" in check.verdict
    assert report.check("stream_parity").verdict == "same"  # forgiven: the same calls
