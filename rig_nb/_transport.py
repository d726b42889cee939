"""The httpx transport every Client request goes through: header allowlist and response cap."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator

import httpx

from .errors import ResponseTooLargeError

# Only these request headers reach the wire; the SDK adds others from the
# environment (OpenAI-Organization, OpenAI-Project, OPENAI_CUSTOM_HEADERS).
_ALLOWED_HEADERS = frozenset(
    {"host", "accept", "content-type", "content-length", "connection", "user-agent"}
)
_ACCEPT_ENCODING = "gzip, deflate"


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
            raise httpx.DecodingError(f"unsupported content-encoding {enc!r}")
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
    """The decompressed body, stopped with ResponseTooLargeError once past `cap` bytes."""

    def __init__(
        self, raw: Iterable[bytes], close: Callable[[], None], encoding: str, cap: int
    ) -> None:
        self._raw = raw
        self._close = close
        self._decoder = _Decoder(encoding)
        self._cap = cap

    def __iter__(self) -> Iterator[bytes]:
        total = 0
        for chunk in self._raw:
            for piece in self._decoder.decode(chunk, self._cap - total):
                total += len(piece)
                if total > self._cap:
                    self.close()
                    raise ResponseTooLargeError(
                        f"response body exceeds the configured cap of {self._cap} bytes"
                    )
                yield piece

    def close(self) -> None:
        self._close()


class _ClientTransport(httpx.BaseTransport):
    """Sends through a caller's httpx.Client, returning its raw, undecoded stream."""

    def __init__(self, client: httpx.Client) -> None:
        self._client = client

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._client.send(request, stream=True, follow_redirects=False)


class GuardTransport(httpx.BaseTransport):
    """Rebuilds request headers from an allowlist plus our own, and caps the response."""

    def __init__(
        self,
        inner: httpx.BaseTransport | httpx.Client,
        *,
        api_key: str,
        user_agent: str,
        max_response_bytes: int,
    ) -> None:
        self._inner: httpx.BaseTransport = (
            _ClientTransport(inner) if isinstance(inner, httpx.Client) else inner
        )
        self._api_key = api_key
        self._user_agent = user_agent
        self._cap = max_response_bytes

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        kept = [(k, v) for k, v in request.headers.multi_items() if k.lower() in _ALLOWED_HEADERS]
        headers = httpx.Headers(kept)
        headers["User-Agent"] = self._user_agent
        headers["Accept-Encoding"] = _ACCEPT_ENCODING
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        # A new request: the SDK reads its own markers back from the original.
        wire = httpx.Request(
            request.method,
            request.url,
            headers=headers,
            stream=request.stream,
            extensions=request.extensions,
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
        self._inner.close()
