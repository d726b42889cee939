"""An OTLP/HTTP collector on loopback for the export tests: a real HTTP server that reads each
body with OpenTelemetry's own protobuf classes and answers what the test asks."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as pb


class Collector(ThreadingHTTPServer):
    """Answers `status` with `body` (default: an empty ExportTraceServiceResponse), keeps
    each request's headers and parsed body; `location` is sent as a Location header and
    `headers_out` as they are."""

    daemon_threads = True

    def __init__(
        self,
        status: int = 200,
        body: bytes | None = None,
        content_type: str = "application/x-protobuf",
    ) -> None:
        if body is None:
            body = pb.ExportTraceServiceResponse().SerializeToString()
        self.status, self.body, self.content_type = status, body, content_type
        self.requests: list[tuple[dict[str, str], Any]] = []
        self.location = ""
        self.headers_out: dict[str, str] = {}
        super().__init__(("127.0.0.1", 0), _Handler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str = "/v1/traces") -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        self.thread.join(timeout=10)


class _Handler(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        request = pb.ExportTraceServiceRequest()
        if self.headers.get("content-type") == "application/x-protobuf":
            request.ParseFromString(body)
        self.server.requests.append(({k.lower(): v for k, v in self.headers.items()}, request))
        self.send_response(self.server.status)
        if self.server.location:
            self.send_header("Location", self.server.location)
        for name, value in self.server.headers_out.items():
            self.send_header(name, value)
        if self.server.content_type:
            self.send_header("Content-Type", self.server.content_type)
        self.send_header("Content-Length", str(len(self.server.body)))
        self.end_headers()
        self.wfile.write(self.server.body)

    def log_message(self, *args: Any) -> None:
        pass


def spans(collector: Collector) -> list[Any]:
    """Every span the collector received, in order."""
    return [
        s
        for _, request in collector.requests
        for rs in request.resource_spans
        for ss in rs.scope_spans
        for s in ss.spans
    ]
