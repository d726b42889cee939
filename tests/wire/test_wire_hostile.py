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
