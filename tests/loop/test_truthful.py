"""Results that say no more than is true, and inputs that fail alone (DESIGN, Round 3).

One outcome everywhere; a lone surrogate is sent as U+FFFD; Ctrl-C stops compare at
once with the finished rows kept; an invalid scenario fails only its own rows; a connect
timeout is unreachable; a stream without choices, `n`, retry notes, HTML error pages.
"""

from __future__ import annotations

import _thread
import json
import threading
import time
from typing import Any

import pytest

from rig_nb import BackendError, Client, RunRequest, Tool
from rig_nb.compare import Endpoint, Scenario, compare, compare_rows
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools
from rig_nb.testing import (
    RecordedRequest,
    Response,
    ScriptedServer,
    chat_reply,
    sse_body,
    tool_call,
)
from rig_nb.wire import Request

LONE = "report-\udcff.txt"  # what os.fsdecode makes of a non-UTF-8 file name


# --- one outcome --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "outcome"),
    [
        pytest.param("well-behaved", "ok", id="answer"),
        pytest.param("hermes-text-tools", "text_tool_calls", id="text-calls"),
        pytest.param("ollama-reasoning", "reasoning_only", id="reasoning-only"),
        pytest.param("tool-spinner", "IterationLimitError", id="error"),
    ],
)
def test_outcome_is_ok_only_for_an_answer(demo_client: Client, model: str, outcome: str) -> None:
    request = RunRequest(
        model, 512, system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools(), max_iterations=3
    )
    trace = demo_client.run_trace(request)
    assert trace.outcome == outcome
    assert (trace.outcome == "ok") == (trace.ending == "answer")


def test_compare_rows_show_the_trace_outcome(demo: DemoServer) -> None:
    endpoints = [
        Endpoint(m, demo.base_url, m) for m in ("well-behaved", "hermes-text-tools", "budget-think")
    ]
    rows, traces = compare_rows(endpoints)
    assert {r["outcome"] for r in rows} >= {"ok", "text_tool_calls", "OutputLimitError"}
    for row, trace in zip(rows, traces, strict=True):
        assert trace is not None
        if row["scenario"] == "probe":
            continue
        # The scenario's goal may fail an answered run (no tool call, no JSON); never the reverse.
        if trace.outcome != "ok":
            assert row["outcome"] == trace.outcome


# --- what is sent ---------------------------------------------------------------------------


def test_a_lone_surrogate_in_a_tool_result_and_prompt_is_sent_as_replacement(
    server: ScriptedServer,
) -> None:
    listing = Tool(
        "ls",
        "List files.",
        {"type": "object", "properties": {}},
        lambda args: f"files: {LONE}",
    )
    server.push(chat_reply(tool_calls=[tool_call("ls", {})]), chat_reply("done"))
    with Client(server.base_url) as client:
        result = client.run(RunRequest("m", 64, prompt=f"look at {LONE}", tools=[listing]))
    assert result.text == "done" and result.trace.outcome == "ok"
    first, second = (r.json["messages"] for r in server.requests)
    assert first[0]["content"] == "look at report-\ufffd.txt"
    assert second[-1] == {
        "role": "tool",
        "tool_call_id": "call_ls",
        "content": "files: report-\ufffd.txt",
    }
    # What the trace holds is what was sent, so it saves and loads.
    assert result.trace.tool_calls[0].result == "files: report-\ufffd.txt"
    assert json.loads(result.trace.to_json())["iterations"][1]["messages"][-1]["content"]


def test_extra_body_may_not_set_n(server: ScriptedServer) -> None:
    with Client(server.base_url) as client:
        with pytest.raises(ValueError, match="may not set n"):
            client.run(RunRequest("m", 64, prompt="hi", extra_body={"n": 2}))
    assert server.requests == []


def test_a_stream_of_two_choices_reads_choice_zero_only(server: ScriptedServer) -> None:
    def event(index: int, text: str, finish: str | None = None) -> dict[str, Any]:
        return {"choices": [{"index": index, "delta": {"content": text}, "finish_reason": finish}]}

    events = [event(0, "zero "), event(1, "ONE "), event(0, "again", "stop"), event(1, "!", "stop")]
    server.push(Response(sse_body(events), headers={"content-type": "text/event-stream"}))
    with Client(server.base_url) as client:
        result = client.run(RunRequest("m", 64, prompt="hi", stream=True))
    assert result.text == "zero again"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_reply_without_choices_is_the_same_error_either_way(
    server: ScriptedServer, stream: bool
) -> None:
    no_choices = {"id": "x", "object": "chat.completion", "choices": [], "usage": {}}
    if stream:
        events = [{"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 0}}]
        server.push(Response(sse_body(events), headers={"content-type": "text/event-stream"}))
    else:
        server.push(no_choices)
    with Client(server.base_url, max_retries=0) as client:
        trace = client.run_trace(RunRequest("m", 64, prompt="hi", stream=stream))
    assert trace.outcome == "BackendError"
    exc = trace.exception
    assert isinstance(exc, BackendError)
    assert (exc.kind, exc.message) == ("reply", "ai backend: reply has no choices")


# --- retry notes and error pages --------------------------------------------------------------


def test_a_retry_note_names_our_own_backoff(server: ScriptedServer) -> None:
    # No Retry-After: the wait would be rig_nb's backoff (0.375-0.5 s), longer than the timeout.
    server.push(Response({"error": {"message": "busy"}}, status=503))
    with Client(server.base_url, timeout=0.25, max_retries=2) as client:
        with pytest.raises(BackendError) as caught:
            client.chat(Request("m", (), 8))
    message = caught.value.message
    assert "asks to retry" not in message
    assert "rig_nb's own backoff" in message and "timeout of 0.25 s" in message
    assert len(server.requests) == 1


def test_a_retry_note_quotes_the_endpoint_only_when_it_asked(server: ScriptedServer) -> None:
    server.push(Response({"error": {"message": "busy"}}, status=429, headers={"retry-after": "60"}))
    with Client(server.base_url, timeout=1, max_retries=2) as client:
        with pytest.raises(BackendError) as caught:
            client.chat(Request("m", (), 8))
    assert "(the endpoint asks to retry after 60 s)" in caught.value.message
    assert "backoff" not in caught.value.message


NGINX_PAGE = (
    "<html><head><title>502 Bad Gateway</title><style>body{color:red}</style>"
    "<script>alert('x')</script></head><body><center><h1>502 Bad Gateway</h1></center>"
    "<!-- a comment --><p>Tom &amp; Jerry&#39;s proxy</p><hr><center>nginx</center>"
    "</body></html>"
)


def test_an_html_error_page_is_reduced_to_its_text(server: ScriptedServer) -> None:
    server.push(Response(NGINX_PAGE.encode(), status=502, headers={"content-type": "text/html"}))
    with Client(server.base_url, max_retries=0) as client:
        with pytest.raises(BackendError) as caught:
            client.chat(Request("m", (), 8))
    message = caught.value.message
    assert message == (
        "ai backend: HTTP 502: 502 Bad Gateway 502 Bad Gateway Tom & Jerry's proxy nginx"
    )


# --- compare: failures that stay where they are ------------------------------------------------


def test_an_invalid_scenario_fails_its_own_rows_before_any_request(demo: DemoServer) -> None:
    scenarios = [
        Scenario("unknown kind", kind="nope"),
        Scenario("no budget", prompt="hi", max_tokens=0),
        Scenario("sets model", prompt="hi", extra_body={"model": "other"}),
        Scenario("sets n", prompt="hi", extra_body={"n": 3}),
        Scenario("plain", prompt="What is the capital of France?"),
    ]
    endpoints = [Endpoint("a", demo.base_url, "well-behaved"), Endpoint("b", demo.base_url, "x")]
    rows, traces = compare_rows(endpoints, scenarios=scenarios)
    by = {(r["endpoint"], r["scenario"]): r for r in rows}
    for endpoint in ("a", "b"):
        for name in ("unknown kind", "no budget", "sets model", "sets n"):
            row = by[(endpoint, name)]
            assert row["outcome"] == "ValueError" and row["error"], row
            assert row["iterations"] is None  # nothing was sent for it
    assert "unknown scenario kind 'nope'" in by[("a", "unknown kind")]["error"]
    assert "max_tokens" in by[("a", "no budget")]["error"]
    assert by[("a", "plain")]["outcome"] == "ok"
    # The persona "x" does not exist: its valid row reached the server and failed on its own.
    assert by[("b", "plain")]["outcome"] == "BackendError"
    assert by[("b", "plain")]["iterations"] == 1


def test_a_connect_timeout_is_unreachable_and_fails_once(blackhole_url: str) -> None:
    with Client(blackhole_url, timeout=0.3, max_retries=2) as client:
        trace = client.run_trace(RunRequest("m", 8, prompt="hi"))
    exc = trace.exception
    assert isinstance(exc, BackendError) and exc.kind == "connect"
    assert "no answer to the connection attempt" in exc.message
    rows, traces = compare_rows([Endpoint("dark", blackhole_url, "m")], timeout=0.3, concurrency=1)
    assert len(rows) == 5 and traces[0] is not None
    assert len({r["error"] for r in rows}) == 1
    # Only the first row tried: the others carry its error, no trace, no time spent.
    assert all(t is None for t in traces[1:])
    assert all(r["latency_s"] == 0.0 for r in rows[1:])


def test_ctrl_c_stops_compare_at_once_and_keeps_finished_rows() -> None:
    release = threading.Event()
    answered = 0
    received = 0
    lock = threading.Lock()

    def handler(request: RecordedRequest) -> dict[str, Any]:
        nonlocal answered, received
        with lock:
            received += 1
            fast = answered < 2
            if fast:
                answered += 1
        if not fast:
            release.wait(30)  # held until the test ends: in flight when Ctrl-C comes
        return chat_reply("Paris.")

    interrupted_at: list[float] = []

    def progress(done: int, total: int) -> None:
        if done == 2 and not interrupted_at:
            interrupted_at.append(time.perf_counter())
            _thread.interrupt_main()

    scenarios = [Scenario(f"s{n}", prompt="Capital of France?") for n in range(12)]
    with ScriptedServer([handler] * 40) as server:
        endpoint = Endpoint("held", server.base_url, "m")
        try:
            with pytest.raises(KeyboardInterrupt) as caught:
                compare(
                    [endpoint], scenarios=scenarios, repeats=2, concurrency=2, progress=progress
                )
            stopped = time.perf_counter()
        finally:
            release.set()
        assert stopped - interrupted_at[0] < 1.0
        frame = caught.value.frame  # type: ignore[attr-defined]
        assert list(frame["outcome"]) == ["ok", "ok"]
        assert set(frame.attrs["traces"]) == {0, 1}
        with lock:
            # Two answered, at most two more in flight; the other 20 never sent.
            assert received <= 4
