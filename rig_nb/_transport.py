"""The httpx transport every Client request goes through: header allowlist, cap, deadline.

The deadline is a wall-clock bound on one request, retries and a streamed body
included. It is held in a context variable for the thread making the request
(`deadline_scope`) and enforced at three depths:

- our own connection pool runs on a network backend whose every connect, read
  and write waits at most until the deadline, so a server that accepts and
  never answers, or stalls mid-body, is cut off on time;
- the decoded body is checked between chunks, so a server dripping a byte
  every few seconds (each read well under the timeout) is cut off too;
- a caller's own httpx.Client cannot take our backend: its request timeouts
  are lowered to what is left of the deadline instead.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

from .errors import ResponseTooLargeError

__all__ = [
    "CappedStream",
    "DeadlineExceeded",
    "GuardTransport",
    "deadline_passed",
    "deadline_scope",
    "pool_transport",
]

# Only these request headers reach the wire; the SDK adds others from the
# environment (OpenAI-Organization, OpenAI-Project, OPENAI_CUSTOM_HEADERS). The framing
# headers stay: without transfer-encoding a streamed body is sent as an empty one.
_ALLOWED_HEADERS = frozenset(
    {
        "host",
        "accept",
        "content-type",
        "content-length",
        "transfer-encoding",
        "connection",
        "user-agent",
    }
)
_ACCEPT_ENCODING = "gzip, deflate"
# A socket timeout that fires this close to the deadline was the deadline.
_SLACK_S = 0.005

_deadline: ContextVar[float | None] = ContextVar("rig_nb_deadline", default=None)


class DeadlineExceeded(Exception):
    """The request ran past its deadline (mapped to BackendError kind "deadline")."""


@contextmanager
def deadline_scope(seconds: float | None) -> Iterator[None]:
    """Bound every network wait in this block to `seconds` from now (None: no bound)."""
    token = _deadline.set(None if seconds is None else time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining() -> float | None:
    """Seconds left before the deadline (None: no deadline); DeadlineExceeded when none are."""
    deadline = _deadline.get()
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise DeadlineExceeded
    return left


def deadline_passed() -> bool:
    deadline = _deadline.get()
    return deadline is not None and time.monotonic() >= deadline - _SLACK_S


def _clamp(timeout: float | None) -> float | None:
    left = remaining()
    if left is None:
        return timeout
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _clamp(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _clamp(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, _clamp(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self._inner.connect_tcp(host, port, _clamp(timeout), local_address, socket_options)
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_unix_socket(path, _clamp(timeout)))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def pool_transport(ssl_context: Any) -> httpx.HTTPTransport:
    """httpx's default transport, its pool on the deadline-aware network backend."""
    transport = httpx.HTTPTransport(verify=ssl_context, trust_env=False)
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)
    transport._pool = httpcore.ConnectionPool(
        ssl_context=ssl_context,
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=_DeadlineBackend(),
    )
    return transport


class _Decoder:
    """Decodes one content-encoding while never producing more than asked for."""

    def __init__(self, encoding: str) -> None:
        enc = encoding.strip().lower()
        if enc in ("", "identity"):
            self._obj: zlib._Decompress | None = None
        elif enc in ("gzip", "x-gzip"):
            self._obj = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif enc == "deflate":
            self._obj = zlib.decompressobj()
        else:
            raise httpx.DecodingError(f"unsupported content-encoding {enc[:40]!r}")
        self._deflate_probe = enc == "deflate"

    def decode(self, data: bytes, limit: int) -> Iterator[bytes]:
        """Yield decoded pieces; the pieces of one call total at most `limit` + 1 bytes each."""
        if self._obj is None:
            yield data
            return
        buf = data
        while buf:
            try:
                out = self._obj.decompress(buf, limit + 1)
            except zlib.error:
                if not self._deflate_probe:
                    raise httpx.DecodingError("invalid compressed body") from None
                # Servers send raw deflate under "deflate" too.
                self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
                self._deflate_probe = False
                continue
            self._deflate_probe = False
            buf = self._obj.unconsumed_tail
            if out:
                yield out
            elif self._obj.eof:
                return


class CappedStream(httpx.SyncByteStream):
    """The decompressed body, stopped once past `cap` bytes or past the deadline."""

    def __init__(
        self, raw: Iterable[bytes], close: Callable[[], None], encoding: str, cap: int
    ) -> None:
        self._raw = raw
        self._close = close
        self._encoding = encoding
        self._cap = cap

    def __iter__(self) -> Iterator[bytes]:
        total = 0
        # Built here, not in __init__: an unsupported encoding fails as the body is read.
        decoder = _Decoder(self._encoding)
        try:
            for chunk in self._raw:
                remaining()
                for piece in decoder.decode(chunk, self._cap - total):
                    total += len(piece)
                    if total > self._cap:
                        raise ResponseTooLargeError(
                            f"response body exceeds the configured cap of {self._cap} bytes"
                        )
                    yield piece
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self._close()


class _ClientTransport(httpx.BaseTransport):
    """Sends through a caller's httpx.Client, returning its raw, undecoded stream."""

    def __init__(self, client: httpx.Client) -> None:
        self._client = client

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._client.send(request, stream=True, follow_redirects=False)


def _clamped_timeouts(extensions: dict[str, Any]) -> dict[str, Any]:
    left = remaining()
    timeout = extensions.get("timeout")
    if left is None or not isinstance(timeout, dict):
        return extensions
    clamped = {k: left if v is None else min(v, left) for k, v in timeout.items()}
    return {**extensions, "timeout": clamped}


class GuardTransport(httpx.BaseTransport):
    """Rebuilds request headers from an allowlist plus the wire's own, and caps the response.

    Nothing the SDK or the caller's environment adds passes; the key goes out only in the
    header the wire names (`Wire.headers`).
    """

    def __init__(
        self,
        inner: httpx.BaseTransport | httpx.Client,
        *,
        headers: Mapping[str, str],
        user_agent: str,
        max_response_bytes: int,
        owns_inner: bool = True,
    ) -> None:
        self._inner: httpx.BaseTransport = (
            _ClientTransport(inner) if isinstance(inner, httpx.Client) else inner
        )
        # The wire's own headers (its auth header, when a key is given): added to every request.
        self._headers = tuple(headers.items())
        self._user_agent = user_agent
        self._cap = max_response_bytes
        self._owns_inner = owns_inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        kept = [(k, v) for k, v in request.headers.multi_items() if k.lower() in _ALLOWED_HEADERS]
        headers = httpx.Headers(kept)
        headers["User-Agent"] = self._user_agent
        headers["Accept-Encoding"] = _ACCEPT_ENCODING
        for name, value in self._headers:
            headers[name] = value
        # A new request: the SDK reads its own markers back from the original.
        wire = httpx.Request(
            request.method,
            request.url,
            headers=headers,
            stream=request.stream,
            extensions=_clamped_timeouts(dict(request.extensions)),
        )
        response = self._inner.handle_request(wire)
        raw = response.stream
        if not isinstance(raw, Iterable):
            raise TypeError("GuardTransport needs a synchronous inner transport")
        out_headers = [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        ]
        return httpx.Response(
            status_code=response.status_code,
            headers=out_headers,
            stream=CappedStream(
                raw,
                response.close,
                response.headers.get("content-encoding", ""),
                self._cap,
            ),
            extensions=response.extensions,
        )

    def close(self) -> None:
        if self._owns_inner:
            self._inner.close()
