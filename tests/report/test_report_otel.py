"""rig_nb.report: OTLP/JSON spans of traces (to_otel)."""

from __future__ import annotations

import base64
import copy
import json
import re
from typing import Any

import pytest
from report_runs import SECRET, run_trace

from rig_nb import Client, Iteration, RigError, RunRequest, ToolCallRecord, Trace
from rig_nb.demo import DEMO_PROMPT, DemoServer
from rig_nb.report import to_otel
from rig_nb.testing import Response, ScriptedServer

START_NS = 1_700_000_000_000_000_000
HEX32, HEX16 = re.compile(r"[0-9a-f]{32}"), re.compile(r"[0-9a-f]{16}")
CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


def otlp_parse(out: dict[str, Any]) -> Any:
    """The OpenTelemetry protobuf parser's reading of OTLP/JSON (hex ids made base64 first:
    json_format reads bytes fields as base64, where OTLP/JSON writes them as hex)."""
    # The test extra installs them: a missing parser is a failure, not a skip.
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as pb

    msg = copy.deepcopy(out)
    for rs in msg["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return json_format.Parse(json.dumps(msg), pb.ExportTraceServiceRequest())


def value_of(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(v) for v in any_value.array_value.values]
    return getattr(any_value, kind)


def attrs_of(span: Any) -> dict[str, Any]:
    return {kv.key: value_of(kv.value) for kv in span.attributes}


def spans_of(out: dict[str, Any]) -> list[Any]:
    request = otlp_parse(out)
    (rs,) = request.resource_spans
    assert attrs_of(rs.resource) == {"service.name": "rig_nb"}
    (ss,) = rs.scope_spans
    assert ss.scope.name == "rig_nb"
    return list(ss.spans)


def assert_raw_form(out: dict[str, Any]) -> None:
    """The OTLP/JSON encoding itself: hex ids, times and ints as strings of digits."""
    for span in out["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        assert HEX32.fullmatch(span["traceId"]) and HEX16.fullmatch(span["spanId"])
        assert HEX16.fullmatch(span.get("parentSpanId", "0" * 16))
        assert span["startTimeUnixNano"].isdigit() and span["endTimeUnixNano"].isdigit()
        for attr in span["attributes"]:
            if "intValue" in attr["value"]:
                assert re.fullmatch(r"-?\d+", attr["value"]["intValue"])


def test_otel_spans_of_a_tool_run(demo: DemoServer) -> None:
    trace = run_trace(demo, "well-behaved")
    assert trace.outcome == "ok" and len(trace.iterations) == 3
    out = to_otel(trace, start_time_unix_nano=START_NS)
    assert_raw_form(out)
    spans = spans_of(out)
    root, *rest = spans
    assert root.name == "invoke_agent rig_nb" and not root.parent_span_id
    assert root.kind == 1 and root.start_time_unix_nano == START_NS
    assert {s.trace_id for s in spans} == {root.trace_id} and len(root.trace_id) == 16
    assert len({s.span_id for s in spans}) == len(spans)
    chats = [s for s in rest if s.parent_span_id == root.span_id]
    assert [s.name for s in chats] == ["chat well-behaved"] * 3
    host, port = trace.endpoint.rsplit(":", 1)
    for chat, it in zip(chats, trace.iterations, strict=True):
        a = attrs_of(chat)
        assert chat.kind == 3
        assert a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.provider.name"] == "openai"
        assert a["gen_ai.request.model"] == "well-behaved"
        assert a["gen_ai.usage.input_tokens"] == it.usage["prompt_tokens"]
        assert a["gen_ai.usage.output_tokens"] == it.usage["completion_tokens"]
        assert a["gen_ai.response.finish_reasons"] == [it.finish_reason]
        assert (a["server.address"], a["server.port"]) == (host, int(port))
        assert a["gen_ai.request.max_tokens"] == 512
        assert chat.end_time_unix_nano - chat.start_time_unix_nano == int(it.latency_s * 1e9)
        tools = [s for s in rest if s.parent_span_id == chat.span_id]
        assert [s.name for s in tools] == [f"execute_tool {c.name}" for c in it.tool_calls]
        for span, call in zip(tools, it.tool_calls, strict=True):
            t = attrs_of(span)
            assert span.kind == 1 and span.start_time_unix_nano >= chat.end_time_unix_nano
            assert t["gen_ai.operation.name"] == "execute_tool"
            assert (t["gen_ai.tool.name"], t["gen_ai.tool.call.id"]) == (call.name, call.id)
            assert "error.type" not in t and span.status.code == 0
    assert len(rest) == 3 + len(trace.tool_calls)
    a = attrs_of(root)
    assert a["gen_ai.operation.name"] == "invoke_agent" and a["gen_ai.agent.name"] == "rig_nb"
    assert a["gen_ai.usage.input_tokens"] == trace.usage().prompt_tokens
    assert root.end_time_unix_nano >= max(s.end_time_unix_nano for s in rest)
    for span in spans:
        assert not CONTENT_KEYS & set(attrs_of(span))
    assert SECRET not in json.dumps(out)


def test_otel_content_only_when_asked(demo: DemoServer) -> None:
    trace = run_trace(demo, "html-injector")
    out = to_otel(trace, include_content=True, start_time_unix_nano=START_NS)
    spans = spans_of(out)
    assert SECRET not in json.dumps(out)
    chats = [s for s in spans if s.name.startswith("chat ")]
    first = attrs_of(chats[0])
    inputs = json.loads(first["gen_ai.input.messages"])
    assert [m["role"] for m in inputs] == ["system", "user"]
    assert inputs[1]["parts"] == [{"type": "text", "content": DEMO_PROMPT}]
    outputs = json.loads(first["gen_ai.output.messages"])
    assert outputs[0]["role"] == "assistant" and outputs[0]["finish_reason"] == "tool_call"
    parts = outputs[0]["parts"]
    assert parts[0] == {"type": "reasoning", "content": trace.iterations[0].reasoning_content}
    calls = [p for p in parts if p["type"] == "tool_call"]
    assert calls[0]["arguments"] == json.loads(trace.tool_calls[0].arguments)
    second = json.loads(attrs_of(chats[1])["gen_ai.input.messages"])
    assert second[-1]["parts"][0]["type"] == "tool_call_response"
    tools = [s for s in spans if s.name.startswith("execute_tool ")]
    t = attrs_of(tools[0])
    assert t["gen_ai.tool.call.arguments"] == trace.tool_calls[0].arguments
    # The demo's injected arguments make the tool fail: an error, and no result attribute.
    assert trace.tool_calls[0].is_error and "gen_ai.tool.call.result" not in t
    assert (t["error.type"], tools[0].status.code) == ("ValueError", 2)
    assert tools[0].status.message == trace.tool_calls[0].result
    without = spans_of(to_otel(trace, start_time_unix_nano=START_NS))
    assert [s.name for s in without] == [s.name for s in spans]
    for span in without:
        assert not CONTENT_KEYS & set(attrs_of(span))
        assert trace.tool_calls[0].result not in span.status.message


def test_otel_errors(demo: DemoServer) -> None:
    budget = run_trace(demo, "budget-think")
    spans = spans_of(to_otel(budget))
    root, chat = spans
    assert root.status.code == chat.status.code == 2
    assert attrs_of(root)["error.type"] == attrs_of(chat)["error.type"] == "OutputLimitError"
    assert attrs_of(chat)["gen_ai.response.finish_reasons"] == ["length"]
    assert chat.status.message.startswith("OutputLimitError: ")
    spinner = run_trace(demo, "tool-spinner")
    failed = [s for s in spans_of(to_otel(spinner)) if s.status.code == 2]
    tool = [s for s in failed if s.name.startswith("execute_tool")]
    assert tool and attrs_of(tool[0])["error.type"] == "_OTHER"
    reply = Response({"error": {"message": "model crashed", "type": "server_error"}}, status=500)
    with ScriptedServer([reply]) as server, Client(server.base_url, max_retries=0) as client:
        try:
            client.run(RunRequest("m", 64, prompt="hi"))
        except RigError as exc:
            assert exc.trace is not None
            trace = exc.trace
    root, chat = spans_of(to_otel(trace))
    a = attrs_of(chat)
    assert a["error.type"] == "BackendError" and "gen_ai.response.finish_reasons" not in a
    assert "model crashed" in chat.status.message and root.status.code == 2


@pytest.mark.parametrize(
    ("outcome", "code", "message"),
    [
        pytest.param("ok", 1, "", id="ok"),
        pytest.param("text_tool_calls", 2, "text_tool_calls", id="text-tool-calls"),
        pytest.param("reasoning_only", 2, "reasoning_only", id="reasoning-only"),
        pytest.param("BackendError", 2, "BackendError", id="error"),
        pytest.param("", 0, "", id="unfinished"),
    ],
)
def test_otel_run_status_is_the_outcome(outcome: str, code: int, message: str) -> None:
    ending = {"ok": "answer", "BackendError": "error"}.get(outcome, outcome)
    error = "BackendError: HTTP 500: model crashed" if outcome == "BackendError" else ""
    it = Iteration(ending=ending, finish_reason="stop", error=error)
    root, chat = spans_of(to_otel(Trace(model="m", outcome=outcome, iterations=[it])))
    assert (root.status.code, root.status.message) == (code, message)
    a = attrs_of(root)
    assert a.get("error.type") == (outcome if code == 2 else None)
    assert a.get("rig_nb.outcome") == (outcome or None)
    # An iteration's span fails only where the iteration holds an error (its text is the
    # message there); a turn that ended without an answer is not an error of its request.
    assert (chat.status.code, chat.status.message) == ((2, error) if error else (0, ""))


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        pytest.param("gpu.lan:8000", {"server.address": "gpu.lan", "server.port": 8000}, id="host"),
        pytest.param("[::1]:8080", {"server.address": "::1", "server.port": 8080}, id="ipv6"),
        pytest.param("gpu.lan", {"server.address": "gpu.lan"}, id="no-port"),
        pytest.param("gpu:99999", {"server.address": "gpu:99999"}, id="bad-port"),
        pytest.param("", {}, id="none"),
    ],
)
def test_otel_server_address(endpoint: str, expected: dict[str, Any]) -> None:
    trace = Trace(model="m", endpoint=endpoint, iterations=[Iteration()], outcome="ok")
    for span in spans_of(to_otel(trace)):
        got = {k: v for k, v in attrs_of(span).items() if k.startswith("server.")}
        assert got == expected


def test_otel_survives_any_numbers() -> None:
    it = Iteration(
        usage={"prompt_tokens": 2**63, "completion_tokens": 10**30, "reasoning_tokens": -5},
        latency_s=float("nan"),
        tool_calls=[
            ToolCallRecord(id="c1", name="t", duration_s=float("inf")),
            ToolCallRecord(id="c2", name="t", duration_s=1e300),
        ],
        finish_reason="stop",
    )
    trace = Trace(model="", settings={"max_tokens": True, "temperature": 1e308}, iterations=[it])
    trace.elapsed_s = -1.0
    out = to_otel(trace, start_time_unix_nano=2**63 - 1)
    assert_raw_form(out)
    root, chat, unknown, huge = spans_of(out)
    assert chat.name == "chat"
    a = attrs_of(chat)
    assert not {k for k in a if k.startswith("gen_ai.usage.")}
    assert "gen_ai.request.max_tokens" not in a and a["gen_ai.request.temperature"] == 1e308
    assert chat.start_time_unix_nano == chat.end_time_unix_nano == 2**63 - 1
    assert unknown.end_time_unix_nano == unknown.start_time_unix_nano  # no duration known
    assert huge.end_time_unix_nano - huge.start_time_unix_nano == 10**15  # held to 11.6 days
    assert root.end_time_unix_nano == huge.end_time_unix_nano
    with pytest.raises(ValueError, match="start_time_unix_nano"):
        to_otel(trace, start_time_unix_nano=-1)
    with pytest.raises(TypeError, match="takes a Trace"):
        to_otel({"model": "m"})  # type: ignore[arg-type]


def test_otlp_times_stay_within_uint64_over_a_long_trace() -> None:
    # Issue 45: each span is held to 11.6 days, but a long trace of such spans was laid out
    # past 2**64 - 1 ns, which protobuf's fixed64 refuses.
    its = [
        Iteration(
            index=n,
            latency_s=1e7,
            finish_reason="tool_calls",
            tool_calls=[ToolCallRecord(id=f"c{n}", name="t", duration_s=1e7)],
        )
        for n in range(5_000)
    ]
    trace = Trace(model="m", iterations=its, outcome="ok", elapsed_s=1e300)
    out = to_otel(trace, start_time_unix_nano=2**63 - 1)
    assert_raw_form(out)
    raw = out["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert len(raw) == 1 + 2 * len(its)
    times = [(int(s["startTimeUnixNano"]), int(s["endTimeUnixNano"])) for s in raw]
    assert all(2**63 - 1 <= start <= end <= 2**64 - 1 for start, end in times)
    assert times[0][1] == times[-1][1] == 2**64 - 1  # the run and its last span end there
    # The protobuf parser reads the last spans (and the run's), where the times are held.
    out["resourceSpans"][0]["scopeSpans"][0]["spans"] = [raw[0], *raw[-3:]]
    parsed = spans_of(out)
    assert [s.end_time_unix_nano for s in parsed] == [2**64 - 1] * 4
