"""Send traces to an OpenTelemetry collector: `to_otel`'s spans as OTLP/HTTP protobuf.

`export_otlp(traces, endpoint)` posts `application/x-protobuf` (Phoenix answers 415 to
JSON) encoded with `opentelemetry-proto` (`pip install 'rig_nb[otlp]'`) to `endpoint`, the
full `.../v1/traces` URL, used as given. The request goes through rig_nb's own transport
(`rig_nb._transport`: no proxy, netrc or certificate path from the environment, no
redirect followed) under one deadline for the whole export: connect, write and every read
wait at most until it. A failure is a `BackendError`: kind `connect` (refused, unreachable),
`deadline`, `http` (any non-2xx status, a redirect included), or `reply` (a 2xx that is an
HTML page, not OTLP). Its message names neither the collector's URL nor any header's value:
both are redacted like a key (`rig_nb.redact`). Spans hold no key and no URL (see otel.py);
message content only with `include_content=True`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from .._backend_errors import backend_error, page_text
from ..errors import BackendError, RigError
from ..redact import Redactor
from ..trace import Trace
from .otel import to_otel

__all__ = ["MAX_BATCH_SPANS", "export_otlp", "otlp_request"]

MAX_BATCH_SPANS = 8192  # spans per request; a larger export is sent in several
_ERROR_BYTES = 16_384  # of a refusal's body, read for its message
_MESSAGE_CHARS = 300
_PREFIX = "ai backend: OTLP export: "


def _proto() -> tuple[Any, Any, Any, Any]:
    try:
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
        from opentelemetry.proto.common.v1 import common_pb2
        from opentelemetry.proto.resource.v1 import resource_pb2
        from opentelemetry.proto.trace.v1 import trace_pb2
    except ImportError:
        raise ImportError(
            "export_otlp needs opentelemetry-proto: pip install 'rig_nb[otlp]'"
        ) from None
    return trace_service_pb2, common_pb2, resource_pb2, trace_pb2


def _any_value(common: Any, target: Any, value: Mapping[str, Any]) -> None:
    """Fill the AnyValue `target` from its OTLP/JSON form."""
    if "stringValue" in value:
        target.string_value = value["stringValue"]
    elif "intValue" in value:
        target.int_value = int(value["intValue"])
    elif "doubleValue" in value:
        target.double_value = value["doubleValue"]
    elif "boolValue" in value:
        target.bool_value = value["boolValue"]
    elif "arrayValue" in value:
        array = target.array_value
        for item in value["arrayValue"].get("values", []):
            _any_value(common, array.values.add(), item)


def _attributes(common: Any, target: Any, attributes: Iterable[Mapping[str, Any]]) -> None:
    for attribute in attributes:
        kv = target.add()
        kv.key = attribute["key"]
        _any_value(common, kv.value, attribute["value"])


def otlp_request(otel: Iterable[Mapping[str, Any]]) -> Any:
    """One `ExportTraceServiceRequest` of the spans of `to_otel` outputs (OTLP/JSON dicts:
    hex ids become bytes), one resource and scope per output."""
    service, common, _, trace_pb = _proto()
    request = service.ExportTraceServiceRequest()
    for out in otel:
        for rs in out["resourceSpans"]:
            resource_spans = request.resource_spans.add()
            _attributes(common, resource_spans.resource.attributes, rs["resource"]["attributes"])
            for ss in rs["scopeSpans"]:
                scope_spans = resource_spans.scope_spans.add()
                scope_spans.scope.name = ss["scope"]["name"]
                scope_spans.scope.version = ss["scope"]["version"]
                for span in ss["spans"]:
                    s = scope_spans.spans.add()
                    s.trace_id = bytes.fromhex(span["traceId"])
                    s.span_id = bytes.fromhex(span["spanId"])
                    if span.get("parentSpanId"):
                        s.parent_span_id = bytes.fromhex(span["parentSpanId"])
                    s.name = span["name"]
                    s.kind = span["kind"]
                    s.start_time_unix_nano = int(span["startTimeUnixNano"])
                    s.end_time_unix_nano = int(span["endTimeUnixNano"])
                    _attributes(common, s.attributes, span["attributes"])
                    status = span.get("status")
                    if status:
                        s.status.code = status["code"]
                        s.status.message = status.get("message", "")
    return request


def _check(endpoint: object, headers: object, deadline: object) -> dict[str, str]:
    if not isinstance(endpoint, str) or urlsplit(endpoint).scheme not in ("http", "https"):
        raise ValueError("endpoint must be an http:// or https:// URL (the collector's /v1/traces)")
    if not urlsplit(endpoint).hostname:
        raise ValueError("endpoint has no host")
    if isinstance(deadline, bool) or not isinstance(deadline, int | float):
        raise ValueError("deadline must be a number of seconds > 0")
    if not (math.isfinite(deadline) and deadline > 0):
        raise ValueError("deadline must be a number of seconds > 0")
    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise TypeError("headers must be a mapping of header names to values")
    out: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError("header names and values must be strings")
        if any(c in name or c in value for c in "\r\n\0") or not name.strip():
            raise ValueError(f"header {name[:40]!r} holds a line break or is empty")
        out[name] = value
    return out


class _Redactions:
    """The collector's URL and every header's value (and its long words), masked."""

    def __init__(self, endpoint: str, headers: Mapping[str, str]) -> None:
        self._redactors = [Redactor("", [endpoint])]
        for value in headers.values():
            self._redactors.append(Redactor(value))
            self._redactors += [Redactor(word) for word in value.split() if len(word) >= 8]

    def __call__(self, text: str) -> str:
        for redact in self._redactors:
            text = redact(text)
        return text


def _send(http: Any, endpoint: str, headers: dict[str, str], body: bytes, redact: Any) -> None:
    from .._transport import remaining

    with http.stream("POST", endpoint, content=body, headers=headers) as response:
        status = response.status_code
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if 200 <= status < 300 and kind != "text/html":
            return
        raw = b""
        # Raw bytes, never decompressed (a small gzip body may inflate without bound); the
        # request asked for none, and a compressed refusal is reported without its words.
        compressed = response.headers.get("content-encoding", "identity").lower() != "identity"
        for chunk in () if compressed else response.iter_raw():
            remaining()  # a body dripped past the deadline ends there
            raw += chunk
            if len(raw) >= _ERROR_BYTES:
                break
    said = redact(page_text(raw[:_ERROR_BYTES].decode("utf-8", "replace")))[:_MESSAGE_CHARS]
    if 200 <= status < 300:
        raise BackendError(
            f"{_PREFIX}the collector answered {status} with an HTML page, not OTLP (a login "
            "page or a proxy in front of it?)" + (f": {said}" if said else ""),
            kind="reply",
        )
    if 300 <= status < 400:
        what = f"HTTP {status}: a redirect (not followed: give the collector's own URL)"
    else:
        what = f"HTTP {status}" + (f": {said}" if said else "")
    raise BackendError(_PREFIX + what, status_code=status, kind="http")


def export_otlp(
    traces: Trace | Iterable[Trace],
    endpoint: str,
    *,
    headers: Mapping[str, str] | None = None,
    include_content: bool = False,
    deadline: float = 10.0,
) -> None:
    """Send the traces' spans (`to_otel`) to the OTLP/HTTP collector at `endpoint` (the full
    `.../v1/traces` URL) as protobuf, within `deadline` seconds in all; BackendError on any
    failure (kind connect, deadline, http or reply), naming no URL and no header value."""
    from .._transport import deadline_scope, pool_transport
    from ..http_backend import _shared_ssl_context

    sent = _check(endpoint, headers, deadline)
    items = [traces] if isinstance(traces, Trace) else list(traces)
    bad = [n for n, t in enumerate(items) if not isinstance(t, Trace)]
    if bad:
        raise TypeError(f"item {bad[0]} is a {type(items[bad[0]]).__name__}, not a Trace")
    batches: list[list[dict[str, Any]]] = [[]]
    count = 0
    for trace in items:
        out = to_otel(trace, include_content=include_content)
        n = sum(len(ss["spans"]) for rs in out["resourceSpans"] for ss in rs["scopeSpans"])
        if count and count + n > MAX_BATCH_SPANS:
            batches.append([])
            count = 0
        batches[-1].append(out)
        count += n
    bodies = [otlp_request(batch).SerializeToString() for batch in batches if batch]
    import httpx

    redact = _Redactions(endpoint, sent)
    wire = {**sent, "Content-Type": "application/x-protobuf", "Accept-Encoding": "identity"}
    # trust_env=False: no proxies, no netrc, no SSL_CERT_* from the environment.
    http = httpx.Client(
        transport=pool_transport(_shared_ssl_context()),
        trust_env=False,
        timeout=float(deadline),
        follow_redirects=False,
    )
    try:
        with deadline_scope(float(deadline)):
            for body in bodies:
                try:
                    _send(http, endpoint, wire, body, redact)
                except RigError:
                    raise
                except Exception as exc:
                    error = backend_error(exc, Redactor(), float(deadline))
                    message = redact(error.message).removeprefix("ai backend: ")
                    raise BackendError(_PREFIX + message, kind=error.kind) from None
    finally:
        http.close()
