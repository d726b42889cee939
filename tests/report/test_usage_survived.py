"""Every usage number an endpoint sends is survived everywhere it is rendered or exported
(issue 45): a count past float range (10**400), past int64 (2**63), absurd (10**12) or
negative, on every wire, whole and streamed, in every count the wire has. No renderer
raises (TraceView, the HTML report, compare's DataFrame and summarize, to_otel and
export_otlp, the CLI's text, the timeline, Trace.to_json/from_json), and no iteration is
marked cut by a number the server did not mean.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import cli
from collector import Collector, spans

from rig_nb import Client, RunRequest, Trace
from rig_nb._svg import timeline_svg
from rig_nb.compare import Endpoint, Scenario, compare, summarize
from rig_nb.demo import DemoServer, demo_tools
from rig_nb.report import export_otlp, save_html, to_otel
from rig_nb.testing import LoopbackServer, RecordedRequest, Response, chat_reply, tool_call
from rig_nb.wire import WIRES

WIRE_NAMES = list(WIRES)
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
# Counts no server means: past float range, past int64, past any window, below zero.
LIES = {
    "past-float": 10**400,
    "past-int64": 2**63,
    "absurd": 10**12,
    "negative": -60,
}
SMALL = {"prompt_tokens": 40, "completion_tokens": 5}


def lying_usage(lie: int) -> dict[str, Any]:
    """Every count a chat usage has, each `lie` (the local servers carry them over to each
    wire's own names: input/output tokens, cache_read_input_tokens, eval counts...)."""
    return {
        "prompt_tokens": lie,
        "completion_tokens": lie,
        "total_tokens": lie,
        "prompt_tokens_details": {"cached_tokens": lie},
        "completion_tokens_details": {"reasoning_tokens": lie},
    }


def _after_tool(body: Any) -> bool:
    text = json.dumps(body)
    return any(m in text for m in ('"role": "tool"', '"tool_result"', '"function_call_output"'))


class Lying(LoopbackServer):
    """Every wire's route: a first turn that calls get_weather with every count `lie`, then
    an answer with small counts; the model list answers too."""

    def __init__(self, lie: int) -> None:
        super().__init__()
        self.lie = lie

    def handle(self, request: RecordedRequest) -> Response | Mapping[str, Any]:
        from rig_nb.testing import as_message, as_response, streamed, wants_stream
        from rig_nb.wire.ollama.serve import ndjson_body, ollama_lines, ollama_reply

        path = request.path.split("?")[0].rstrip("/")
        if request.method == "GET":
            return {"object": "list", "data": [{"id": "m", "owned_by": "someone"}]}
        body = request.json
        if _after_tool(body):
            reply = chat_reply("It is 18 C in Paris.", usage=SMALL)
        else:
            call = tool_call("get_weather", {"city": "Paris"}, id="toolu_1")
            reply = chat_reply(tool_calls=[call], usage=lying_usage(self.lie))
        stream = wants_stream(request)
        if path.endswith("/responses"):
            return as_response(reply, stream=stream)
        if path.endswith("/messages"):
            return as_message(reply, stream=stream)
        if path.endswith("/api/chat"):
            if not stream:
                return ollama_reply(reply)
            return Response(ndjson_body(ollama_lines(reply)))
        return streamed(reply) if stream else reply


@pytest.fixture(params=list(LIES), ids=list(LIES))
def lying(request: pytest.FixtureRequest) -> Iterator[Lying]:
    with Lying(LIES[request.param]) as server:
        yield server  # type: ignore[misc]


def run_over(server: Lying, api: str, stream: bool) -> Trace:
    with Client(server.base_url, api=api, max_retries=0) as client:
        return client.run_trace(
            RunRequest("m", 64, prompt="Weather in Paris?", tools=demo_tools(), stream=stream)
        )


def _kept(trace: Trace) -> None:
    """What the trace keeps: every count as an int, as the server sent it."""
    for it in trace.iterations:
        for name, value in it.usage.items():
            assert isinstance(value, int) and not isinstance(value, bool), (name, value)


@pytest.mark.parametrize("api", WIRE_NAMES)
@STREAMS
def test_a_lying_count_is_kept_and_marks_no_cut(lying: Lying, api: str, stream: bool) -> None:
    trace = run_over(lying, api, stream)
    assert trace.outcome == "ok", (trace.outcome, trace.error)
    assert [it.context_cut for it in trace.iterations] == [False, False]
    _kept(trace)
    assert trace.iterations[1].usage["prompt_tokens"] == 40
    assert trace.prefix_reuse == [None, None]
    assert trace.iterations[0].decode_tok_s is None or trace.iterations[0].decode_tok_s >= 0


def test_a_negative_cache_count_on_messages_is_no_cut() -> None:
    # Messages counts the cached part into the prompt: a negative one made the prompt shrink.
    from rig_nb.testing import ScriptedServer

    first = chat_reply(tool_calls=[tool_call("get_weather", {"city": "Paris"}, id="toolu_1")])
    first["usage"] = {"prompt_tokens": 100, "completion_tokens": 5}
    second = chat_reply("It is 18 C.", usage={"prompt_tokens": 140, "completion_tokens": 5})
    second["usage"]["prompt_tokens_details"] = {"cached_tokens": -100}
    with ScriptedServer([first, second]) as server, Client(server.base_url, api="messages") as c:
        trace = c.run_trace(RunRequest("m", 64, prompt="Weather?", tools=demo_tools()))
    sent = server.requests[1]
    assert sent.path.endswith("/messages")
    assert trace.outcome == "ok", trace.error
    assert [it.context_cut for it in trace.iterations] == [False, False]
    # The negative cached count is kept as sent, and counted into nothing.
    assert trace.iterations[1].usage == {
        "prompt_tokens": 240,
        "completion_tokens": 5,
        "cached_tokens": -100,
    }
    assert trace.prefix_reuse == [None, None]


def _render_all(trace: Trace, tmp_path: Path) -> None:
    """Every renderer and exporter of a trace, each asked to do its whole job."""
    pytest.importorskip("ipywidgets")
    from rig_nb.widgets import TraceView

    assert "<svg" in timeline_svg(trace)
    assert "<table" in trace._repr_html_()
    view = TraceView(trace)
    assert view.children
    page = tmp_path / "report.html"
    save_html(trace, str(page))
    assert "<html" in page.read_text()
    df = trace.to_dataframe()
    assert len(df) == len(trace.iterations)
    again = Trace.from_json(trace.to_json())
    assert again.to_dict() == trace.to_dict()
    exported = to_otel(trace, include_content=True)
    for span in exported["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        assert 0 <= int(span["startTimeUnixNano"]) <= int(span["endTimeUnixNano"]) < 2**64
    collector = Collector()
    try:
        export_otlp([trace], collector.url())
        assert len(spans(collector)) == len(trace.iterations) + 1 + len(trace.tool_calls)
    finally:
        collector.close()


@pytest.mark.parametrize("api", WIRE_NAMES)
@STREAMS
def test_every_renderer_survives_a_run_that_was_sent_lying_counts(
    lying: Lying, api: str, stream: bool, tmp_path: Path
) -> None:
    _render_all(run_over(lying, api, stream), tmp_path)


@pytest.mark.parametrize("lie", list(LIES.values()), ids=list(LIES))
def test_every_renderer_survives_a_trace_that_holds_lying_counts(lie: int, tmp_path: Path) -> None:
    # A trace built by hand or read from a file holds what it was given: each renderer
    # reads the counts as the wire does.
    from rig_nb.trace import Iteration

    usage = {k: lie for k in ("prompt_tokens", "completion_tokens", "reasoning_tokens")}
    usage["cached_tokens"] = lie
    trace = Trace(model="m", endpoint="127.0.0.1:8000", outcome="ok")
    trace.iterations = [
        Iteration(
            index=0,
            usage=usage,
            latency_s=1.0,
            ttft_s=0.25,
            streamed=True,
            chunks=3,
            raw_content="Hi.",
            text="Hi.",
            ending="answer",
        ),
        Iteration(index=1, usage=dict(usage), latency_s=2.0, text="Hi.", ending="answer"),
    ]
    assert trace.iterations[0].decode_tok_s is None
    assert trace.prefix_reuse == [None, None]
    _render_all(trace, tmp_path)


@pytest.mark.parametrize("api", WIRE_NAMES)
def test_compare_and_summarize_survive_lying_counts(lying: Lying, api: str) -> None:
    endpoint = Endpoint("liar", lying.base_url, "m", api=api)
    scenario = Scenario("weather", prompt="Weather in Paris?", tools=demo_tools(), max_tokens=64)
    df = compare([endpoint], scenarios=[scenario], repeats=2, progress=False)
    assert list(df["outcome"]) == ["ok", "ok"]
    assert list(df["prompt_tokens"]) == [40, 40]  # the lying first turn counted nothing
    assert summarize(df).loc["weather", "liar"].startswith("2/2 ok")
    swept = compare([endpoint], scenarios=[scenario], load=(1, 2), progress=False)
    assert list(swept["outcome"]) == ["ok"] * 3
    table = summarize(swept)
    assert list(table["load"]) == [1, 2]
    assert all(rate >= 0 for rate in table["output_tokens_per_s"])


@pytest.mark.parametrize("api", WIRE_NAMES)
def test_the_cli_prints_a_run_sent_lying_counts(
    lying: Lying, api: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = cli(
        capsys,
        "run",
        "--base-url",
        lying.base_url,
        "--model",
        "m",
        "--api",
        api,
        "--prompt",
        "Weather in Paris?",
        "--demo-tools",
    )
    assert ran.returncode == 0, ran.stderr
    assert "Traceback" not in ran.stderr
    assert str(10**12) not in ran.stdout and "tokens in/out=40/5" in ran.stdout


@pytest.mark.parametrize("tiny", [5e-324, 1e-320, 1e-12])
def test_a_latency_of_next_to_nothing_is_drawn(tiny: float, tmp_path: Path) -> None:
    from rig_nb.trace import Iteration, ToolCallRecord

    call = ToolCallRecord(id="c", name="t", duration_s=tiny)
    trace = Trace(model="m", endpoint="127.0.0.1:8000", outcome="ok", elapsed_s=tiny)
    trace.iterations = [
        Iteration(
            index=0,
            latency_s=tiny,
            ttft_s=tiny,
            streamed=True,
            chunks=2,
            usage={"prompt_tokens": 10, "completion_tokens": 5},
            tool_calls=[call],
        ),
        Iteration(index=1, latency_s=tiny, text="Hi.", ending="answer"),
    ]
    assert trace.iterations[0].decode_tok_s is None
    _render_all(trace, tmp_path)


def test_compare_charts_survive_a_latency_of_next_to_nothing(
    demo: DemoServer, tmp_path: Path
) -> None:
    pytest.importorskip("ipywidgets")
    from rig_nb.report.charts import charts_html
    from rig_nb.widgets import CompareView

    endpoint = Endpoint("demo", demo.base_url, "well-behaved")
    df = compare([endpoint], scenarios=[Scenario("hi", prompt="hi")], progress=False)
    df["latency_s"] = [5e-324] * len(df)
    assert "<svg" in charts_html(df)
    save_html(df, str(tmp_path / "compare.html"))
    assert CompareView(df).children
    assert summarize(df).loc["hi", "demo"].startswith("1/1 ok")
