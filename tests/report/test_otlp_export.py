"""rig_nb.report.export_otlp: spans sent to a real collector on loopback, and hostile ones.

The collector is a real HTTP server in the test that reads the body with OpenTelemetry's own
protobuf classes. The hostile ones refuse, answer 4xx/5xx or an HTML page, redirect, or
accept and never answer: each is one clear BackendError within the deadline, naming neither
the collector's URL nor any header's value.
"""

from __future__ import annotations

import gzip
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from collector import Collector, spans
from loopback import SocketServer, free_port
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as pb

from rig_nb import BackendError, Client, RigError, RunRequest, Trace
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools
from rig_nb.report import export_otlp

TOKEN = "t0k3n-collector-path-77"
HEADER_SECRET = "phx-header-SECRET-9931"
CONTENT_KEYS = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments"}


@pytest.fixture
def collector() -> Iterator[Collector]:
    srv = Collector(
        200, pb.ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf"
    )
    try:
        yield srv
    finally:
        srv.close()


@pytest.fixture(scope="module")
def traces(demo: DemoServer) -> list[Trace]:
    """Real runs: a tool loop that answers, and one that ends without an answer."""
    out = []
    with Client(demo.base_url) as client:
        for model in ("well-behaved", "hermes-text-tools"):
            request = RunRequest(
                model, 512, system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools()
            )
            try:
                out.append(client.run(request).trace)
            except RigError as exc:
                assert exc.trace is not None
                out.append(exc.trace)
    return out


def attrs(span: Any) -> dict[str, Any]:
    out = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        value = getattr(kv.value, kind)
        out[kv.key] = list(v.string_value for v in value.values) if kind == "array_value" else value
    return out


def test_spans_reach_the_collector_as_protobuf(collector: Collector, traces: list[Trace]) -> None:
    export_otlp(traces, collector.url(), headers={"authorization": f"Bearer {HEADER_SECRET}"})
    ((headers, _),) = collector.requests
    assert headers["content-type"] == "application/x-protobuf"
    assert headers["authorization"] == f"Bearer {HEADER_SECRET}"  # the caller's header, as given
    got = spans(collector)
    expected = sum(1 + len(t.iterations) + len(t.tool_calls) for t in traces)
    assert len(got) == expected
    roots = [s for s in got if not s.parent_span_id]
    assert [attrs(s)["rig_nb.outcome"] for s in roots] == [t.outcome for t in traces]
    assert roots[0].status.code == 1 and roots[1].status.code == 2  # ok, then a failed run
    chats = [s for s in got if s.name.startswith("chat ")]
    assert {s.name for s in chats} == {f"chat {t.model}" for t in traces}
    first = attrs(chats[0])
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.request.model"] == traces[0].model
    assert first["gen_ai.usage.input_tokens"] == traces[0].iterations[0].usage["prompt_tokens"]
    tools = [s for s in got if s.name.startswith("execute_tool ")]
    assert tools and all(attrs(s)["gen_ai.tool.name"] == s.name.split(" ", 1)[1] for s in tools)
    assert all(len(s.trace_id) == 16 and len(s.span_id) == 8 for s in got)
    # No content without include_content.
    assert not [k for s in got for k in attrs(s) if k in CONTENT_KEYS]


def test_content_only_with_include_content(collector: Collector, traces: list[Trace]) -> None:
    export_otlp(traces[0], collector.url(), include_content=True)
    keys = {k for s in spans(collector) for k in attrs(s)}
    assert CONTENT_KEYS <= keys
    sent = [
        attrs(s)["gen_ai.input.messages"] for s in spans(collector) if s.name.startswith("chat")
    ]
    assert DEMO_PROMPT in sent[0]


def test_many_traces_go_in_batches(
    collector: Collector, traces: list[Trace], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rig_nb.report import otlp

    monkeypatch.setattr(otlp, "MAX_BATCH_SPANS", 12)
    many = traces * 5
    export_otlp(many, collector.url())
    per_trace = [1 + len(t.iterations) + len(t.tool_calls) for t in traces]
    assert max(per_trace) <= 12
    assert len(spans(collector)) == 5 * sum(per_trace)
    sizes = [
        sum(len(ss.spans) for rs in r.resource_spans for ss in rs.scope_spans)
        for _, r in collector.requests
    ]
    assert len(sizes) >= 2 and max(sizes) <= 12
    # A trace is never split between two requests.
    for _, request in collector.requests:
        roots = sum(
            1
            for rs in request.resource_spans
            for s in rs.scope_spans[0].spans
            if not s.parent_span_id
        )
        assert roots == len(request.resource_spans)


def assert_clean(exc: BackendError, port: int) -> None:
    text = str(exc)
    assert text.startswith("ai backend: OTLP export: ")
    for secret in (TOKEN, HEADER_SECRET, f"127.0.0.1:{port}", "127.0.0.1"):
        assert secret not in text, text
    assert exc.__cause__ is None


@pytest.mark.parametrize(
    ("status", "body", "content_type", "kind", "said"),
    [
        pytest.param(415, b"Unsupported content type", "text/plain", "http", "HTTP 415", id="415"),
        pytest.param(401, b"bad key " + HEADER_SECRET.encode(), "", "http", "HTTP 401", id="401"),
        pytest.param(503, b"<html><body><h1>Down</h1></body></html>", "text/html", "http",
                     "HTTP 503: Down", id="503-html"),
        pytest.param(200, b"<html><title>Sign in</title><script>x()</script></html>",
                     "text/html", "reply", "an HTML page", id="200-html"),
        pytest.param(302, b"", "", "http", "HTTP 302: a redirect", id="redirect"),
    ],
)  # fmt: skip
def test_a_collector_that_says_no(
    status: int, body: bytes, content_type: str, kind: str, said: str
) -> None:
    srv = Collector(status, body, content_type)
    srv.location = f"http://127.0.0.1:{free_port()}/{TOKEN}/elsewhere"
    try:
        with pytest.raises(BackendError) as info:
            export_otlp(
                Trace(model="m", outcome="ok"),
                srv.url(f"/{TOKEN}/v1/traces"),
                headers={"x-api-key": HEADER_SECRET},
                deadline=5,
            )
    finally:
        srv.close()
    assert info.value.kind == kind
    assert said in str(info.value)
    assert info.value.status_code == (status if kind == "http" else None)
    assert "<script" not in str(info.value)
    assert_clean(info.value, srv.server_address[1])


def test_a_refused_connection() -> None:
    port = free_port()
    with pytest.raises(BackendError) as info:
        export_otlp([Trace(model="m")], f"http://127.0.0.1:{port}/{TOKEN}/v1/traces", deadline=5)
    assert info.value.kind == "connect" and "refused" in str(info.value)
    assert_clean(info.value, port)


class Silent(SocketServer):
    """Accepts, reads the request, and never answers until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.read = threading.Event()
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        conn.recv(65536)
        self.read.set()
        self.release.wait(30)


def test_a_collector_that_never_answers_ends_at_the_deadline() -> None:
    srv = Silent()
    try:
        started = time.monotonic()
        with pytest.raises(BackendError) as info:
            export_otlp(
                [Trace(model="m")],
                f"http://127.0.0.1:{srv.port}/{TOKEN}/v1/traces",
                headers={"authorization": f"Bearer {HEADER_SECRET}"},
                deadline=0.5,
            )
        elapsed = time.monotonic() - started
        assert srv.read.is_set()
    finally:
        srv.release.set()
        srv.close()
    assert info.value.kind == "deadline" and "deadline of 0.5 s" in str(info.value)
    assert elapsed < 5  # the deadline (0.5 s) ended it, not a socket default
    assert_clean(info.value, srv.port)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        pytest.param({"endpoint": "ftp://127.0.0.1/v1/traces"}, ValueError, id="scheme"),
        pytest.param({"endpoint": "http:///v1/traces"}, ValueError, id="no-host"),
        pytest.param({"deadline": 0}, ValueError, id="deadline-0"),
        pytest.param({"deadline": float("nan")}, ValueError, id="deadline-nan"),
        pytest.param({"headers": {"x": "a\r\nb"}}, ValueError, id="header-crlf"),
        pytest.param({"headers": {"x": 1}}, TypeError, id="header-int"),
        pytest.param({"traces": ["not a trace"]}, TypeError, id="not-a-trace"),
    ],
)
def test_bad_arguments_fail_before_any_request(
    collector: Collector, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    args: dict[str, Any] = {"traces": [Trace()], "endpoint": collector.url(), **kwargs}
    with pytest.raises(error) as info:
        export_otlp(args.pop("traces"), args.pop("endpoint"), **args)
    assert "a\r\nb" not in str(info.value)
    assert collector.requests == []


def test_a_refusal_body_is_read_bounded_and_never_inflated() -> None:
    bomb = gzip.compress(b"<p>" + b"A" * 50_000_000)  # 50 MB once inflated, 50 KB sent
    srv = Collector(500, bomb, "text/html")
    srv.headers_out = {"Content-Encoding": "gzip"}
    try:
        with pytest.raises(BackendError) as info:
            export_otlp([Trace()], srv.url(), deadline=5)
        ((headers, _),) = srv.requests
    finally:
        srv.close()
    assert str(info.value) == "ai backend: OTLP export: HTTP 500"
    assert headers["accept-encoding"] == "identity"
    huge = Collector(502, b"<b>Bad gateway</b> " + b"x" * 5_000_000, "text/html")
    try:
        with pytest.raises(BackendError) as info:
            export_otlp([Trace()], huge.url(), deadline=5)
    finally:
        huge.close()
    assert str(info.value).startswith("ai backend: OTLP export: HTTP 502: Bad gateway xxx")
    assert len(str(info.value)) < 400


class Drip(SocketServer):
    """Answers 500 with a long body, one byte at a time, until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 500 Oops\r\nContent-Length: 100000\r\n\r\n")
        while not self.release.wait(0.05):  # the drip's pace
            conn.sendall(b"x")


def test_a_refusal_dripped_byte_by_byte_ends_at_the_deadline() -> None:
    srv = Drip()
    try:
        started = time.monotonic()
        with pytest.raises(BackendError) as info:
            export_otlp([Trace()], f"http://127.0.0.1:{srv.port}/v1/traces", deadline=0.6)
        elapsed = time.monotonic() - started
    finally:
        srv.release.set()
        srv.close()
    assert info.value.kind == "deadline"
    assert elapsed < 5
