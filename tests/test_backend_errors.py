"""rig_nb._backend_errors: every failure kind, from real failures on loopback, both ways.

Each failure is caught raw as a wire's sender raises it, then mapped by `backend_error`:
the openai SDK's path (`ChatWire.send`, what api "chat" sends with) and the direct path
(`Wire.send`, the guarded httpx client alone, raising `HTTPStatusFailure`: what wires
without an SDK send with). Both must give the same kind, status and endpoint message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import httpx
import openai
import pytest
from loopback import Held, RawServer, TLSServer

from rig_nb import BackendError, RunRequest
from rig_nb._backend_errors import backend_error, page_text, retry_delay, retryable
from rig_nb._transport import deadline_scope
from rig_nb.http_backend import HttpBackend
from rig_nb.testing import Response, ScriptedServer, chat_reply
from rig_nb.wire import WIRES, HTTPStatusFailure, Request, Turn, Wire

KEY = "KEYzq-0123456789abcdef"
REQUEST = Request(model="m", turns=(Turn("user", "hi"),), max_tokens=8)
CHAT = WIRES["chat"]
WAYS = [pytest.param("sdk", id="sdk"), pytest.param("direct", id="direct")]


def _send(way: str) -> Callable[..., Any]:
    return CHAT.send if way == "sdk" else lambda *a: Wire.send(CHAT, *a)


def fail(
    way: str, base_url: str, key: str = KEY, **backend: Any
) -> tuple[BackendError, BaseException]:
    """The raw exception one unstreamed chat request raised, and `backend_error`'s mapping
    of it (inside the request's deadline scope, as the backend maps it)."""
    backend.setdefault("max_retries", 0)
    with HttpBackend(base_url, key, **backend) as http_backend:
        body = CHAT.body(REQUEST)
        with deadline_scope(http_backend.deadline):
            try:
                with _send(way)(http_backend, body, False) as response:
                    CHAT.parse(response.read())
            except Exception as exc:
                return backend_error(exc, http_backend.redact, http_backend.deadline), exc
    raise AssertionError("the request did not fail")


@pytest.fixture
def held() -> Iterator[str]:
    with Held() as srv:
        yield srv.base_url


# Every kind from a real failure.


@pytest.mark.parametrize("way", WAYS)
def test_a_refused_port_is_connect(way: str, closed_port_url: str) -> None:
    err, raw = fail(way, closed_port_url)
    assert (err.kind, err.status_code) == ("connect", None)
    assert "connection refused" in err.message
    assert retryable(raw)[0]  # a refused connection may be a restart: worth one more try


@pytest.mark.parametrize("way", WAYS)
def test_an_unanswered_connection_attempt_is_connect_and_not_retried(
    way: str, blackhole_url: str
) -> None:
    err, raw = fail(way, blackhole_url, timeout=0.3)
    assert err.kind == "connect" and "no answer to the connection attempt" in err.message
    assert retryable(raw) == (False, None)


@pytest.mark.parametrize("way", WAYS)
def test_a_port_that_never_answers_is_timeout(way: str, held: str) -> None:
    err, raw = fail(way, held, timeout=0.3, deadline=None)
    assert err.kind == "timeout" and err.message.startswith("ai backend: request timed out")
    assert retryable(raw)[0]


@pytest.mark.parametrize("way", WAYS)
def test_a_port_that_never_answers_past_the_deadline_is_deadline(way: str, held: str) -> None:
    err, _ = fail(way, held, timeout=60.0, deadline=0.3)
    assert err.kind == "deadline"
    assert err.message == "ai backend: request exceeded its deadline of 0.3 s"


@pytest.mark.parametrize("way", WAYS)
def test_https_against_plain_http_is_tls(way: str, server: ScriptedServer) -> None:
    err, _ = fail(way, server.base_url.replace("http://", "https://"))
    assert err.kind == "tls" and "does not speak TLS" in err.message


@pytest.mark.parametrize("way", WAYS)
def test_an_untrusted_certificate_is_tls(way: str, tls_server: TLSServer) -> None:
    err, _ = fail(way, f"https://127.0.0.1:{tls_server.port}/v1")
    assert err.kind == "tls" and "certificate is not trusted" in err.message


@pytest.mark.parametrize("way", WAYS)
def test_plain_http_against_tls_is_protocol(way: str, tls_server: TLSServer) -> None:
    err, _ = fail(way, f"http://127.0.0.1:{tls_server.port}/v1")
    assert err.kind == "protocol"


BODY = json.dumps(chat_reply("ok")).encode()


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize(
    ("raw", "words"),
    [
        pytest.param(
            b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n" + BODY[:20],
            "connection broke mid-exchange",
            id="closes-mid-body",
        ),
        pytest.param(b"SSH-2.0-OpenSSH_9.2\r\n", "connection broke", id="not-http"),
        pytest.param(
            b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: 8\r\n\r\nnot-gzip",
            "content-encoding cannot be decoded",
            id="bad-gzip",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\ncontent-encoding: zstd-x\r\ncontent-length: 4\r\n\r\nabcd",
            "content-encoding cannot be decoded",
            id="unknown-encoding",
        ),
    ],
)
def test_a_broken_exchange_is_protocol(way: str, raw: bytes, words: str) -> None:
    with RawServer(raw) as srv:
        err, _ = fail(way, f"http://127.0.0.1:{srv.port}/v1")
    assert err.kind == "protocol" and words in err.message


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"object": "list", "data": []}, id="json-not-a-completion"),
        pytest.param(b"\xff\xfe not json", id="not-json"),
        pytest.param({"id": "x", "choices": []}, id="no-choices"),
    ],
)
def test_a_2xx_that_is_not_a_reply_is_reply(way: str, server: ScriptedServer, body: Any) -> None:
    server.push(Response(body))
    err, _ = fail(way, server.base_url)
    assert err.kind == "reply" and err.status_code is None


# The endpoint's own words, whichever wire's error shape the body has.

SHAPES = [
    pytest.param({"error": {"message": "model x is not served", "type": "e"}}, id="openai"),
    pytest.param(
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "model x is not served"},
        },
        id="anthropic",
    ),
    pytest.param({"error": "model x is not served"}, id="ollama"),
    pytest.param({"detail": "model x is not served"}, id="fastapi"),
    pytest.param({"object": "error", "message": "model x is not served", "code": 400}, id="vllm"),
    pytest.param(
        "<html><head><title>Error</title><style>h1{color:red}</style>"
        "<script>alert('model x is not served')</script></head>"
        "<body><h1>model x is not served</h1><!-- model y --></body></html>",
        id="html-page",
    ),
    pytest.param("model x is not served", id="plain-text"),
]


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("status", [400, 401, 404, 422, 429, 500, 502, 503])
@pytest.mark.parametrize("body", SHAPES)
def test_an_http_error_keeps_its_status_and_the_endpoints_words(
    way: str, status: int, body: Any, server: ScriptedServer
) -> None:
    server.push(Response(body, status=status))
    err, raw = fail(way, server.base_url)
    assert (err.kind, err.status_code) == ("http", status)
    assert err.message.startswith(f"ai backend: HTTP {status}: ")
    assert err.message.endswith("model x is not served")
    assert "<" not in err.message and "alert" not in err.message and "model y" not in err.message
    assert isinstance(raw, openai.APIStatusError if way == "sdk" else HTTPStatusFailure)


@pytest.mark.parametrize("way", WAYS)
def test_a_validation_error_list_keeps_its_words(way: str, server: ScriptedServer) -> None:
    detail = [{"loc": ["body", "model"], "msg": "field required", "type": "missing"}]
    server.push(Response({"detail": detail}, status=422))
    err, _ = fail(way, server.base_url)
    assert err.status_code == 422 and "field required" in err.message


@pytest.mark.parametrize("way", WAYS)
def test_an_empty_error_body_is_the_status_alone(way: str, server: ScriptedServer) -> None:
    server.push(Response(b"", status=503))
    err, _ = fail(way, server.base_url)
    assert err.message == "ai backend: HTTP 503"


@pytest.mark.parametrize("way", WAYS)
def test_a_deeply_nested_error_body_is_bounded(way: str, server: ScriptedServer) -> None:
    server.push(Response(b'{"error": ' * 50_000 + b"1" + b"}" * 50_000, status=400))
    err, _ = fail(way, server.base_url)
    assert err.status_code == 400 and len(err.message) <= 400


# The key and the base URL are never in a message, whatever the cut.

SECRET_PATH = "/gw-secret-0123456789/v1"


def _forms(base_url: str) -> list[str]:
    return [KEY, quote(KEY, safe=""), json.dumps(KEY)[1:-1], base_url, SECRET_PATH[:-3]]


def _assert_no_secret(text: str, base_url: str) -> None:
    for form in _forms(base_url):
        assert form not in text
    assert "gw-secret-0123456789" not in text
    # No prefix of the key survives a cut either.
    for n in range(4, len(KEY) + 1):
        assert KEY[:n] not in text, n


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("html", [False, True], ids=["json", "html"])
@pytest.mark.parametrize("offset", [1, 3, 7, 11, len(KEY) - 1])
def test_a_secret_cut_by_the_message_limit_leaves_no_piece(
    way: str, html: bool, offset: int, server: ScriptedServer
) -> None:
    base_url = server.origin + SECRET_PATH
    # The echo puts the key across the cut: 300 characters of message, 4000 of a page.
    limit = 4000 if html else 300
    echoed = "x" * (limit - offset) + KEY + " then " + base_url
    body: Any = f"<p>{echoed}</p>" if html else {"error": {"message": echoed}}
    if html:
        body = body[3:]  # the page's text starts where the message does
    server.push(Response(body, status=401))
    err, _ = fail(way, base_url)
    assert err.status_code == 401
    _assert_no_secret(err.message + repr(err), base_url)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("form", [0, 1, 2, 3, 4], ids=["key", "url-key", "json-key", "url", "path"])
def test_every_form_of_a_secret_is_removed(way: str, form: int, server: ScriptedServer) -> None:
    base_url = server.origin + SECRET_PATH
    echoed = f"rejected: [{_forms(base_url)[form]}]"
    server.push(Response(f"<html><body>{echoed}</body></html>", status=403))
    err, _ = fail(way, base_url)
    assert err.message == "ai backend: HTTP 403: rejected: [[redacted]]"


def test_an_error_raised_by_rig_nb_is_redacted_again(server: ScriptedServer) -> None:
    base_url = server.origin + SECRET_PATH
    with HttpBackend(base_url, KEY) as backend:
        inner = BackendError(f"ai backend: bad reply from {base_url} with {KEY}", kind="reply")
        err = backend_error(inner, backend.redact, None)
    assert err.kind == "reply"
    _assert_no_secret(err.message, base_url)


def test_the_client_path_keeps_secrets_out_of_the_whole_trace(server: ScriptedServer) -> None:
    from rig_nb import Client

    base_url = server.origin + SECRET_PATH
    server.push(Response({"error": {"message": f"no key {KEY} at {base_url}"}}, status=401))
    with Client(base_url, KEY, max_retries=0) as client:
        trace = client.run_trace(RunRequest("m", 8, prompt="hi"))
    assert isinstance(trace.exception, BackendError)
    assert trace.exception.__cause__ is None and trace.exception.__context__ is None
    _assert_no_secret(trace.to_json(), base_url)


# Retry rules from the endpoint's headers.


def _status_failure(server: ScriptedServer, status: int, headers: dict[str, str]) -> Any:
    server.push(Response({"error": {"message": "later"}}, status=status, headers=headers))
    _, raw = fail("direct", server.base_url)
    return raw


@pytest.mark.parametrize(
    ("headers", "delay"),
    [
        pytest.param({"retry-after": "3"}, 3.0, id="retry-after"),
        pytest.param({"retry-after": "0.25"}, 0.25, id="retry-after-fraction"),
        pytest.param({"retry-after-ms": "1500"}, 1.5, id="retry-after-ms"),
        pytest.param({"retry-after-ms": "200", "retry-after": "9"}, 0.2, id="ms-wins"),
        pytest.param({"retry-after": "-5"}, 0.0, id="negative-is-now"),
    ],
)
def test_retry_after_is_read_and_quoted(
    server: ScriptedServer, headers: dict[str, str], delay: float
) -> None:
    raw = _status_failure(server, 429, headers)
    retry, seen = retryable(raw)
    assert retry and seen is not None
    assert retry_delay(0, seen) == (delay, True)


def _http_date(seconds_from_now: float) -> str:
    import email.utils
    import time

    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


# Dates are made when the test runs (a date made at collection is stale by then).
@pytest.mark.parametrize(
    ("headers", "low", "high"),
    [
        pytest.param(lambda: {"retry-after": _http_date(30)}, 27.0, 31.0, id="http-date"),
        pytest.param(lambda: {"retry-after": _http_date(-60)}, 0.0, 0.0, id="http-date-past"),
        pytest.param(lambda: {"retry-after-ms": "x", "retry-after": "2"}, 2.0, 2.0, id="bad-ms"),
        pytest.param(lambda: {"retry-after": "nan"}, 0.0, 0.5, id="nan-is-ours"),
    ],
)
def test_retry_after_as_an_http_date_or_beside_a_bad_value(
    headers: Callable[[], dict[str, str]], low: float, high: float
) -> None:
    sent = headers()
    delay, asked = retry_delay(0, httpx.Headers(sent))
    assert low <= delay <= high
    assert asked is (sent.get("retry-after") != "nan")


def test_an_http_date_retry_after_is_quoted_by_the_run(
    server: ScriptedServer, run_loop: Any
) -> None:
    later = Response({"error": {"message": "busy"}}, 503, {"retry-after": _http_date(3600)})
    trace = run_loop.trace(later, max_retries=2)
    assert isinstance(trace.exception, BackendError)
    assert "the endpoint asks to retry after" in trace.exception.message
    assert len(server.requests) == 1  # an hour is not waited: one request only


def test_the_client_fixture_maps_a_status_error(server: ScriptedServer, client: Any) -> None:
    server.push(Response({"error": "model 'm' not found"}, 404))
    with pytest.raises(BackendError) as info:
        client.chat(REQUEST)
    assert (info.value.status_code, info.value.message) == (
        404,
        "ai backend: HTTP 404: model 'm' not found",
    )
    assert len(server.requests) == 1


def test_an_unreadable_retry_after_falls_back_to_our_backoff(server: ScriptedServer) -> None:
    raw = _status_failure(server, 503, {"retry-after": "soon"})
    retry, seen = retryable(raw)
    delay, asked = retry_delay(0, seen)
    assert retry and not asked and 0 < delay <= 0.5


def test_our_backoff_grows_and_is_capped() -> None:
    delays = [retry_delay(n, None) for n in range(12)]
    assert all(not asked for _, asked in delays)
    assert delays[0][0] <= 0.5 and delays[3][0] > delays[0][0]
    assert max(d for d, _ in delays) <= 8.0


@pytest.mark.parametrize(
    ("status", "hint", "retry"),
    [
        pytest.param(503, "false", False, id="5xx-told-not-to"),
        pytest.param(400, "true", True, id="4xx-told-to"),
        pytest.param(400, None, False, id="400"),
        pytest.param(401, None, False, id="401"),
        pytest.param(408, None, True, id="408"),
        pytest.param(409, None, True, id="409"),
        pytest.param(429, None, True, id="429"),
        pytest.param(500, None, True, id="500"),
        pytest.param(503, "maybe", True, id="unknown-hint-ignored"),
    ],
)
def test_x_should_retry_and_the_status_decide(
    server: ScriptedServer, status: int, hint: str | None, retry: bool
) -> None:
    raw = _status_failure(server, status, {"x-should-retry": hint} if hint else {})
    assert retryable(raw)[0] is retry


@pytest.mark.parametrize("way", WAYS)
def test_a_decoding_failure_is_not_retried(way: str) -> None:
    raw = b"HTTP/1.1 200 OK\r\ncontent-encoding: br\r\ncontent-length: 4\r\n\r\nabcd"
    with RawServer(raw) as srv:
        _, exc = fail(way, f"http://127.0.0.1:{srv.port}/v1")
    assert retryable(exc)[0] is False


# Never by class name.


def _impostors() -> list[type[Exception]]:
    """Exception classes named like httpx's, httpcore's, ssl's and openai's, unrelated."""
    names = ["ConnectTimeout", "ConnectError", "ReadTimeout", "DecodingError", "SSLError"]
    names += ["APIStatusError", "APITimeoutError", "HTTPStatusFailure", "DeadlineExceeded"]
    return [type(name, (Exception,), {}) for name in names]


@pytest.mark.parametrize("cls", _impostors(), ids=lambda c: c.__name__)
def test_an_impostor_named_like_a_known_error_is_not_taken_for_it(cls: type[Exception]) -> None:
    from rig_nb.redact import Redactor

    exc = cls("refused timed out certificate name or service")
    exc.response = httpx.Response(500, headers={"retry-after": "1"})  # type: ignore[attr-defined]
    err = backend_error(exc, Redactor(KEY), 10.0)
    assert (err.kind, err.status_code) == ("protocol", None)
    assert err.message == f"ai backend: {cls.__name__}"
    assert retryable(exc) == (False, None)


def test_an_unrelated_error_that_mentions_ssl_is_not_tls() -> None:
    from rig_nb.redact import Redactor

    err = backend_error(ValueError("SSL_CERT_FILE points nowhere"), Redactor(), None)
    assert err.kind != "tls"


def test_a_real_error_under_an_impostor_is_still_found(closed_port_url: str) -> None:
    from rig_nb.redact import Redactor

    with httpx.Client() as http:
        try:
            http.get(closed_port_url)
        except httpx.ConnectError as exc:
            real = exc
    outer = type("ConnectError", (Exception,), {})("wrapper")
    outer.__cause__ = real
    assert backend_error(outer, Redactor(), None).kind == "connect"


# page_text: what an error page says.


@pytest.mark.parametrize(
    ("page", "text"),
    [
        pytest.param("<h1>Bad&nbsp;Gateway</h1>", "Bad Gateway", id="entity"),
        pytest.param("<style>p{x}</style><p>a</p>  <p>b</p>", "a b", id="style"),
        pytest.param("<script>evil()</script>ok", "ok", id="script"),
        pytest.param("<script>unclosed evil()", "", id="unclosed-script"),
        pytest.param("<!-- secret --> seen", "seen", id="comment"),
        pytest.param("a\n\n\tb", "a b", id="whitespace"),
        pytest.param("5 < 6 and 7 > 3", "5 < 6 and 7 > 3", id="bare-brackets"),
    ],
)
def test_page_text(page: str, text: str) -> None:
    assert page_text(page) == text


@pytest.mark.parametrize("way", WAYS)
def test_a_half_mebibyte_page_of_unclosed_markup_is_read_in_bounded_time(
    way: str, server: ScriptedServer
) -> None:
    import time

    page = "<p>model x is not served</p>" + "<script><!--<" * ((1 << 19) // 13)
    server.push(Response(page, status=500))
    start = time.perf_counter()
    err, _ = fail(way, server.base_url)
    # An absolute bound, not a ratio: only the page's first 4000 characters are scanned.
    assert time.perf_counter() - start < 5.0
    assert err.message == "ai backend: HTTP 500: model x is not served"
