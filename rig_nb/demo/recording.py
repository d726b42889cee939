"""Recording real sessions: a proxy that forwards to a real server and writes each exchange.

`rig_nb.demo.replay` serves such a file as a demo persona.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import urllib.parse
from collections.abc import Iterator
from typing import Any

from ..redact import Redactor
from ..testing import LoopbackServer, RecordedRequest, Response
from ..wire import iter_events

__all__ = ["RecordingProxy"]


# Request headers passed on to the upstream server; everything else (Host, Cookie, ...) stays here.
_FORWARDED_HEADERS = ("authorization", "content-type", "accept", "user-agent")
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_READ_SIZE = 1 << 16


class _Scrub:
    """Every secret of a session masked by the project's Redactor (one mask, "[redacted]").

    The upstream URL, origin and host:port are literal secrets, each with the
    forms Redactor gives a key (URL-encoded, JSON-escaped); the upstream path
    goes through Redactor's URL rules (leading parts, long segments). Gateways
    put tokens in hosts and paths; loopback host names and a bare `/v1` are not
    secrets, and masking them would only mangle recorded text. Secrets are
    masked longest first, so a URL is masked whole, not around its host.
    """

    def __init__(self, upstream: urllib.parse.SplitResult, base_url: str, token: str) -> None:
        literals = {base_url.rstrip("/"), f"{upstream.scheme}://{upstream.netloc}", upstream.netloc}
        if upstream.hostname and upstream.hostname not in _LOOPBACK_HOSTS:
            literals.add(upstream.hostname)
        if token:
            literals.add(token)
        path = upstream.path.rstrip("/")
        ordered = sorted((s for s in literals if s), key=len, reverse=True)
        self._passes = [Redactor(s) for s in ordered]
        if path not in ("", "/v1"):
            self._passes.append(Redactor(urls=[path]))

    def text(self, value: str) -> str:
        for redact in self._passes:
            value = redact(value)
        return value

    def __call__(self, value: Any) -> Any:
        """`value` with every string in it (keys too) redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, dict):
            return {self(k): self(v) for k, v in value.items()}
        return value


def _text_fields(events: list[Any]) -> dict[tuple[Any, ...], list[tuple[dict[str, Any], str]]]:
    """Each streamed text field (delta content, reasoning, call arguments) as its pieces, in order.

    A piece is the dict that holds it and its key, so the pieces can be rewritten in place.
    """
    fields: dict[tuple[Any, ...], list[tuple[dict[str, Any], str]]] = {}
    for event in events:
        choices = event.get("choices") if isinstance(event, dict) else None
        for choice in choices if isinstance(choices, list) else []:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if not isinstance(delta, dict):
                continue
            at = choice.get("index")
            for key, value in delta.items():
                if isinstance(value, str):
                    fields.setdefault((at, key), []).append((delta, key))
            for call in delta.get("tool_calls") or []:
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                    where = (at, "tool_calls", call.get("index"))
                    fields.setdefault(where, []).append((fn, "arguments"))
    return fields


def _redact_stream(events: list[Any], scrub: _Scrub) -> list[Any]:
    """`events` redacted, secrets split over several deltas included.

    A field whose joined text holds a secret is redacted whole and cut again at
    the same offsets into the same events (the last takes what is left), so the
    events keep their number and the text its order.
    """
    for pieces in _text_fields(events).values():
        joined = "".join(holder[key] for holder, key in pieces)
        redacted = scrub.text(joined)
        if redacted == joined:
            continue
        start = 0
        for n, (holder, key) in enumerate(pieces):
            end = len(redacted) if n == len(pieces) - 1 else start + len(holder[key])
            holder[key] = redacted[start:end]
            start = end
    redacted_events: list[Any] = scrub(events)
    return redacted_events


def _decode_body(data: bytes) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace")


def _decode_events(data: bytes) -> list[Any]:
    """The `data:` payloads of a server-sent event stream: JSON decoded, else the text."""
    text = data.decode("utf-8", "replace").encode()  # valid UTF-8: iter_events cannot fail
    events: list[Any] = []
    for payload in iter_events([text]):
        try:
            events.append(json.loads(payload))
        except ValueError:
            events.append(payload)  # [DONE], or a line that is not JSON
    return events


class RecordingProxy(LoopbackServer):
    """Forwards every request to a real server and records each exchange as one JSON line.

        with RecordingProxy("http://127.0.0.1:8080/v1", "session.jsonl") as proxy:
            Client(proxy.base_url).probe_tool_calling("smollm2")

    A line is ``{"request": {"method", "path", "body"}, "response": {"status", "body"}}``
    where path is relative to the base URL (``"chat/completions"``) and bodies are the
    decoded JSON. A streamed reply (``text/event-stream``) is passed on as it arrives
    and recorded once it ends as ``"response": {"status", "events"}``: the list of its
    ``data:`` payloads, JSON decoded (``"[DONE]"`` stays a string). No header is
    recorded (the Authorization header reaches the upstream server, never the file),
    and the bearer token and the upstream URL, origin, host and path are replaced by
    ``[redacted]`` in every recorded string (`rig_nb.redact.Redactor`), except loopback
    host names and a bare ``/v1``. Lines are appended, so a file may hold several
    sessions; `rig_nb.demo.replay` serves such a file as a demo persona. A `note` (what
    was recorded, from which model) is written first as ``{"note": ...}``.
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
        self._upstream_url = upstream_base_url
        self._upstream_path = parts.path.rstrip("/")
        self._path = os.fspath(path)
        self._timeout = timeout
        self.exchanges = 0
        self._relaying = 0
        self._relays_done = threading.Condition(self._lock)
        if note:
            with open(self._path, "a", encoding="ascii") as f:
                f.write(json.dumps({"note": note}, ensure_ascii=True) + "\n")

    def __enter__(self) -> RecordingProxy:
        self.start()
        return self

    def close(self) -> None:
        """Stop serving once every stream being passed on is recorded (within `timeout`).

        A client reads a stream's last event before the proxy has seen the upstream
        end it: without the wait, a file read right after the proxy closes could lack
        the last exchange.
        """
        with self._relays_done:
            self._relays_done.wait_for(lambda: self._relaying == 0, timeout=self._timeout)
        super().close()

    def handle(self, request: RecordedRequest) -> Response:
        prefix = urllib.parse.urlsplit(self.base_url).path
        rel = request.path[len(prefix) :] if request.path.startswith(prefix) else request.path
        rel = rel.lstrip("/")
        headers = {k: v for k, v in request.headers.items() if k in _FORWARDED_HEADERS}
        headers["accept-encoding"] = "identity"
        token = request.headers.get("authorization", "").partition(" ")[2].strip()
        scrub = _Scrub(self._upstream, self._upstream_url, token)
        recorded_request = {
            "method": request.method,
            "path": scrub(rel),
            "body": scrub(request.json if request.body else None),
        }
        conn = self._connection()
        try:
            conn.request(
                request.method,
                f"{self._upstream_path}/{rel}",
                body=request.body or None,
                headers=headers,
            )
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            # The upstream's address stays out of the reply and the recording.
            message = f"recording proxy: upstream unreachable ({type(exc).__name__})"
            error = {"error": {"message": message}}
            self._write(recorded_request, {"status": 502, "body": error})
            return Response(error, status=502)
        content_type = resp.getheader("content-type") or "application/json"
        if resp.status == 200 and content_type.startswith("text/event-stream"):
            relay = self._relay(conn, resp, recorded_request, scrub)
            return Response(
                relay, headers={"content-type": content_type, "cache-control": "no-cache"}
            )
        try:
            data = resp.read()
        except (OSError, http.client.HTTPException):
            data = b""
        finally:
            conn.close()
        self._write(recorded_request, {"status": resp.status, "body": scrub(_decode_body(data))})
        return Response(data, status=resp.status, headers={"content-type": content_type})

    def _connection(self) -> http.client.HTTPConnection:
        u = self._upstream
        conn_type = (
            http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        )
        return conn_type(u.hostname or "", u.port, timeout=self._timeout)

    def _relay(
        self,
        conn: http.client.HTTPConnection,
        resp: http.client.HTTPResponse,
        recorded_request: dict[str, Any],
        scrub: _Scrub,
    ) -> Iterator[bytes]:
        """Pass the stream on as it arrives; record its events once it ends, however it ends."""
        received: list[bytes] = []
        with self._lock:
            self._relaying += 1
        try:
            while True:
                try:
                    chunk = resp.read1(_READ_SIZE)
                except (OSError, http.client.HTTPException):
                    break  # the upstream broke off: what arrived is recorded
                if not chunk:
                    break
                received.append(chunk)
                yield chunk
        finally:
            try:
                conn.close()
                events = _redact_stream(_decode_events(b"".join(received)), scrub)
                self._write(recorded_request, {"status": resp.status, "events": events})
            finally:
                with self._relays_done:
                    self._relaying -= 1
                    self._relays_done.notify_all()

    def _write(self, request: dict[str, Any], response: dict[str, Any]) -> None:
        line = json.dumps({"request": request, "response": response}, ensure_ascii=True) + "\n"
        with self._lock:
            with open(self._path, "a", encoding="ascii") as f:
                f.write(line)
            self.exchanges += 1
