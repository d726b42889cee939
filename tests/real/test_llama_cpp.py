"""The library against real llama.cpp servers running SmolLM2-135M on the CPU.

Assertions are on behaviour categories (a tool call or not, which error, what
the trace holds), never on the model's wording: the server samples.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from llama_servers import MODEL, TIMEOUT_S, LlamaServer

from rig_nb import (
    BackendError,
    Client,
    IterationLimitError,
    NoToolCallingError,
    OutputLimitError,
    RigError,
    RunRequest,
    Tool,
    Trace,
)
from rig_nb.capabilities import tool_choice_matrix
from rig_nb.compare import Endpoint, compare
from rig_nb.demo import DemoServer
from rig_nb.demo.recording import RecordingProxy
from rig_nb.demo.replay import ReplayPersona

pytestmark = pytest.mark.real


def _weather_tool(calls: list[dict[str, Any]]) -> Tool:
    def run(args: dict[str, Any]) -> str:
        calls.append(args)
        return f"{args.get('city', 'somewhere')}: 18 C, clear sky"

    return Tool(
        name="get_weather",
        description="Current weather for a city.",
        input_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
        run=run,
    )


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def test_probe_finds_tool_calling_and_sends_what_the_loop_sends(
    fc_server: LlamaServer, tmp_path: Path
) -> None:
    # Now and then the server ignores max_tokens while it writes the call's arguments until
    # its 2048-token context is full, and answers the probe with HTTP 400 (seen once in about
    # five runs, after 75 s): inconclusive, so the probe is sent again, at most three times.
    for attempt in range(3):
        out = tmp_path / f"probe-{attempt}.jsonl"
        trace = Trace()
        with RecordingProxy(fc_server.base_url, out, timeout=TIMEOUT_S) as proxy:
            with Client(proxy.base_url, timeout=TIMEOUT_S) as client:
                try:
                    client.probe_tool_calling(MODEL, trace=trace)
                except BackendError as exc:
                    assert (exc.kind, exc.status_code) == ("http", 400)
                    assert "context length" in exc.message
        [line] = out.read_text().splitlines()
        record = json.loads(line)
        # A real llama.cpp server only calls tools with tool_choice "auto"; the loop sends it.
        assert record["request"]["body"]["tool_choice"] == "auto"
        assert trace.settings["tool_choice"] == "auto"
        if trace.outcome == "ok":
            break
    assert trace.outcome == "ok"
    message = record["response"]["body"]["choices"][0]["message"]
    assert message["tool_calls"][0]["function"]["name"] == "ping"


def test_probe_reports_no_tool_calling_on_plain_chatml(chatml_client: Client) -> None:
    # The model rambles past the probe's budget about one time in four (OutputLimitError:
    # inconclusive); it never calls a tool, so a few probes always reach a verdict.
    for _ in range(5):
        with pytest.raises((NoToolCallingError, OutputLimitError)) as info:
            chatml_client.probe_tool_calling(MODEL)
        trace = info.value.trace
        assert trace is not None and trace.iterations[0].tool_calls == []
        if isinstance(info.value, NoToolCallingError):
            assert trace.outcome == "NoToolCallingError"
            assert trace.iterations[0].finish_reason != "length"
            return
        assert trace.iterations[0].finish_reason == "length"
    pytest.fail("five probes of the chatml server all ran out of budget")


def _weather_run(model: str, calls: list[dict[str, Any]]) -> RunRequest:
    return RunRequest(
        model,
        128,
        prompt="What is the weather in Paris? Use the get_weather tool.",
        tools=(_weather_tool(calls),),
        max_iterations=4,
    )


def _run(client: Client, request: RunRequest) -> Trace:
    trace = Trace()
    try:
        client.run(request, trace=trace)
    except RigError:
        pass
    return trace


def test_tool_loop_runs_real_calls_and_records_every_iteration(fc_client: Client) -> None:
    calls: list[dict[str, Any]] = []
    trace = Trace()
    try:
        result = fc_client.run(_weather_run(MODEL, calls), trace=trace)
    except IterationLimitError:
        # The usual ending: the model keeps calling the tool; every round is in the trace.
        assert [it.index for it in trace.iterations] == [0, 1, 2, 3]
        assert all(it.tool_calls for it in trace.iterations)
    except BackendError as exc:
        # The other real ending: runaway arguments filled the 2048-token context, and the
        # server refused the next round (HTTP 400); the rounds before it are all there.
        assert (exc.kind, exc.status_code) == ("http", 400) and "context" in exc.message
        last = trace.iterations[-1]
        assert last.error.startswith("BackendError") and last.tool_calls == []
        assert all(it.tool_calls for it in trace.iterations[:-1])
    else:
        assert trace.outcome == "ok" and result.trace is trace
        assert result.text == trace.iterations[-1].text
        assert trace.iterations[-1].tool_calls == []
    assert trace.outcome in ("ok", "IterationLimitError", "BackendError")
    assert trace.settings["tool_choice"] == "auto"
    records = trace.tool_calls
    assert records, "the function-calling server made no tool call in a tool loop"
    for rec in records:
        assert rec.name == "get_weather"
        if _is_json_object(rec.arguments):
            assert rec.result.endswith(": 18 C, clear sky") or rec.is_error
        else:
            # Malformed arguments never reach the tool; the error goes back to the model.
            assert rec.is_error and rec.result.startswith("error: ")
    assert len(calls) == sum(not r.is_error for r in records)
    # Each round's results are what the next round sent back, by the id the loop echoed.
    for before, after in zip(trace.iterations, trace.iterations[1:], strict=False):
        sent = {m.get("tool_call_id"): m["content"] for m in after.messages if m["role"] == "tool"}
        for rec in before.tool_calls:
            assert sent[rec.id] == rec.result


def test_small_budget_is_an_output_limit_with_length_in_the_trace(fc_client: Client) -> None:
    request = RunRequest(MODEL, 8, prompt="Write a long story about a lighthouse keeper.")
    with pytest.raises(OutputLimitError) as info:
        fc_client.run(request)
    trace = info.value.trace
    assert trace is not None and trace.outcome == "OutputLimitError"
    assert trace.iterations[-1].finish_reason == "length"
    assert trace.iterations[-1].usage.get("completion_tokens") == 8


def test_tool_choice_matrix_on_both_servers(fc_client: Client, chatml_client: Client) -> None:
    fc = tool_choice_matrix(fc_client, MODEL)
    plain = tool_choice_matrix(chatml_client, MODEL)
    print(f"\nchatml-function-calling: {fc}\nchatml: {plain}")
    # Without tool_choice the function-calling format answers in text (or rambles to the budget).
    assert fc["unset"] in ("text", "length")
    assert fc["auto"] == "tool call"
    assert fc["required"] == "error 500"
    # Plain chatml ignores tools whatever tool_choice says.
    assert set(plain.values()) <= {"text", "length"}


def test_compare_tells_the_two_real_servers_apart(
    fc_server: LlamaServer, chatml_server: LlamaServer
) -> None:
    import pandas as pd

    fc, plain = "llama.cpp chatml-function-calling", "llama.cpp chatml"
    df = compare(
        [Endpoint(fc, fc_server.base_url, MODEL), Endpoint(plain, chatml_server.base_url, MODEL)],
        timeout=TIMEOUT_S,
    )
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        print("\n" + df.drop(columns=["error"]).to_string())
    outcome = {(r.endpoint, r.scenario): r.outcome for r in df.itertuples()}
    assert outcome[(fc, "probe")] == "ok"
    assert outcome[(plain, "probe")] in ("NoToolCallingError", "OutputLimitError")
    calls = df.set_index(["endpoint", "scenario"])["tool_calls"]
    assert calls[(fc, "tool round trip")] >= 1
    # The chatml server never called a tool in any scenario.
    assert calls[plain].fillna(0).eq(0).all()
    assert outcome[(plain, "tool round trip")] in ("NoToolCallingError", "OutputLimitError")


def test_a_prompt_past_the_context_is_the_servers_error_with_a_trace(fc_client: Client) -> None:
    request = RunRequest(MODEL, 64, prompt="word " * 4000)
    with pytest.raises(BackendError) as info:
        fc_client.run(request)
    # A prompt past the window: kind context (llama-cpp-python's own wording, "maximum
    # context length"), the 400 and the server's message kept.
    assert (info.value.kind, info.value.status_code) == ("context", 400)
    assert "context" in info.value.message
    assert info.value.message.startswith("ai backend: HTTP 400: ")
    assert info.value.trace is not None and info.value.trace.outcome == "BackendError"
    assert "127.0.0.1" not in info.value.message


def _outline(trace: Trace) -> list[tuple[Any, ...]]:
    return [
        (it.finish_reason, it.text, [(c.received_id, c.arguments, c.result) for c in it.tool_calls])
        for it in trace.iterations
    ]


def test_a_recorded_real_session_replays_as_a_demo_persona(
    fc_server: LlamaServer, tmp_path: Path
) -> None:
    out = tmp_path / "real.jsonl"
    with RecordingProxy(fc_server.base_url, out, timeout=TIMEOUT_S) as proxy:
        with Client(proxy.base_url, "sk-never-recorded", timeout=TIMEOUT_S) as client:
            live = _run(client, _weather_run(MODEL, []))
            live_budget = _run(client, RunRequest(MODEL, 8, prompt="Tell a long story."))
    text = out.read_text()
    assert "sk-never-recorded" not in text
    sent = [json.loads(line)["request"]["body"] for line in text.splitlines()]
    assert [b.get("tool_choice") for b in sent if b.get("tools")] == ["auto"] * len(live.iterations)
    assert fc_server.base_url.split("//")[1].split("/")[0] not in text
    with DemoServer(extra_personas=[ReplayPersona("real-replay", out)]) as demo:
        with Client(demo.base_url) as client:
            replayed = _run(client, _weather_run("real-replay", []))
            replayed_budget = _run(
                client, RunRequest("real-replay", 8, prompt="Tell a long story.")
            )
    assert replayed.outcome == live.outcome
    assert _outline(replayed) == _outline(live)
    assert (replayed_budget.outcome, _outline(replayed_budget)) == (
        live_budget.outcome,
        _outline(live_budget),
    )


def test_tool_choice_required_is_an_http_500_backend_error(fc_client: Client) -> None:
    with pytest.raises(BackendError) as info:
        fc_client.probe_tool_calling(MODEL, tool_choice="required")
    assert (info.value.kind, info.value.status_code) == ("http", 500)
    assert info.value.message.startswith("ai backend: HTTP 500")


def test_a_stream_that_dies_after_its_200_is_a_protocol_error(fc_client: Client) -> None:
    # llama-cpp-python starts the event stream (200), then its chatml-function-calling handler
    # raises "Automatic streaming tool choice is not supported" and the stream ends with no event
    # (or the connection drops): either way a broken stream, not an answer.
    with pytest.raises(BackendError) as info:
        fc_client.probe_tool_calling(MODEL, stream=True)
    assert (info.value.kind, info.value.status_code) == ("protocol", None)
    trace = info.value.trace
    assert trace is not None and trace.iterations[0].ending == "error"
    assert trace.iterations[0].raw_content == "" and trace.iterations[0].streamed
