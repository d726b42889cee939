"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, for testing tools and loops.

    with ScriptedServer([chat_reply("hello")]) as server:
        client = Client(server.base_url)
        ...
        server.requests[0].json["messages"]

Replies are served in order, one per request to any path; each request's
method, path, headers and body are recorded. `LoopbackServer` is the plumbing
(real socket, random free port, a thread, TCP_NODELAY) shared with the demo.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "LoopbackServer",
    "RecordedRequest",
    "RecordingProxy",
    "Reply",
    "ScriptedServer",
    "chat_reply",
    "tool_call",
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
class Reply:
    """What the server sends back: a JSON-able object, bytes, or an iterable of byte chunks.

    An iterable body is sent chunked (it may be endless); `delay` is slept before
    the status line is written.
    """

    body: Any = None
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


Handler = Callable[[RecordedRequest], "Reply | Mapping[str, Any]"]


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
    usage: Mapping[str, int] | None = None,
    model: str = "scripted",
) -> dict[str, Any]:
    """A chat.completion body with one choice."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
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
            reply = Reply({"error": {"message": f"server error: {exc}"}}, status=500)
        if not isinstance(reply, Reply):
            reply = Reply(reply)
        self._send(reply)

    do_GET = do_POST = do_PUT = do_DELETE = _handle

    def _send(self, reply: Reply) -> None:
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
    owner: LoopbackServer


class LoopbackServer:
    """An HTTP server on 127.0.0.1 and a random free port, served from a thread.

    Subclasses implement `handle(request) -> Reply | dict`.
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

    def handle(self, request: RecordedRequest) -> Reply | Mapping[str, Any]:
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

    A reply may be a dict (a JSON body with status 200), a `Reply`, or a callable
    taking the `RecordedRequest` and returning either.
    """

    def __init__(
        self,
        replies: Iterable[Reply | Mapping[str, Any] | Handler] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(host, port)
        self._script: list[Reply | Mapping[str, Any] | Handler] = list(replies)

    def push(self, *replies: Reply | Mapping[str, Any] | Handler) -> None:
        with self._lock:
            self._script.extend(replies)

    @property
    def remaining(self) -> int:
        return len(self._script)

    def handle(self, request: RecordedRequest) -> Reply | Mapping[str, Any]:
        with self._lock:
            item = self._script.pop(0) if self._script else None
        if item is None:
            return Reply({"error": {"message": "script exhausted"}}, status=500)
        if callable(item):
            return item(request)
        return item

    def __enter__(self) -> ScriptedServer:
        self.start()
        return self


# --- Recording real sessions -------------------------------------------------------------------

# Request headers passed on to the upstream server; everything else (Host, Cookie, ...) stays here.
_FORWARDED_HEADERS = ("authorization", "content-type", "accept", "user-agent")


def _scrub(value: Any, secrets: tuple[str, ...]) -> Any:
    """`value` with every occurrence of each secret removed from every string in it."""
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, "")
        return value
    if isinstance(value, list):
        return [_scrub(v, secrets) for v in value]
    if isinstance(value, dict):
        return {_scrub(k, secrets): _scrub(v, secrets) for k, v in value.items()}
    return value


def _decode_body(data: bytes) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace")


class RecordingProxy(LoopbackServer):
    """Forwards every request to a real server and records each exchange as one JSON line.

        with RecordingProxy("http://127.0.0.1:8080/v1", "session.jsonl") as proxy:
            Client(proxy.base_url).probe_tool_calling("smollm2")

    A line is ``{"request": {"method", "path", "body"}, "response": {"status", "body"}}``
    where path is relative to the base URL (``"chat/completions"``) and bodies are the
    decoded JSON. No header is recorded (the Authorization header reaches the upstream
    server, never the file), and the upstream origin, host, path and any bearer token are
    removed from every recorded string. Lines are appended, so a file may hold several
    sessions; `rig_nb.replay` serves such a file as a demo persona. A `note` (what was
    recorded, from which model) is written first as ``{"note": ...}``.
    """

    def __init__(
        self,
        upstream_base_url: str,
        path: str | os.PathLike[str],
        *,
        timeout: float = 300.0,
        note: str = "",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        parts = urllib.parse.urlsplit(upstream_base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("upstream_base_url must be an http or https URL")
        super().__init__(host, port)
        self._upstream = parts
        self._upstream_path = parts.path.rstrip("/")
        self._path = os.fspath(path)
        self._timeout = timeout
        secrets = [upstream_base_url.rstrip("/"), f"{parts.scheme}://{parts.netloc}", parts.netloc]
        # Gateways put tokens in hosts and paths; loopback names and a bare /v1 are not secrets
        # and removing them would only mangle recorded text.
        if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            secrets.append(parts.hostname)
        if self._upstream_path not in ("", "/v1"):
            secrets.append(self._upstream_path)
        self._secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))
        self.exchanges = 0
        if note:
            with open(self._path, "a", encoding="ascii") as f:
                f.write(json.dumps({"note": note}, ensure_ascii=True) + "\n")

    def handle(self, request: RecordedRequest) -> Reply:
        prefix = urllib.parse.urlsplit(self.base_url).path
        rel = request.path[len(prefix) :] if request.path.startswith(prefix) else request.path
        rel = rel.lstrip("/")
        headers = {k: v for k, v in request.headers.items() if k in _FORWARDED_HEADERS}
        headers["accept-encoding"] = "identity"
        status, data, content_type = self._forward(request.method, rel, request.body, headers)
        token = request.headers.get("authorization", "").partition(" ")[2].strip()
        secrets = self._secrets + ((token,) if token else ())
        record = {
            "request": {
                "method": request.method,
                "path": _scrub(rel, secrets),
                "body": _scrub(request.json if request.body else None, secrets),
            },
            "response": {"status": status, "body": _scrub(_decode_body(data), secrets)},
        }
        line = json.dumps(record, ensure_ascii=True) + "\n"
        with self._lock:
            with open(self._path, "a", encoding="ascii") as f:
                f.write(line)
            self.exchanges += 1
        return Reply(data, status=status, headers={"content-type": content_type})

    def _forward(
        self, method: str, rel: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int, bytes, str]:
        u = self._upstream
        conn_type = (
            http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        )
        conn = conn_type(u.hostname or "", u.port, timeout=self._timeout)
        try:
            conn.request(method, f"{self._upstream_path}/{rel}", body=body or None, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, data, resp.getheader("content-type") or "application/json"
        except OSError as exc:
            # The upstream's address stays out of the reply and the recording.
            message = f"recording proxy: upstream unreachable ({type(exc).__name__})"
            return 502, json.dumps({"error": {"message": message}}).encode(), "application/json"
        finally:
            conn.close()
