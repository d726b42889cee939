"""Hostile replies the wires meet alike: one test a case, run over the wires of `WIRES`,
each sending its own bytes (`DRIPS`)."""

from __future__ import annotations

import json
from typing import NamedTuple

import pytest
from hostile_servers import drip, elapsed

from rig_nb import BackendError, Client, RunRequest, Trace
from rig_nb.testing import Response, ScriptedServer
from rig_nb.wire import WIRES


def _event(kind: str, **fields: object) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


_MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": []}


class Drip(NamedTuple):
    """A streamed reply's first bytes, carrying the text "partial answer", as a wire sends it."""

    head: bytes
    content_type: str
    chunks: int  # how many stream chunks the head is


DRIPS = {
    "chat": Drip(
        b'data: {"choices": [{"delta": {"content": "partial answer"}}]}\n\n',
        "text/event-stream",
        1,
    ),
    "responses": Drip(
        b'data: {"type": "response.output_text.delta", "delta": "partial answer"}\n\n',
        "text/event-stream",
        1,
    ),
    "messages": Drip(
        _event("message_start", message=_MESSAGE)
        + _event("content_block_start", index=0, content_block={"type": "text", "text": ""})
        + _event(
            "content_block_delta", index=0, delta={"type": "text_delta", "text": "partial answer"}
        ),
        "text/event-stream",
        3,  # every event is a chunk
    ),
    # A whole line, then one cut off.
    "ollama": Drip(
        b'{"model": "m", "message": {"role": "assistant", "content": "partial answer"}, '
        b'"done": false}\n{"model": "m", "message": {"content": "cut',
        "application/x-ndjson",
        1,
    ),
}


def test_every_wire_has_its_drip() -> None:
    assert list(DRIPS) == list(WIRES)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", list(DRIPS))
def test_a_drip_under_the_read_timeout_is_stopped_at_the_deadline(
    server: ScriptedServer, api: str, stream: bool
) -> None:
    sent = DRIPS[api]
    head = sent.head if stream else b"{"
    server.push(Response(drip(head, 0.05), headers={"content-type": sent.content_type}))
    trace = Trace()
    with Client(server.base_url, api=api, timeout=5, deadline=1.0, max_retries=0) as c:
        took, exc = elapsed(
            lambda: c.run(RunRequest("m", 16, prompt="hi", stream=stream), trace=trace)
        )
    assert isinstance(exc, BackendError) and exc.kind == "deadline"
    assert exc.message == "ai backend: request exceeded its deadline of 1 s"
    assert took < 3.0  # the drip would last 500 s
    it = trace.iterations[0]
    assert it.ending == "error" and it.error.startswith(
        "BackendError: ai backend: request exceeded"
    )
    if stream:
        assert it.raw_content == "partial answer" and it.chunks == sent.chunks


# Issue 45: an error in a stream is a BackendError with the endpoint's message, whichever
# wire's error shape it has; a `code` that is an HTTP status is that status, kind http, as
# the same refusal before the stream began. Seen on real servers (tests/real): llama-server
# fails a reply its parser cannot read after the stream began, with `data: {"error": {...}}`
# on chat and Responses and `event: error` + `data: {"code", "message", "type"}` on
# Messages; vLLM 0.32 refuses a structured_outputs grammar, streamed, with 200 and then
# `data: {"error": {..., "code": 400}}`.

PEG = "The model produced output that does not match the expected peg-native format"
LLAMA_500 = {"code": 500, "message": PEG, "type": "server_error"}
GRAMMAR = (
    "Invalid grammar specification: Failed to convert the grammar from GBNF to Lark: "
    "Rule 'foo' not found"
)
VLLM_400 = {"message": GRAMMAR, "type": "BadRequestError", "param": None, "code": 400}
TOO_LONG = (
    "This model's maximum context length is 2048 tokens. However, your prompt contains at "
    "least 2049 input tokens, which exceeds this limit even without any output tokens."
)
VLLM_CONTEXT = {"message": TOO_LONG, "type": "BadRequestError", "param": None, "code": 400}


def _head(api: str) -> bytes:
    """The drip's head, complete lines only: the stream began and said "partial answer"."""
    head = DRIPS[api].head
    return head[: head.index(b"\n") + 1] if api == "ollama" else head


def _tails(api: str, error: dict[str, object]) -> dict[str, bytes]:
    """The error after the stream began, in each shape a server of `api` sends it."""
    wrapped = json.dumps({"error": error}).encode()
    if api == "ollama":
        return {"error-line": wrapped + b"\n"}
    tails = {"error-data": b"data: " + wrapped + b"\n\n"}
    if api == "messages":
        tails["named-event"] = b"event: error\ndata: " + json.dumps(error).encode() + b"\n\n"
        anthropic = {"type": "error", "error": error}
        tails["anthropic-event"] = (
            b"event: error\ndata: " + json.dumps(anthropic).encode() + b"\n\n"
        )
    if api == "responses":
        # The Responses API's own error event: its code a string.
        event = {**error, "type": "error", "code": str(error["code"])}
        tails["error-event"] = b"data: " + json.dumps(event).encode() + b"\n\n"
    return tails


CASES = [
    pytest.param(api, error, shape, id=f"{api}-{name}-{shape}")
    for api in DRIPS
    for name, error in (("llama-500", LLAMA_500), ("vllm-400", VLLM_400))
    for shape in _tails(api, error)
]


@pytest.mark.parametrize(("api", "error", "shape"), CASES)
def test_an_error_in_a_stream_is_the_endpoints_error_with_its_status(
    server: ScriptedServer, api: str, error: dict[str, object], shape: str
) -> None:
    body = [_head(api), _tails(api, error)[shape]]
    server.push(Response(iter(body), headers={"content-type": DRIPS[api].content_type}))
    with Client(server.base_url, api=api, max_retries=2) as client:
        trace = client.run_trace(RunRequest("m", 16, prompt="hi", stream=True))
    exc = trace.exception
    assert isinstance(exc, BackendError), trace.error
    assert (exc.kind, exc.status_code) == ("http", error["code"])
    assert exc.message == f"ai backend: HTTP {error['code']}: {error['message']}"
    [it] = trace.iterations
    assert it.raw_content == "partial answer" and it.ending == "error"
    assert len(server.requests) == 1  # a stream that began is never sent again
    # An error event is the stream's own ending, not a stream cut short.
    assert not any("ended" in fault for fault in it.stream_faults)


@pytest.mark.parametrize("api", list(DRIPS))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_an_error_with_a_status_inside_a_200_reads_as_it_would_before_it(
    server: ScriptedServer, api: str, stream: bool
) -> None:
    # The same refusal before any byte (HTTP 400) and after a 200: the same BackendError.
    tail = _tails(api, VLLM_400)["error-line" if api == "ollama" else "error-data"]
    body = [_head(api), tail] if stream else [json.dumps({"error": VLLM_400}).encode()]
    server.push(Response({"error": VLLM_400}, status=400))
    server.push(Response(iter(body), headers={"content-type": DRIPS[api].content_type}))
    seen = []
    with Client(server.base_url, api=api, max_retries=0) as client:
        for _ in range(2):
            trace = client.run_trace(RunRequest("m", 16, prompt="hi", stream=stream))
            exc = trace.exception
            assert isinstance(exc, BackendError)
            seen.append((exc.kind, exc.status_code, exc.message))
    assert seen[0] == seen[1] == ("http", 400, f"ai backend: HTTP 400: {GRAMMAR}")


@pytest.mark.parametrize("api", list(DRIPS))
def test_a_context_error_in_a_stream_is_kind_context_with_its_numbers(
    server: ScriptedServer, api: str
) -> None:
    tail = _tails(api, VLLM_CONTEXT)["error-line" if api == "ollama" else "error-data"]
    server.push(
        Response(iter([_head(api), tail]), headers={"content-type": DRIPS[api].content_type})
    )
    with Client(server.base_url, api=api, max_retries=0) as client:
        exc = client.run_trace(RunRequest("m", 16, prompt="hi", stream=True)).exception
    assert isinstance(exc, BackendError)
    assert (exc.kind, exc.status_code) == ("context", 400)
    assert (exc.context_window, exc.prompt_tokens) == (2048, 2049)


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_an_event_named_error_is_an_error_whatever_its_data(
    server: ScriptedServer, api: str
) -> None:
    tail = b"event: error\ndata: the engine died\n\n"
    server.push(Response(iter([_head(api), tail]), headers={"content-type": "text/event-stream"}))
    with Client(server.base_url, api=api, max_retries=0) as client:
        trace = client.run_trace(RunRequest("m", 16, prompt="hi", stream=True))
    exc = trace.exception
    assert isinstance(exc, BackendError) and exc.kind == "reply"
    assert exc.message == "ai backend: error in stream: the engine died"
    assert trace.iterations[0].raw_content == "partial answer"
