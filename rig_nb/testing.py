"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, for testing tools and loops.

    with ScriptedServer([chat_reply("hello")]) as server:
        client = Client(server.base_url)
        ...
        server.requests[0].json["messages"]

Replies are served in order, one per request to any path; each request's
method, path, headers and body are recorded. A scripted chat.completion body
answers a request with `"stream": true` as server-sent events, built from it
(`streamed`), so one script serves both ways; on a path ending in `/responses`
it is sent as the Responses object or event stream (`as_response`), on one ending
in `/messages` as the Messages reply or events (`as_message`), so one script serves
every wire; a `Response` is sent as given, which
is how a test scripts a broken stream (`sse_body` formats the events).
`LoopbackServer` is the plumbing (real socket, random free port, a thread,
TCP_NODELAY) shared with the demo.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from .backend import Models
from .errors import BackendError
from .redact import Redactor
from .wire import WIRES, Reader, Reply, Request, StreamAssembler, Wire, parse_reply, stream_chunks
from .wire.messages.serve import message_events, message_object, sse_event
from .wire.ollama.serve import ndjson_body, ollama_lines, ollama_reply
from .wire.responses.serve import response_events, response_object

__all__ = [
    "LoopbackServer",
    "RecordedRequest",
    "Response",
    "ScriptedBackend",
    "ScriptedServer",
    "as_message",
    "as_response",
    "chat_reply",
    "sse_body",
    "streamed",
    "tool_call",
    "wants_stream",
]


@dataclass
class RecordedRequest:
    """One request as the server received it (header names lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class Response:
    """What the server sends back: a JSON-able object, bytes, or an iterable of byte chunks.

    An iterable body is sent chunked (it may be endless); `delay` is slept before
    the status line is written.
    """

    body: Any = None
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


Handler = Callable[[RecordedRequest], "Response | Mapping[str, Any]"]


def tool_call(name: str, arguments: Any = None, id: str | None = None) -> dict[str, Any]:
    """A `tool_calls` entry; a non-string `arguments` is JSON-encoded."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return {
        "id": f"call_{name}" if id is None else id,
        "type": "function",
        "function": {"name": name, "arguments": args},
    }


def chat_reply(
    content: str | None = None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str | None = None,
    reasoning_content: str | None = None,
    reasoning: str | None = None,
    usage: Mapping[str, Any] | None = None,
    model: str = "scripted",
    message_extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A chat.completion body with one choice; `message_extra` adds fields to the message."""
    message: dict[str, Any] = {"role": "assistant", "content": content, **(message_extra or {})}
    if tool_calls:
        message["tool_calls"] = tool_calls
    if reasoning_content is not None:
        message["reasoning_content"] = reasoning_content
    if reasoning is not None:
        message["reasoning"] = reasoning
    if finish_reason is None:
        finish_reason = "tool_calls" if tool_calls else "stop"
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": dict(usage)
        if usage is not None
        else {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def sse_body(
    events: Iterable[Mapping[str, Any] | str | bytes],
    *,
    done: bool = True,
    interval: float = 0.0,
    first_delay: float = 0.0,
) -> Iterator[bytes]:
    """Server-sent events: a mapping is sent as `data: <json>`, a str as `data: <str>`, bytes as
    given (a comment, a malformed line); `[DONE]` at the end unless `done` is False.

    `interval` is slept before each event after the first, `first_delay` before the first.
    """
    first = True
    for event in events:
        wait = first_delay if first else interval
        if wait:
            time.sleep(wait)
        first = False
        if isinstance(event, bytes):
            yield event
        elif isinstance(event, str):
            yield f"data: {event}\n\n".encode()
        else:
            yield b"data: " + json.dumps(event).encode() + b"\n\n"
    if done:
        yield b"data: [DONE]\n\n"


def streamed(
    body: Mapping[str, Any],
    *,
    piece_chars: int = 16,
    interval: float = 0.0,
    first_delay: float = 0.0,
    status: int = 200,
) -> Response:
    """A chat.completion body sent as the event stream a server would send for it."""
    events = stream_chunks(body, piece_chars=piece_chars)
    return Response(
        sse_body(events, interval=interval, first_delay=first_delay),
        status=status,
        headers={"content-type": "text/event-stream", "cache-control": "no-cache"},
    )


def as_response(body: Mapping[str, Any], *, stream: bool = False) -> Response:
    """A chat.completion body as a `/responses` server sends it: the Responses object, or its
    event stream when `stream`."""
    if not stream:
        return Response(response_object(body))
    return Response(
        sse_body(response_events(body), done=False),
        headers={"content-type": "text/event-stream", "cache-control": "no-cache"},
    )


def as_message(body: Mapping[str, Any], *, stream: bool = False) -> Response:
    """A chat.completion body as a `/messages` server sends it: the Messages reply, or its
    event stream when `stream`."""
    if not stream:
        return Response(message_object(body))
    return Response(
        sse_body([sse_event(e) for e in message_events(body)], done=False),
        headers={"content-type": "text/event-stream", "cache-control": "no-cache"},
    )


def wants_stream(request: RecordedRequest) -> bool:
    """True when the request body asks for `"stream": true`."""
    try:
        body = request.json
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("stream") is True


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        # Nagle plus delayed ACK costs a keep-alive client about 40 ms per request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        req = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        owner = self.server.owner
        with owner._lock:
            owner.requests.append(req)
        try:
            reply = owner.handle(req)
        except Exception as exc:  # a broken script is a 500, not a hung client
            reply = Response({"error": {"message": f"server error: {exc}"}}, status=500)
        if not isinstance(reply, Response):
            reply = Response(reply)
        self._send(reply)

    do_GET = do_POST = do_PUT = do_DELETE = _handle

    def _send(self, reply: Response) -> None:
        if reply.delay:
            time.sleep(reply.delay)
        headers = {k.lower(): v for k, v in reply.headers.items()}
        body = reply.body
        chunks: Iterable[bytes] | None = None
        if isinstance(body, bytes | bytearray):
            data = bytes(body)
        elif isinstance(body, str):
            data = body.encode()
        elif isinstance(body, Iterator) or (
            isinstance(body, Iterable) and not isinstance(body, Mapping | list)
        ):
            chunks = body
            data = b""
        else:
            data = json.dumps(body).encode()
            headers.setdefault("content-type", "application/json")
        head = [f"HTTP/1.1 {reply.status} {self.responses.get(reply.status, ('',))[0]}"]
        if chunks is None:
            headers.setdefault("content-length", str(len(data)))
        else:
            headers["transfer-encoding"] = "chunked"
        head += [f"{k}: {v}" for k, v in headers.items()]
        out = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        try:
            if chunks is None:
                self.wfile.write(out + data)  # one write per response
                return
            self.wfile.write(out)
            for chunk in chunks:
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 drops connections when a compare run opens
    # a few dozen at once.
    request_queue_size = 128
    owner: LoopbackServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-reply (a capped or timed-out stream) is not a server error.
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class LoopbackServer:
    """An HTTP server on 127.0.0.1 and a random free port, served from a thread.

    Subclasses implement `handle(request) -> Response | dict`.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("LoopbackServer binds loopback addresses only")
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._httpd = _HTTPServer((host, port), _RequestHandler)
        self._httpd.owner = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def handle(self, request: RecordedRequest) -> Response | Mapping[str, Any]:
        raise NotImplementedError

    def start(self) -> LoopbackServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class ScriptedServer(LoopbackServer):
    """Serves scripted replies in order; past the script, a 500 that says so.

    A reply may be a dict (a JSON body with status 200), a `Response`, or a callable
    taking the `RecordedRequest` and returning either.
    """

    def __init__(
        self,
        replies: Iterable[Response | Mapping[str, Any] | Handler] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(host, port)
        self._script: list[Response | Mapping[str, Any] | Handler] = list(replies)

    def push(self, *replies: Response | Mapping[str, Any] | Handler) -> None:
        with self._lock:
            self._script.extend(replies)

    @property
    def remaining(self) -> int:
        return len(self._script)

    def handle(self, request: RecordedRequest) -> Response | Mapping[str, Any]:
        with self._lock:
            item = self._script.pop(0) if self._script else None
        if item is None:
            return Response({"error": {"message": "script exhausted"}}, status=500)
        reply = item(request) if callable(item) else item
        if isinstance(reply, Mapping) and "choices" in reply:
            if urlsplit(request.path).path.rstrip("/").endswith("/responses"):
                return as_response(reply, stream=wants_stream(request))
            if urlsplit(request.path).path.rstrip("/").endswith("/messages"):
                return as_message(reply, stream=wants_stream(request))
            if urlsplit(request.path).path.rstrip("/").endswith("/api/chat"):
                if not wants_stream(request):
                    return ollama_reply(reply)
                ndjson = {"content-type": "application/x-ndjson"}
                return Response(ndjson_body(ollama_lines(reply)), headers=ndjson)
            if wants_stream(request):
                return streamed(reply)
        return reply

    def __enter__(self) -> ScriptedServer:
        self.start()
        return self


class ScriptedBackend:
    """A `rig_nb.backend.Backend` in the same process: scripted chat.completion bodies answer
    requests in order (streamed through the same assembler as a real stream), no HTTP.

        backend = ScriptedBackend([chat_reply(tool_calls=[...]), chat_reply("done")])
        rig_nb.loop.run(backend, request)
        backend.bodies[1]["messages"]
    """

    endpoint = "in-process"
    wire: Wire = WIRES["chat"]

    def __init__(
        self, replies: Iterable[Mapping[str, Any]] = (), *, server: str = "unknown"
    ) -> None:
        self.server_kind = server
        self._script = list(replies)
        self.bodies: list[dict[str, Any]] = []
        self.redact = Redactor("", [])

    @property
    def api(self) -> str:
        return self.wire.name

    def _next(self, request: Request) -> Mapping[str, Any]:
        # The body as the chat wire renders it: what a test reads back.
        self.bodies.append(WIRES["chat"].sent_body(request))
        if not self._script:
            raise BackendError("ai backend: script exhausted", kind="reply")
        return self._script.pop(0)

    def chat(self, request: Request, *, retries: bool = True) -> Reply:
        return parse_reply(self._next(request))

    def reader(self) -> Reader:
        return StreamAssembler()

    def stream(
        self,
        request: Request,
        reader: Reader,
        *,
        on_event: Callable[[bool], None] | None = None,
        retries: bool = True,
    ) -> Reply:
        assert isinstance(reader, StreamAssembler)
        for event in stream_chunks(self._next(request)):
            grew = reader.feed(event)
            if on_event is not None:
                on_event(grew)
        reader.done = True
        return reader.finish()

    def over(self, api: str) -> ScriptedBackend:
        """The same script: an in-process backend speaks every wire alike."""
        if api not in WIRES:
            raise ValueError(f"unknown api {api!r}")
        return self

    def server_route(self, path: str, body: Mapping[str, Any] | None = None) -> bytes:
        raise BackendError(f"ai backend: HTTP 404 from {path}", status_code=404)

    def list_models(self) -> Models:
        return Models([{"id": "scripted", "object": "model"}])
