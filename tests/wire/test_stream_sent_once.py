"""A streamed request that has received any event is never sent again (DESIGN.md, round 2's
rule, on every wire): a connection that breaks mid-stream is one request, kind `protocol`,
with the partial text kept once in the trace."""

from __future__ import annotations

import socket
import threading

import pytest
from loopback import SocketServer
from wire_rows import sse
from wire_rows_native import named, ndjson, ollama_line

from rig_nb import BackendError, Client, RunRequest
from rig_nb.wire import WIRES

PARTIAL = "Half an ans"

# One event carrying PARTIAL on each wire, framed as that wire frames it.
FIRST_EVENT = {
    "chat": sse({"choices": [{"index": 0, "delta": {"role": "assistant", "content": PARTIAL}}]}),
    "responses": (
        b"event: response.output_text.delta\n"
        + sse(
            {
                "type": "response.output_text.delta",
                "output_index": 0,
                "content_index": 0,
                "item_id": "msg_1",
                "delta": PARTIAL,
            }
        )
    ),
    "messages": named(
        "message_start",
        message={"id": "m1", "type": "message", "role": "assistant", "content": []},
    )
    + named("content_block_start", index=0, content_block={"type": "text", "text": ""})
    + named("content_block_delta", index=0, delta={"type": "text_delta", "text": PARTIAL}),
    "ollama": ndjson(ollama_line(content=PARTIAL)),
}


class BreaksAfterFirstEvent(SocketServer):
    """Answers 200 with a chunked stream, sends one event, then drops the connection."""

    def __init__(self, event: bytes, content_type: str) -> None:
        self.event = event
        self.content_type = content_type
        self.requests = 0
        self._lock = threading.Lock()
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        conn.recv(65536)
        with self._lock:
            self.requests += 1
        head = f"HTTP/1.1 200 OK\r\ncontent-type: {self.content_type}\r\n"
        conn.sendall(head.encode() + b"transfer-encoding: chunked\r\n\r\n")
        conn.sendall(b"%x\r\n" % len(self.event) + self.event + b"\r\n")
        # No terminating chunk: the body ends mid-stream.
        conn.shutdown(socket.SHUT_RDWR)


@pytest.mark.parametrize("api", list(WIRES))
def test_a_stream_broken_after_its_first_event_is_one_request(api: str) -> None:
    framing = "application/x-ndjson" if WIRES[api].framing == "ndjson" else "text/event-stream"
    with BreaksAfterFirstEvent(FIRST_EVENT[api], framing) as srv:
        with Client(f"http://127.0.0.1:{srv.port}/v1", api=api, max_retries=2) as client:
            request = RunRequest("m", 64, prompt="hi", stream=True)
            with pytest.raises(BackendError) as caught:
                client.run(request)
        assert srv.requests == 1
    err = caught.value
    assert err.kind == "protocol"
    it = err.trace.iterations[-1]
    assert it.raw_content == PARTIAL
    assert it.ending == "error"
