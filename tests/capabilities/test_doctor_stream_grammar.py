"""The doctor's stream_grammar check, judged on the streamed requests it already sends."""

from __future__ import annotations

import json
from typing import Any

import pytest
from doctor_fakes import FakeServer, report_of

from rig_nb import Client, Trace
from rig_nb.capabilities import CHECKS, describe_report, endpoint_report
from rig_nb.capabilities.advice import advice
from rig_nb.testing import (
    RecordedRequest,
    Response,
    ScriptedServer,
    chat_reply,
    sse_body,
    tool_call,
    wants_stream,
)
from rig_nb.wire import stream_chunks


class NoIndexServer(FakeServer):
    """Streams its tool calls without `index` in the fragments, as Ollama before 0.4.7 did."""

    def __call__(self, request: RecordedRequest) -> Response | dict[str, Any]:
        out = super().__call__(request)
        if not (wants_stream(request) and request.json.get("tools")):
            return out
        events = stream_chunks(chat_reply(None, tool_calls=[tool_call("ping", {"message": "hi"})]))
        for event in events:
            for choice in event.get("choices") or []:
                for fragment in choice["delta"].get("tool_calls") or []:
                    del fragment["index"]
        return Response(sse_body(events), headers={"content-type": "text/event-stream"})


def test_a_fault_the_reader_forgave_is_named_with_its_fix() -> None:
    report, _ = report_of(NoIndexServer(owned_by="library"))
    check = report.check("stream_grammar")
    assert check.verdict == "faults: a tool call fragment without index"
    assert check.evidence == "1 of 2 streamed replies had faults"
    assert "ollama/ollama#7881" in check.advice and "upgrade Ollama" in check.advice
    assert check.trace is not None
    assert check.trace.iterations[0].stream_faults == ["a tool call fragment without index"]
    assert report.check("stream_parity").verdict == "same"  # forgiven: the same calls
    assert "stream_grammar             faults: a tool call fragment without index" in (
        describe_report(report)
    )


def test_a_conforming_stream_says_so() -> None:
    # Every check but agent_clients, whose clients stream runs of their own.
    report, requests = report_of(FakeServer(), checks=[c for c in CHECKS if c != "agent_clients"])
    check = report.check("stream_grammar")
    assert (check.verdict, check.evidence, check.advice) == (
        "conforms",
        "no fault in any of 2 streamed replies",
        "",
    )
    names = [c.name for c in report.checks]
    assert names.index("stream_grammar") == names.index("stream_parity") + 1
    streamed = [r for r in requests if r.method == "POST" and wants_stream(r)]
    assert len(streamed) == 2  # no request of its own


def test_nothing_streamed_is_not_applicable() -> None:
    report, _ = report_of(FakeServer(), stream=False)
    check = report.check("stream_grammar")
    assert (check.verdict, check.advice) == ("n/a", "")


def test_advice_only_for_faults() -> None:
    assert "upgrade it" in advice("", "stream_grammar", "faults: x", auto="tool call")
    assert "upgrade LiteLLM" in advice("litellm", "stream_grammar", "faults: x", auto="")
    for verdict in ("conforms", "n/a", "error 500"):
        assert advice("vllm", "stream_grammar", verdict, auto="tool call") == ""


# Issue 45: a stream that never sent its terminal event does not conform, on any wire; and
# what a verdict quotes from a stream is redacted as evidence is.

# A key as long as Anthropic's: a fault line cut at 40 characters kept a piece of it.
LONG_KEY = "sk-ant-api03-" + "Zq8Xw2Vb7Nm4Kp1Lr6Ty9Ue3Io5Pa0Sd" * 3


def _streamed(request: RecordedRequest, events: list[Any], api: str) -> Response:
    if api == "ollama":
        from rig_nb.wire.ollama.serve import ndjson_body

        return Response(ndjson_body(events), headers={"content-type": "application/x-ndjson"})
    framed = [
        f"event: {e.get('type')}\ndata: {json.dumps(e)}\n\n".encode()
        if api in ("messages", "responses")
        else e
        for e in events
    ]
    return Response(sse_body(framed, done=False), headers={"content-type": "text/event-stream"})


def _events(api: str, reply: dict[str, Any]) -> list[Any]:
    """`reply` as `api`'s events, the terminal event included (chat: up to [DONE])."""
    from rig_nb.wire.messages.serve import message_events
    from rig_nb.wire.ollama.serve import ollama_lines
    from rig_nb.wire.responses.serve import response_events

    if api == "messages":
        return list(message_events(reply))
    if api == "responses":
        return list(response_events(reply))
    if api == "ollama":
        return list(ollama_lines(reply))
    return [*stream_chunks(reply), "[DONE]"]


class Unfinished:
    """Answers every wire; a streamed reply is cut before its terminal event, the connection
    then closed cleanly (`drop`: how many of the last events are left out)."""

    def __init__(self, api: str, drop: int) -> None:
        self.api, self.drop = api, drop

    def __call__(self, request: RecordedRequest) -> Response | dict[str, Any]:
        if request.method == "GET":
            return {"data": [{"id": "m", "owned_by": "someone"}]}
        body = request.json
        if body.get("tools"):
            reply = chat_reply(None, tool_calls=[tool_call("ping", {"message": "hi"})])
        else:
            reply = chat_reply("17 * 23 = 391.", usage={"prompt_tokens": 9, "completion_tokens": 5})
        if not wants_stream(request):
            return _whole(reply, request)
        events = _events(self.api, reply)
        return _streamed(request, events[: len(events) - self.drop], self.api)


def _whole(reply: dict[str, Any], request: RecordedRequest) -> Response | dict[str, Any]:
    """A chat reply as the whole reply of the wire the request's route names."""
    from rig_nb.testing import as_message, as_response
    from rig_nb.wire.ollama.serve import ollama_reply

    path = request.path.split("?")[0].rstrip("/")
    if path.endswith("/responses"):
        return as_response(reply)
    if path.endswith("/messages"):
        return as_message(reply)
    if path.endswith("/api/chat"):
        return ollama_reply(reply)
    return reply


def _doctor(handler: Any, api: str, key: str = "") -> Any:
    with (
        ScriptedServer([handler] * 20) as server,
        Client(server.base_url, key, api=api, max_retries=0) as client,
    ):
        return endpoint_report(client, "m", checks=["stream_grammar", "api_parity"])


TERMINAL = {
    "chat": "[DONE]",
    "responses": "response.completed",
    "messages": "message_stop",
    "ollama": "a line with done: true",
}


@pytest.mark.parametrize("api", list(TERMINAL))
def test_a_stream_without_its_terminal_event_does_not_conform(api: str) -> None:
    # Chat's stream ends at [DONE], or at the usage chunk after the finish_reason (rig_nb
    # reads nothing after it): both are left out, the finish_reason is the last event.
    drop = 2 if api == "chat" else 1
    check = _doctor(Unfinished(api, drop=drop), api).check("stream_grammar")
    assert check.verdict.startswith("faults: ") and check.ok is False
    assert f"the stream ended without {TERMINAL[api]}" in check.verdict
    assert check.evidence == "2 of 2 streamed replies had faults"


@pytest.mark.parametrize("api", list(TERMINAL))
def test_a_complete_stream_on_every_wire_conforms(api: str) -> None:
    check = _doctor(Unfinished(api, drop=0), api).check("stream_grammar")
    assert (check.verdict, check.ok) == ("conforms", True)


def test_a_chat_stream_cut_before_its_finish_does_not_conform() -> None:
    # Cut before the finish_reason too: the request fails, and the fault is named.
    check = _doctor(Unfinished("chat", drop=3), "chat").check("stream_grammar")
    assert "the stream ended without a finish_reason or [DONE]" in check.verdict


def test_streams_that_failed_unjudged_are_not_called_conforming() -> None:
    from rig_nb.capabilities.stream_grammar import stream_grammar
    from rig_nb.trace import Iteration

    broken = Iteration(
        streamed=True,
        chunks=4,
        ending="error",
        error="BackendError: ai backend: request timed out waiting for data",
    )
    verdict, evidence, _ = stream_grammar([Trace(iterations=[broken], outcome="BackendError")])
    assert verdict == "n/a" and "1 streamed reply ended before its terminal event" in evidence


class KeyNamed:
    """Streams with the key where a stream quotes a name: a second finish_reason (chat), a
    delta's type (Messages), a stop_reason (Messages, whole too)."""

    def __init__(self, api: str) -> None:
        self.api = api

    def __call__(self, request: RecordedRequest) -> Response | dict[str, Any]:
        if request.method == "GET":
            return {"data": [{"id": "m", "owned_by": "someone"}]}
        path = request.path.split("?")[0].rstrip("/")
        reply = chat_reply("17 * 23 = 391.", usage={"prompt_tokens": 9, "completion_tokens": 5})
        if path.endswith("/messages"):
            from rig_nb.wire.messages.serve import message_events, message_object

            if not wants_stream(request):
                return {**message_object(reply), "stop_reason": LONG_KEY}
            events = message_events(reply)
            odd = {"type": "content_block_delta", "index": 0, "delta": {"type": LONG_KEY}}
            events.insert(2, odd)
            events[-2]["delta"]["stop_reason"] = LONG_KEY
            return _streamed(request, events, "messages")
        if path.endswith("/chat/completions") and wants_stream(request):
            events = stream_chunks(reply)
            finish = {"index": 0, "delta": {}, "finish_reason": LONG_KEY}
            again = {**events[-1], "choices": [finish]}
            return _streamed(request, [*events[:-1], again, events[-1], "[DONE]"], "chat")
        return _whole(reply, request)


@pytest.mark.parametrize("api", ["chat", "messages"])
def test_a_key_quoted_from_a_stream_is_redacted_in_every_verdict(api: str) -> None:
    report = _doctor(KeyNamed(api), api, key=LONG_KEY)
    grammar = report.check("stream_grammar")
    assert grammar.verdict.startswith("faults: ") and "[redacted]" in grammar.verdict
    for check in report.checks:
        for text in (check.verdict, check.evidence):
            assert LONG_KEY[:16] not in text, (check.name, text)
        for it in check.trace.iterations if check.trace else []:
            assert not any(LONG_KEY[:16] in f for f in it.stream_faults)
    parity = report.check("api_parity")
    assert "[redacted]" in parity.verdict  # the Messages stop_reason, quoted
