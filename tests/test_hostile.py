"""Hostile endpoints: slow, stalled, huge, lying, malformed, deeply nested, redirecting, echoing.

Each case gets a clear error or a safe result, bounded in time and memory. Time
bounds here are loose ceilings that an unbounded call would blow through by far
(the servers would keep a call alive for minutes); the ratio to the deadline is
measured in benchmarks/.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.parse
from typing import Any

import pytest
from hostile_servers import KEY, SECRET_PATH, echoing, elapsed
from loopback import RawServer, TLSServer, free_port

from rig_nb import BackendError, Client, IterationLimitError, RunRequest, Tool, Trace
from rig_nb.testing import LoopbackServer, RecordedRequest, Response, ScriptedServer, chat_reply
from rig_nb.testing import tool_call as make_call

REQUEST = RunRequest(model="m", max_tokens=16, prompt="hi")


class Silent(LoopbackServer):
    """Accepts the request and never answers (until closed)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def handle(self, request: RecordedRequest) -> Response:
        self.release.wait(60)
        return Response(chat_reply("too late"))


def test_a_server_that_never_answers_is_stopped_at_the_deadline() -> None:
    with Silent() as silent:
        try:
            with Client(silent.base_url, timeout=30, deadline=0.5) as c:
                took, exc = elapsed(lambda: c.run(REQUEST))
        finally:
            silent.release.set()
    assert isinstance(exc, BackendError) and exc.kind == "deadline"
    assert took < 3.0  # retries included: the read timeout alone is 30 s


def test_retry_after_never_holds_a_call_past_its_deadline(server: ScriptedServer) -> None:
    busy = Response({"error": {"message": "slow down"}}, status=429, headers={"retry-after": "60"})
    server.push(busy, busy, busy)
    with Client(server.base_url, timeout=1, deadline=2, max_retries=2) as c:
        took, exc = elapsed(lambda: c.run(REQUEST))
    assert isinstance(exc, BackendError) and (exc.kind, exc.status_code) == ("http", 429)
    assert len(server.requests) == 1  # a 60 s wait cannot fit in a 2 s deadline: not retried
    assert took < 1.5
    assert exc.message.endswith("(the endpoint asks to retry after 60 s)")


def test_retry_after_longer_than_the_timeout_is_not_waited(server: ScriptedServer) -> None:
    busy = Response({"error": {"message": "slow down"}}, status=429, headers={"retry-after": "60"})
    server.push(busy, busy, busy)
    with Client(server.base_url, timeout=1, max_retries=2) as c:  # the default 600 s deadline
        took, exc = elapsed(lambda: c.run(REQUEST))
    assert isinstance(exc, BackendError) and exc.status_code == 429
    assert len(server.requests) == 1 and took < 1.5


def test_transient_errors_are_retried_within_the_deadline(server: ScriptedServer) -> None:
    busy = Response({"error": {"message": "busy"}}, status=503, headers={"retry-after": "0"})
    server.push(busy, chat_reply("fine"))
    with Client(server.base_url, max_retries=2) as c:
        assert c.run(REQUEST).text == "fine"
    assert len(server.requests) == 2


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "5", True])
def test_timeouts_are_checked_at_construction(bad: Any) -> None:
    with pytest.raises(ValueError):
        Client("http://127.0.0.1:9/v1", timeout=bad)
    with pytest.raises(ValueError):
        Client("http://127.0.0.1:9/v1", deadline=bad)


def test_no_deadline_is_allowed() -> None:
    with Client("http://127.0.0.1:9/v1", deadline=None) as c:
        assert c.deadline is None


def test_kinds_refused_connection() -> None:
    with Client(f"http://127.0.0.1:{free_port()}/v1", max_retries=0) as c:
        _, exc = elapsed(lambda: c.run(REQUEST))
    assert isinstance(exc, BackendError) and exc.kind == "connect"
    assert "refused" in exc.message and exc.status_code is None


def test_kinds_https_against_plain_http(server: ScriptedServer) -> None:
    with Client(f"https://127.0.0.1:{server.port}/v1", max_retries=0) as c:
        _, exc = elapsed(lambda: c.run(REQUEST))
    assert isinstance(exc, BackendError) and exc.kind == "tls"
    assert "does not speak TLS" in exc.message
    assert str(server.port) not in exc.message


def test_kinds_plain_http_against_tls(tls_server: TLSServer) -> None:
    with Client(f"http://127.0.0.1:{tls_server.port}/v1", max_retries=0) as c:
        _, exc = elapsed(lambda: c.run(REQUEST))
    assert isinstance(exc, BackendError) and exc.kind == "protocol"
    assert "https" in exc.message


def test_kinds_untrusted_certificate(tls_server: TLSServer) -> None:
    with Client(f"https://127.0.0.1:{tls_server.port}/v1", max_retries=0) as c:
        _, exc = elapsed(lambda: c.run(REQUEST))
    assert isinstance(exc, BackendError) and exc.kind == "tls"
    assert "certificate is not trusted" in exc.message


def test_kinds_not_a_chat_completion(server: ScriptedServer) -> None:
    server.push(Response(b"\xff\xfe not utf-8", headers={"content-type": "application/json"}))
    with Client(server.base_url) as c:
        _, exc = elapsed(lambda: c.run(REQUEST))
    assert isinstance(exc, BackendError) and exc.kind == "reply"


_BODY = json.dumps(chat_reply("ok")).encode()


@pytest.mark.parametrize(
    ("response", "kind"),
    [
        pytest.param(
            b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n" + _BODY,
            "protocol",
            id="content-length-longer-than-body",
        ),
        pytest.param(b"SSH-2.0-OpenSSH_9.2\r\n", "protocol", id="not-http"),
        pytest.param(
            b"HTTP/1.1 200 OK\r\n" + b"x-h: v\r\n" * 10_000 + b"content-length: 2\r\n\r\n{}",
            "reply",  # within h11's header limit: read, then found not to be a completion
            id="ten-thousand-headers",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nx-big: " + b"a" * (1 << 20) + b"\r\ncontent-length: 2\r\n\r\n{}",
            "protocol",
            id="one-megabyte-header",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\ncontent-encoding: br\r\ncontent-length: 4\r\n\r\nabcd",
            "protocol",
            id="unsupported-content-encoding",
        ),
    ],
)
def test_broken_http_is_a_protocol_error(response: bytes, kind: str) -> None:
    with RawServer(response) as raw, Client(f"http://127.0.0.1:{raw.port}/v1", KEY) as c:
        _, exc = elapsed(lambda: c.run(REQUEST))
    assert isinstance(exc, BackendError) and exc.kind == kind
    assert KEY not in exc.message


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_redirects_are_never_followed(server: ScriptedServer, status: int) -> None:
    with ScriptedServer([chat_reply("elsewhere")] * 3) as other:
        server.push(
            Response(b"", status=status, headers={"location": f"{other.base_url}/chat/completions"})
        )
        with Client(server.base_url, KEY, max_retries=0) as c:
            _, exc = elapsed(lambda: c.run(REQUEST))
        assert other.requests == []
    assert isinstance(exc, BackendError) and exc.status_code == status


@pytest.mark.parametrize(
    "echo",
    [
        pytest.param("bad key {key}", id="key"),
        pytest.param("bad key {quoted}", id="key-url-encoded"),
        pytest.param("bad key {lower_quoted}", id="key-url-encoded-lower"),
        pytest.param("bad key {escaped}", id="key-json-escaped"),
        pytest.param("no route {path}/chat/completions", id="whole-path"),
        pytest.param("no route /gw-0123456789abcdef", id="leading-part"),
        pytest.param("token gw-0123456789abcdef is revoked", id="segment-alone"),
        pytest.param("at {origin} and {host}", id="origin-and-host"),
    ],
)
@pytest.mark.parametrize("html", [False, True], ids=["json", "html"])
def test_secrets_echoed_in_errors_are_redacted(echo: str, html: bool) -> None:
    with ScriptedServer() as srv:
        base = f"{srv.origin}{SECRET_PATH}"
        text = echo.format(
            key=KEY,
            quoted=urllib.parse.quote(KEY, safe=""),
            lower_quoted=urllib.parse.quote(KEY, safe="").lower(),
            escaped=json.dumps(KEY)[1:-1],
            path=SECRET_PATH,
            origin=srv.origin,
            host=f"127.0.0.1:{srv.port}",
        )
        srv.push(echoing(text, html=html))
        with Client(base, KEY, max_retries=0) as c:
            _, exc = elapsed(lambda: c.run(REQUEST))
    shown = str(exc) + repr(exc)
    for secret in (KEY, urllib.parse.quote(KEY, safe=""), "gw-0123456789abcdef", str(srv.port)):
        assert secret not in shown
    assert "[redacted]" in shown
    assert exc.__cause__ is None and exc.__context__ is None


def test_readable_path_segments_stay_readable() -> None:
    with ScriptedServer() as srv:
        srv.push(echoing("model not found under /api/openai/v1", status=404))
        with Client(f"{srv.origin}/api/openai/v1", max_retries=0) as c:
            _, exc = elapsed(lambda: c.run(REQUEST))
    assert "model not found under /api/openai/v1" in str(exc)


def test_httpx_logs_no_secret_at_info(caplog: pytest.LogCaptureFixture) -> None:
    with ScriptedServer([chat_reply("ok")]) as srv, caplog.at_level(logging.DEBUG):
        with Client(f"{srv.origin}{SECRET_PATH}", KEY) as c:
            c.run(REQUEST)
    logged = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.INFO)
    assert "HTTP Request" in logged  # httpx did log the request
    assert "gw-0123456789abcdef" not in logged and KEY not in logged


def _one_call(arguments: str) -> dict[str, Any]:
    return chat_reply(tool_calls=[make_call("echo", arguments)])


class Echo:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.tool = Tool("echo", "Echo.", {"type": "object"}, self.run)

    def run(self, args: dict[str, Any]) -> str:
        self.calls.append(args)
        return "ran"


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param('{"x": NaN}', id="nan"),
        pytest.param('{"x": -Infinity}', id="minus-infinity"),
        pytest.param('{"x": ' * 100_000 + "1" + "}" * 100_000, id="deep-nesting"),
        pytest.param('{"x": "\\ud800', id="broken-string"),
        pytest.param("[1, 2]", id="not-an-object"),
    ],
)
def test_arguments_that_are_not_a_json_object_never_run_the_tool(
    server: ScriptedServer, arguments: str
) -> None:
    echo = Echo()
    server.push(_one_call(arguments), chat_reply("done"))
    with Client(server.base_url) as c:
        result = c.run(RunRequest("m", 16, prompt="go", tools=[echo.tool]))
    assert echo.calls == []
    [rec] = result.trace.tool_calls
    assert rec.is_error and rec.result.startswith("error: arguments are not")
    assert rec.error_type == ""


def test_a_900_kb_argument_reaches_the_tool(server: ScriptedServer) -> None:
    echo = Echo()
    big = "x" * 900_000
    server.push(_one_call(json.dumps({"text": big})), chat_reply("done"))
    with Client(server.base_url) as c:
        c.run(RunRequest("m", 16, prompt="go", tools=[echo.tool]))
    assert echo.calls == [{"text": big}]


def test_ten_thousand_calls_in_one_reply_run_none(server: ScriptedServer) -> None:
    echo = Echo()
    calls = [make_call("echo", {}, id=f"c{i}") for i in range(10_000)]
    server.push(chat_reply(tool_calls=calls))
    with Client(server.base_url) as c, pytest.raises(IterationLimitError) as info:
        c.run(RunRequest("m", 16, prompt="go", tools=[echo.tool]))
    assert echo.calls == []
    assert info.value.trace is not None and info.value.trace.tool_calls == []


def test_a_tool_that_raises_keeps_its_error_class(server: ScriptedServer) -> None:
    def boom(args: dict[str, Any]) -> str:
        raise KeyError("missing")

    server.push(_one_call("{}"), chat_reply("done"))
    with Client(server.base_url) as c:
        result = c.run(RunRequest("m", 16, prompt="go", tools=[Tool("echo", "E.", run=boom)]))
    [rec] = result.trace.tool_calls
    assert (rec.is_error, rec.error_type) == (True, "KeyError")


def test_usage_values_of_any_size_or_type_are_kept_or_dropped(server: ScriptedServer) -> None:
    usage = {
        "prompt_tokens": 2**63,
        "completion_tokens": "12",
        "completion_tokens_details": {"reasoning_tokens": 10**30},
        "prompt_tokens_details": {"cached_tokens": True},
        "total_tokens": 7,
    }
    server.push(chat_reply("ok", usage=usage))
    with Client(server.base_url) as c:
        it = c.run(REQUEST).trace.iterations[0]
    # Every int is kept as sent (DESIGN: anything that is not an int is dropped); what judges
    # or renders a trace reads only counts a server can mean (tests/report/test_usage_survived).
    assert it.usage == {"prompt_tokens": 2**63, "reasoning_tokens": 10**30}


def test_one_client_from_eight_threads_mixes_no_trace() -> None:
    def answer(request: RecordedRequest) -> dict[str, Any]:
        prompt = request.json["messages"][-1]["content"]
        return chat_reply(f"answer to {prompt}")

    barrier = threading.Barrier(8)
    results: dict[int, Trace] = {}
    with ScriptedServer([answer] * 80) as srv, Client(srv.base_url) as c:

        def work(n: int) -> None:
            barrier.wait()
            for k in range(10):
                trace = c.run(RunRequest("m", 16, prompt=f"{n}-{k}")).trace
                results[n * 10 + k] = trace

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(results) == 80
    for key, trace in results.items():
        n, k = divmod(key, 10)
        assert trace.iterations[0].text == f"answer to {n}-{k}"
        assert trace.iterations[0].messages[-1]["content"] == f"{n}-{k}"
