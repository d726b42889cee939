"""A Trace as OTLP/JSON spans, following the OpenTelemetry GenAI semantic conventions.

Which conventions (semantic-conventions-genai, all at Development status):
- The run is the "invoke agent internal span" (the loop runs in this process):
  `invoke_agent rig_nb`, kind INTERNAL, `gen_ai.operation.name` "invoke_agent",
  `gen_ai.agent.name` "rig_nb", usage summed over the run.
- Each iteration is an inference span `chat {model}`, kind CLIENT, a child of the run.
- Each tool call is `execute_tool {name}`, kind INTERNAL, a child of its iteration's span.
- `gen_ai.provider.name` is "openai": the conventions take it as the telemetry flavour
  (the OpenAI Chat Completions API here) and let `server.address` tell the actual server.
- Content (`gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.tool.call.arguments`,
  `gen_ai.tool.call.result`) only on request, as JSON strings: the conventions allow that on
  spans where structured attributes are not supported (the OpenTelemetry Python SDK).
- The run span's status is `Trace.outcome` and nothing else: OK only for "ok"; any other
  outcome (an error class, or the ending of a run that returned without an answer, such as
  `text_tool_calls`) is ERROR with the outcome as `error.type` and as the message; unset
  while the run has none. An iteration's or a tool call's span is ERROR when it holds an error.
- What the conventions do not name is under `rig_nb.` (ending, reasoning shape, leaks).

A trace records durations, not clock times: spans are laid out one after another from a
start time, each chat span lasting its `latency_s` and each tool span its `duration_s` right
after its iteration's reply (so a tool span follows its parent, as the loop ran it). Ids are
random; OTLP/JSON writes them as hex (unlike protobuf's JSON mapping, which uses base64).
The trace holds no API key, so none can reach the spans.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from .. import strict_json
from .._version import __version__
from ..trace import Iteration, ToolCallRecord, Trace

__all__ = ["AGENT_NAME", "PROVIDER_NAME", "to_otel"]

AGENT_NAME = "rig_nb"
PROVIDER_NAME = "openai"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# One span never lasts longer than this (11.6 days); no time is laid out past OTLP's
# fixed64 (a long trace of long spans would pass it).
_MAX_SPAN_NS = 10**15
_MAX_TIME_NS = 2**64 - 1
_KIND_INTERNAL, _KIND_CLIENT = 1, 3
_STATUS_OK, _STATUS_ERROR = 1, 2
# OpenAI's finish reasons as the output-messages schema names them.
_FINISH = {"tool_calls": "tool_call", "function_call": "tool_call"}


def _value(v: Any) -> dict[str, Any] | None:
    """An OTLP AnyValue, or None for what cannot be one (out-of-range int, NaN, other types)."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)} if _INT64_MIN <= v <= _INT64_MAX else None
    if isinstance(v, float):
        return {"doubleValue": v} if math.isfinite(v) else None
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, list | tuple):
        values = [x for x in map(_value, v) if x is not None]
        return {"arrayValue": {"values": values}}
    return None


def _attributes(pairs: Iterable[tuple[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for key, v in pairs:
        value = None if v is None else _value(v)
        if value is not None:
            out.append({"key": key, "value": value})
    return out


def _count(v: Any) -> int | None:
    ok = isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= _INT64_MAX
    return v if ok else None


def _number(v: Any) -> float | int | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return v if math.isfinite(v) else None


def _ns(seconds: float) -> int:
    if not isinstance(seconds, int | float) or not math.isfinite(seconds) or seconds <= 0:
        return 0
    return min(int(min(seconds, _MAX_SPAN_NS / 1e9) * 1e9), _MAX_SPAN_NS)


def _after(time_ns: int, seconds: float) -> int:
    """The time `seconds` after `time_ns`, held to what OTLP's fixed64 holds."""
    return min(time_ns + _ns(seconds), _MAX_TIME_NS)


def _server(endpoint: str) -> list[tuple[str, Any]]:
    """server.address and server.port from an endpoint label such as `host:8000` or `[::1]:80`."""
    if not endpoint:
        return []
    try:
        parts = urlsplit("//" + endpoint)
        host, port = parts.hostname, parts.port
    except ValueError:
        return [("server.address", endpoint)]
    if not host:
        return [("server.address", endpoint)]
    return [("server.address", host), ("server.port", port)]


def _error_type(error: str) -> str:
    """The class name of an iteration's "Class: message" error text."""
    head = error.split(":", 1)[0].strip()
    return head if head and head.isidentifier() else "_OTHER"


def _maybe_json(text: Any) -> Any:
    """A JSON object decoded from text when it is one (as the conventions ask), else the text."""
    if not isinstance(text, str):
        return text
    try:
        value = strict_json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, dict) else text


def _dumps(value: Any, fallback: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (ValueError, TypeError, RecursionError):
        pass
    try:
        return json.dumps(fallback, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):
        return "[]"


def _tool_call_part(call_id: Any, name: Any, arguments: Any, parse: bool) -> dict[str, Any]:
    args = _maybe_json(arguments) if parse else arguments
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": args}


def _input_messages(messages: list[dict[str, Any]], parse: bool) -> list[dict[str, Any]]:
    """Chat Completions messages in the conventions' input-messages shape (role and parts)."""
    out = []
    for m in messages:
        if not isinstance(m, dict):
            out.append({"role": "user", "parts": [{"type": "text", "content": str(m)}]})
            continue
        role = m.get("role") if isinstance(m.get("role"), str) else "user"
        content = m.get("content")
        parts: list[dict[str, Any]] = []
        if role == "tool":
            parts.append(
                {"type": "tool_call_response", "id": m.get("tool_call_id"), "response": content}
            )
        elif isinstance(content, str):
            if content:
                parts.append({"type": "text", "content": content})
        elif isinstance(content, list):
            for p in content:
                if isinstance(p, dict) and p.get("type") == "text":
                    parts.append({"type": "text", "content": p.get("text", "")})
                else:
                    parts.append(p if isinstance(p, dict) and "type" in p else {"type": "other"})
        calls = m.get("tool_calls")
        for tc in calls if isinstance(calls, list) else []:
            fn = tc.get("function") if isinstance(tc, dict) else None
            if isinstance(fn, dict):
                part = _tool_call_part(tc.get("id"), fn.get("name"), fn.get("arguments"), parse)
                parts.append(part)
        out.append({"role": role, "parts": parts})
    return out


def _output_messages(it: Iteration, parse: bool) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if it.reasoning_content:
        parts.append({"type": "reasoning", "content": it.reasoning_content})
    if it.raw_content:
        parts.append({"type": "text", "content": it.raw_content})
    parts += [_tool_call_part(c.id, c.name, c.arguments, parse) for c in it.tool_calls]
    if not parts and not it.finish_reason:
        return []
    finish = _FINISH.get(it.finish_reason, it.finish_reason) or ("error" if it.error else "")
    return [{"role": "assistant", "parts": parts, "finish_reason": finish}]


class _Ids:
    """Random non-zero span ids, unique within one trace."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def new(self, n: int = 8) -> str:
        while True:
            value = os.urandom(n).hex()
            if value.strip("0") and value not in self.seen:
                self.seen.add(value)
                return value


def _usage_pairs(usage: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        ("gen_ai.usage.input_tokens", _count(usage.get("prompt_tokens"))),
        ("gen_ai.usage.output_tokens", _count(usage.get("completion_tokens"))),
        ("gen_ai.usage.reasoning.output_tokens", _count(usage.get("reasoning_tokens"))),
        ("gen_ai.usage.cache_read.input_tokens", _count(usage.get("cached_tokens"))),
    ]


def _span(
    trace_id: str,
    span_id: str,
    parent: str,
    name: str,
    kind: int,
    start: int,
    end: int,
    attributes: list[dict[str, Any]],
    error: str | None,
    *,
    ok: bool = False,
) -> dict[str, Any]:
    """One span; status ERROR with `error` as its message, else OK when `ok`, else unset."""
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": kind,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": attributes,
    }
    if parent:
        span["parentSpanId"] = parent
    if error is not None:
        span["status"] = {"code": _STATUS_ERROR, "message": error}
    elif ok:
        span["status"] = {"code": _STATUS_OK}
    return span


def _chat_attributes(
    trace: Trace, it: Iteration, server: list[tuple[str, Any]], content: bool
) -> list[dict[str, Any]]:
    settings = trace.settings if isinstance(trace.settings, dict) else {}
    pairs: list[tuple[str, Any]] = [
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.provider.name", PROVIDER_NAME),
        ("gen_ai.request.model", trace.model or None),
        *server,
        ("openai.api.type", "chat_completions"),
        ("gen_ai.request.max_tokens", _count(settings.get("max_tokens"))),
        ("gen_ai.request.temperature", _number(settings.get("temperature"))),
        ("gen_ai.request.stream", True if it.streamed else None),
        ("gen_ai.response.finish_reasons", [it.finish_reason] if it.finish_reason else None),
        *_usage_pairs(it.usage),
        ("gen_ai.response.time_to_first_chunk", it.ttft_s if it.streamed and it.chunks else None),
        ("error.type", _error_type(it.error) if it.error else None),
        ("rig_nb.iteration", it.index),
        ("rig_nb.ending", it.ending or None),
        ("rig_nb.reasoning_shape", it.reasoning_shape or None),
        ("rig_nb.reasoning_field", it.reasoning_field or None),
        ("rig_nb.leaks", list(it.leaks) or None),
        ("rig_nb.context_cut", True if it.context_cut else None),
    ]
    if content:
        inputs = _dumps(_input_messages(it.messages, True), _input_messages(it.messages, False))
        outputs = _output_messages(it, True)
        pairs.append(("gen_ai.input.messages", inputs))
        if outputs:
            pairs.append(("gen_ai.output.messages", _dumps(outputs, _output_messages(it, False))))
    return _attributes(pairs)


def _tool_attributes(call: ToolCallRecord, content: bool) -> list[dict[str, Any]]:
    pairs: list[tuple[str, Any]] = [
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", call.name),
        ("gen_ai.tool.call.id", call.id or None),
        ("gen_ai.tool.type", "function"),
        ("error.type", (call.error_type or "_OTHER") if call.is_error else None),
        ("rig_nb.tool.source", call.source or None),
    ]
    if content:
        pairs.append(("gen_ai.tool.call.arguments", call.arguments))
        if not call.is_error:  # the conventions: the result "if execution was successful"
            pairs.append(("gen_ai.tool.call.result", call.result))
    return _attributes(pairs)


def to_otel(
    trace: Trace, *, include_content: bool = False, start_time_unix_nano: int | None = None
) -> dict[str, Any]:
    """The trace as OTLP/JSON (`{"resourceSpans": [...]}`), GenAI semantic conventions.

    One `invoke_agent rig_nb` span, a `chat {model}` span per iteration under it, and an
    `execute_tool {name}` span per tool call under its iteration. Message content, tool
    arguments and results only with `include_content=True`. Spans are laid out from
    `start_time_unix_nano` (default: now) using the recorded durations.
    """
    if not isinstance(trace, Trace):
        raise TypeError(f"to_otel takes a Trace, not {type(trace).__name__}")
    if start_time_unix_nano is None:
        start_time_unix_nano = time.time_ns()
    start = start_time_unix_nano
    if isinstance(start, bool) or not isinstance(start, int) or not 0 <= start <= _INT64_MAX:
        raise ValueError("start_time_unix_nano must be an int from 0 to 2**63 - 1")
    ids = _Ids()
    trace_id, root_id = ids.new(16), ids.new()
    server = _server(trace.endpoint)
    spans: list[dict[str, Any]] = []
    cursor = start
    for it in trace.iterations:
        chat_id = ids.new()
        end = _after(cursor, it.latency_s)
        name = f"chat {trace.model}" if trace.model else "chat"
        error = it.error if it.error else None
        attrs = _chat_attributes(trace, it, server, include_content)
        spans.append(
            _span(trace_id, chat_id, root_id, name, _KIND_CLIENT, cursor, end, attrs, error)
        )
        cursor = end
        for call in it.tool_calls:
            end = _after(cursor, call.duration_s)
            failed = (call.result if include_content else call.error_type or "tool error") or ""
            spans.append(
                _span(
                    trace_id,
                    ids.new(),
                    chat_id,
                    f"execute_tool {call.name}",
                    _KIND_INTERNAL,
                    cursor,
                    end,
                    _tool_attributes(call, include_content),
                    failed if call.is_error else None,
                )
            )
            cursor = end
    failed_run = trace.outcome not in ("", "ok")
    total: dict[str, Any] = {}
    if any(it.usage for it in trace.iterations):
        usage = trace.usage()
        total = {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "reasoning_tokens": usage.reasoning_tokens,
            "cached_tokens": usage.cached_tokens,
        }
    root_attrs = _attributes(
        [
            ("gen_ai.operation.name", "invoke_agent"),
            ("gen_ai.provider.name", PROVIDER_NAME),
            ("gen_ai.agent.name", AGENT_NAME),
            ("gen_ai.request.model", trace.model or None),
            *server,
            *_usage_pairs(total),
            ("error.type", trace.outcome if failed_run else None),
            ("rig_nb.outcome", trace.outcome or None),
            ("rig_nb.ending", trace.ending or None),
            ("rig_nb.leaks", trace.leaks() or None),
        ]
    )
    root_end = max(cursor, _after(start, trace.elapsed_s))
    root = _span(
        trace_id,
        root_id,
        "",
        f"invoke_agent {AGENT_NAME}",
        _KIND_INTERNAL,
        start,
        root_end,
        root_attrs,
        trace.outcome if failed_run else None,
        ok=trace.outcome == "ok",
    )
    resource = {"attributes": _attributes([("service.name", AGENT_NAME)])}
    scope = {"name": AGENT_NAME, "version": __version__}
    return {
        "resourceSpans": [
            {"resource": resource, "scopeSpans": [{"scope": scope, "spans": [root, *spans]}]}
        ]
    }
