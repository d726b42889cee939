"""rig_nb._transport on its own: GuardTransport inside an httpx.Client against loopback.

tests/test_client.py and tests/test_hostile.py see the same guards through the Client;
here the transport is driven directly: which request headers pass, which headers each
wire adds, the decompressed cap per encoding, the deadline at connect, read and write,
and a caller's own httpx.Client under the deadline.
"""

from __future__ import annotations

import gzip
import os
import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import openai
import pytest
from loopback import Held, SocketServer

from rig_nb import BackendError
from rig_nb._transport import (
    CappedStream,
    DeadlineExceeded,
    GuardTransport,
    deadline_passed,
    deadline_scope,
    pool_transport,
)
from rig_nb.errors import ResponseTooLargeError
from rig_nb.testing import Response, ScriptedServer, chat_reply
from rig_nb.wire import WIRES

KEY = "sk-transport-5555"
UA = "rig_nb-test/1"
# What may reach the wire besides the wire's own headers.
ALLOWED = {"host", "accept", "content-type", "content-length", "connection", "user-agent"}
ALLOWED |= {"transfer-encoding"}
ALLOWED |= {"accept-encoding"}
# Generous absolute bounds (no ratios): a deadline of DEADLINE s must end the wait long
# before BOUND s, on a loaded machine too.
DEADLINE = 0.3
BOUND = 8.0


def guarded(
    headers: dict[str, str] | None = None,
    *,
    cap: int = 1 << 20,
    inner: httpx.BaseTransport | httpx.Client | None = None,
    **client: Any,
) -> httpx.Client:
    """An httpx.Client sending through a GuardTransport (on rig_nb's deadline-aware pool)."""
    transport = GuardTransport(
        inner if inner is not None else pool_transport(httpx.create_ssl_context()),
        headers=headers or {},
        user_agent=UA,
        max_response_bytes=cap,
        owns_inner=not isinstance(inner, httpx.Client),
    )
    client.setdefault("trust_env", False)
    return httpx.Client(transport=transport, **client)


# Which request headers pass.

NOISE = {
    "OpenAI-Organization": "org-noise-1111",
    "OpenAI-Project": "proj-noise-2222",
    "X-Api-Key": "noise-3333",
    "Cookie": "session=noise-4444",
    "X-Stainless-Lang": "python",
    "Authorization": "Bearer noise-5555",
    "Proxy-Authorization": "Basic noise-6666",
}


@pytest.mark.parametrize("key", [pytest.param(KEY, id="key"), pytest.param("", id="no-key")])
@pytest.mark.parametrize("name", list(WIRES))
def test_only_allowed_headers_and_the_wires_own_reach_the_wire(
    server: ScriptedServer, name: str, key: str
) -> None:
    wire_headers = WIRES[name].headers(key)
    server.push(chat_reply("ok"))
    with guarded(wire_headers) as http:
        response = http.post(
            server.base_url + "/x",
            json={"a": 1},
            headers={**NOISE, "User-Agent": "sdk/9", "Accept": "application/json"},
        )
    assert response.status_code == 200
    got = server.requests[0].headers
    assert set(got) - ALLOWED == {k.lower() for k in wire_headers}
    assert {"host", "user-agent", "accept-encoding", "content-type"} <= set(got)
    for k, v in wire_headers.items():
        assert got[k.lower()] == v
    assert got["user-agent"] == UA
    assert got["accept"] == "application/json"
    assert got["accept-encoding"] == "gzip, deflate"
    wire = repr(got)
    for value in NOISE.values():
        assert value.split()[-1] not in wire


def test_no_key_means_no_authorization_even_when_the_sdk_insists(server: ScriptedServer) -> None:
    server.push(chat_reply("ok"))
    with (
        guarded(WIRES["chat"].headers("")) as http,
        openai.OpenAI(
            api_key="sdk-placeholder-7777", base_url=server.base_url, http_client=http
        ) as sdk,
    ):
        sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert "authorization" not in server.requests[0].headers


AMBIENT = {
    "OPENAI_API_KEY": "env-key-1212",
    "OPENAI_ORG_ID": "org-env-1313",
    "OPENAI_PROJECT_ID": "proj-env-1414",
    "OPENAI_BASE_URL": "http://127.0.0.1:9/env-path-1515",
    "OPENAI_CUSTOM_HEADERS": "Authorization: Bearer env-auth-1616\nX-Env: env-1717",
}


def test_the_sdk_over_the_transport_sends_nothing_from_the_environment(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name, value in AMBIENT.items():
        monkeypatch.setenv(name, value)
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine 127.0.0.1 login netrc-user password netrc-pass-1818\n")
    os.chmod(netrc, 0o600)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(netrc))
    server.push(chat_reply("ok"))
    # trust_env=True: whatever httpx itself would take from the environment is dropped too.
    with (
        guarded(WIRES["chat"].headers(KEY), trust_env=True) as http,
        openai.OpenAI(api_key="placeholder", base_url=server.base_url, http_client=http) as sdk,
    ):
        sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    (req,) = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {KEY}"
    seen = repr(req.headers) + req.body.decode()
    for secret in ("1212", "1313", "1414", "1616", "1717", "1818", "netrc-user"):
        assert secret not in seen


def test_client_level_auth_is_dropped(server: ScriptedServer) -> None:
    server.push(chat_reply("ok"))
    with guarded({}, auth=("user", "basic-pass-1919")) as http:
        assert http.get(server.base_url + "/models").status_code == 200
    assert "authorization" not in server.requests[0].headers


class _ChunkedSink(SocketServer):
    """Reads one chunked request to its last chunk, keeps it, answers 200."""

    def __init__(self) -> None:
        self.received = b""
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        data = b""
        while not data.endswith(b"0\r\n\r\n"):
            more = conn.recv(65536)
            if not more:
                break
            data += more
        self.received = data
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")


def test_a_streamed_request_body_is_sent_whole() -> None:
    # The framing header passes the allowlist: without it the body would go out as empty.
    with _ChunkedSink() as sink, guarded() as http:
        parts = iter([b"first-part-", b"second-part"])
        response = http.post(f"http://127.0.0.1:{sink.port}/v1/x", content=parts)
        assert response.content == b"ok"
    head, _, body = sink.received.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower()
    assert b"first-part-" in body and b"second-part" in body


# The decompressed cap.


def _bomb(encoding: str, total: int) -> Iterator[bytes]:
    """`total` zero bytes compressed as `encoding` (gzip, zlib deflate, raw deflate)."""
    wbits = {"gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS, "raw": -zlib.MAX_WBITS}
    comp = zlib.compressobj(9, zlib.DEFLATED, wbits[encoding])
    block = b"\0" * (1 << 20)
    for _ in range(total // len(block)):
        out = comp.compress(block)
        if out:
            yield out
    yield comp.flush()


ENCODINGS = [
    pytest.param("gzip", "gzip", id="gzip"),
    pytest.param("deflate", "deflate", id="zlib-deflate"),
    pytest.param("raw", "deflate", id="raw-deflate"),
]


@pytest.mark.parametrize(("kind", "header"), ENCODINGS)
def test_a_bomb_is_stopped_at_the_cap_without_buffering_more(
    server: ScriptedServer, kind: str, header: str
) -> None:
    cap = 1 << 20
    server.push(Response(_bomb(kind, 256 << 20), headers={"content-encoding": header}))
    read = 0
    with guarded(cap=cap) as http:
        tracemalloc.start()
        try:
            with http.stream("GET", server.base_url + "/x") as response:
                with pytest.raises(ResponseTooLargeError):
                    for piece in response.iter_raw():
                        read += len(piece)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert read <= cap
    assert peak < 16 << 20


@pytest.mark.parametrize(("kind", "header"), ENCODINGS)
def test_each_encoding_within_the_cap_is_decoded(
    server: ScriptedServer, kind: str, header: str
) -> None:
    text = b'{"ok": "' + b"deflated " * 1000 + b'"}'
    wbits = {"gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS, "raw": -zlib.MAX_WBITS}
    comp = zlib.compressobj(6, zlib.DEFLATED, wbits[kind])
    server.push(Response(comp.compress(text) + comp.flush(), headers={"content-encoding": header}))
    with guarded(cap=len(text)) as http:
        response = http.get(server.base_url + "/x")
    assert response.content == text
    # Decoded here: no stale length or encoding for httpx to act on again.
    assert "content-encoding" not in response.headers
    assert "content-length" not in response.headers


def test_the_cap_counts_decoded_bytes_exactly(server: ScriptedServer) -> None:
    server.push(Response(b"x" * 1000), Response(b"x" * 1001))
    with guarded(cap=1000) as http:
        assert len(http.get(server.base_url + "/a").content) == 1000
        with pytest.raises(ResponseTooLargeError, match="cap of 1000 bytes"):
            http.get(server.base_url + "/b")


def test_capped_stream_never_yields_more_than_asked_and_closes() -> None:
    bomb = b"".join(_bomb("gzip", 64 << 20))
    closed = threading.Event()
    stream = CappedStream([bomb], closed.set, "gzip", cap=4096)
    sizes: list[int] = []
    with pytest.raises(ResponseTooLargeError):
        for piece in stream:
            sizes.append(len(piece))
    # The piece that crosses the cap is the cap plus one byte at most, and is never yielded.
    assert sum(sizes) <= 4096
    assert closed.is_set()


@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        pytest.param("br", b"\x0b\x02\x80hello\x03", id="unsupported"),
        pytest.param("gzip, gzip", gzip.compress(gzip.compress(b"x")), id="stacked"),
        pytest.param("gzip", b"this is not gzip at all", id="not-gzip"),
        pytest.param("deflate", b"\xff\xfe not deflate either", id="not-deflate"),
    ],
)
def test_a_body_that_cannot_be_decoded_is_a_decoding_error(
    server: ScriptedServer, encoding: str, body: bytes
) -> None:
    server.push(Response(body, headers={"content-encoding": encoding}))
    with guarded() as http, pytest.raises(httpx.DecodingError):
        http.get(server.base_url + "/x")


def test_identity_is_passed_through(server: ScriptedServer) -> None:
    server.push(Response(b"plain", headers={"content-encoding": "identity"}))
    with guarded() as http:
        assert http.get(server.base_url + "/x").content == b"plain"


# The deadline at connect, read and write.


@pytest.fixture
def silent() -> Iterator[Held]:
    with Held() as held:
        yield held


@pytest.fixture
def deaf() -> Iterator[Held]:
    with Held(read=False) as held:
        yield held


def _timed(fn: Any) -> tuple[BaseException, float, bool]:
    """The exception `fn` raised inside a deadline scope, the seconds it took, and whether
    the deadline had passed when it was raised."""
    start = time.monotonic()
    with deadline_scope(DEADLINE):
        try:
            fn()
        except Exception as exc:
            return exc, time.monotonic() - start, deadline_passed()
    raise AssertionError("no exception")


def test_connect_waits_at_most_until_the_deadline(blackhole_url: str) -> None:
    with guarded(timeout=None) as http:
        exc, took, passed = _timed(lambda: http.get(blackhole_url + "/models"))
    assert isinstance(exc, httpx.ConnectTimeout)
    assert passed and DEADLINE <= took + 0.05 and took < BOUND


def test_read_waits_at_most_until_the_deadline(silent: Held) -> None:
    with guarded(timeout=None) as http:
        exc, took, passed = _timed(lambda: http.get(silent.base_url + "/models"))
    assert isinstance(exc, httpx.ReadTimeout)
    assert passed and took < BOUND


def test_write_waits_at_most_until_the_deadline(deaf: Held) -> None:
    block = b"w" * (1 << 20)

    def body() -> Iterator[bytes]:
        for _ in range(512):
            yield block

    with guarded(timeout=None) as http:
        exc, took, passed = _timed(lambda: http.post(deaf.base_url + "/x", content=body()))
    assert isinstance(exc, httpx.WriteTimeout)
    assert passed and took < BOUND


def test_a_deadline_already_past_sends_nothing(server: ScriptedServer) -> None:
    server.push(chat_reply("never"))
    with guarded() as http, deadline_scope(-1.0), pytest.raises(DeadlineExceeded):
        http.get(server.base_url + "/models")
    assert server.requests == []


def test_no_deadline_scope_means_no_bound(server: ScriptedServer) -> None:
    server.push(chat_reply("ok"))
    assert not deadline_passed()
    with guarded(timeout=None) as http:
        assert http.get(server.base_url + "/models").status_code == 200


# A caller's own httpx.Client.


class _Recording(httpx.BaseTransport):
    """httpx's transport, recording the timeouts each request asked for."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.timeouts: list[dict[str, float | None]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.timeouts.append(dict(request.extensions["timeout"]))
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def test_a_callers_client_gets_its_timeouts_clamped_to_the_deadline(
    server: ScriptedServer,
) -> None:
    server.push(chat_reply("a"), chat_reply("b"))
    recording = _Recording()
    with httpx.Client(transport=recording, timeout=60.0, trust_env=False) as caller:
        with guarded(inner=caller, timeout=60.0) as http:
            with deadline_scope(5.0):
                assert http.get(server.base_url + "/models").status_code == 200
            assert http.get(server.base_url + "/models").status_code == 200
        assert not caller.is_closed  # the caller's client is theirs to close
    clamped, free = recording.timeouts
    assert set(clamped) == {"connect", "read", "write", "pool"}
    assert all(v is not None and 0 < v <= 5.0 for v in clamped.values())
    assert free == {"connect": 60.0, "read": 60.0, "write": 60.0, "pool": 60.0}


def test_a_callers_client_cannot_hold_past_the_deadline(silent: Held) -> None:
    with httpx.Client(timeout=60.0, trust_env=False) as caller, guarded(inner=caller) as http:
        exc, took, passed = _timed(lambda: http.get(silent.base_url + "/models"))
    assert isinstance(exc, httpx.TimeoutException)
    assert passed and took < BOUND


def test_a_callers_client_still_gets_only_allowed_headers(server: ScriptedServer) -> None:
    server.push(chat_reply("ok"))
    with (
        httpx.Client(headers={"X-Caller": "caller-2020"}, trust_env=False) as caller,
        guarded(WIRES["chat"].headers(KEY), inner=caller) as http,
    ):
        http.get(server.base_url + "/models", headers={"X-Request": "request-2121"})
    got = server.requests[0].headers
    assert "x-caller" not in got and "x-request" not in got
    assert got["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("name", list(WIRES))
def test_each_wire_sends_the_body_it_rendered(
    server: ScriptedServer, name: str, stream: bool
) -> None:
    """What reaches the server is the wire's body, as rendered (the openai SDK sends chat and
    Responses, the guarded client the others), with `stream` set by the call alone."""
    from wire_rows import conversation

    from rig_nb.http_backend import HttpBackend

    wire = WIRES[name]
    request = conversation("reasoning_content", stream=stream)
    refused = Response({"error": {"message": "refused on purpose"}}, status=400)
    server.push(refused, refused, {"data": [{"id": "m"}], "models": [{"name": "m"}]})
    with HttpBackend(server.base_url, KEY, api=name, max_retries=0) as backend:
        with pytest.raises(BackendError) as caught:
            if stream:
                backend.stream(request, backend.reader())
            else:
                backend.chat(request)
        with deadline_scope(backend.deadline), pytest.raises(Exception) as raw:
            with wire.send(backend, wire.body(request), stream):
                pass
        backend.list_models()
    assert caught.value.status_code == 400 and "refused on purpose" in str(caught.value)
    # The SDK's own error for the wires it sends, the guarded client's for the rest.
    assert isinstance(raw.value, openai.APIStatusError) == (name in ("chat", "responses"))
    posted, again, listed = server.requests
    expected = {k: v for k, v in wire.body(request).items() if k != "stream"}
    if stream:
        expected["stream"] = True
    elif name == "ollama":
        expected["stream"] = False  # Ollama streams unless told not to
    assert posted.method == "POST" and posted.path == urlsplit(backend.url(wire.route)).path
    assert posted.json == expected == again.json
    assert listed.method == "GET" and listed.path == urlsplit(backend.url(wire.models_route)).path
