"""The library against real llama.cpp servers running SmolLM2-135M on the CPU.

Assertions are on behaviour categories (a tool call or not, which error, what
the trace holds), never on the model's wording: the server samples.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from llama_servers import MODEL, LlamaServer

from rig_nb import (
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
from rig_nb.testing import RecordingProxy

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
    out = tmp_path / "probe.jsonl"
    trace = Trace()
    with RecordingProxy(fc_server.base_url, out) as proxy, Client(proxy.base_url) as client:
        client.probe_tool_calling(MODEL, trace=trace)
    [line] = out.read_text().splitlines()
    record = json.loads(line)
    # A real llama.cpp server only calls tools with tool_choice "auto"; the loop sends it too.
    assert record["request"]["body"]["tool_choice"] == "auto"
    assert trace.settings["tool_choice"] == "auto"
    assert trace.outcome == "ok"
    message = record["response"]["body"]["choices"][0]["message"]
    assert message["tool_calls"][0]["function"]["name"] == "ping"


def test_probe_reports_no_tool_calling_on_plain_chatml(chatml_client: Client) -> None:
    with pytest.raises(NoToolCallingError) as info:
        chatml_client.probe_tool_calling(MODEL)
    trace = info.value.trace
    assert trace is not None and trace.outcome == "NoToolCallingError"
    [it] = trace.iterations
    assert it.tool_calls == [] and it.finish_reason != "length"


def test_tool_loop_runs_real_calls_and_records_every_iteration(fc_client: Client) -> None:
    calls: list[dict[str, Any]] = []
    request = RunRequest(
        MODEL,
        256,
        prompt="What is the weather in Paris? Use the get_weather tool.",
        tools=(_weather_tool(calls),),
        max_iterations=5,
    )
    trace = Trace()
    try:
        result = fc_client.run(request, trace=trace)
    except IterationLimitError as exc:
        assert exc.trace is trace
        assert trace.outcome == "IterationLimitError"
        # Every round up to the cap is in the trace, each one calling tools.
        assert [it.index for it in trace.iterations] == [0, 1, 2, 3, 4]
        assert all(it.tool_calls for it in trace.iterations)
    else:
        assert trace.outcome == "ok" and result.trace is trace
        assert result.text == trace.iterations[-1].text
        assert trace.iterations[-1].tool_calls == []
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
    print("\nchatml-function-calling:", fc, "\nchatml:", plain)
    assert fc["auto"] == "tool call"
    assert fc["unset"] == "text"
    assert fc["required"].startswith("error 5")
    assert plain["auto"] == "text" and plain["unset"] == "text"


def test_compare_tells_the_two_real_servers_apart(
    fc_server: LlamaServer, chatml_server: LlamaServer
) -> None:
    import pandas as pd

    df = compare(
        [
            Endpoint("llama.cpp function-calling", fc_server.base_url, MODEL),
            Endpoint("llama.cpp chatml", chatml_server.base_url, MODEL),
        ]
    )
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        print("\n" + df.drop(columns=["error"]).to_string())
    outcome = {(r.endpoint, r.scenario): r.outcome for r in df.itertuples()}
    assert outcome[("llama.cpp function-calling", "probe")] == "ok"
    assert outcome[("llama.cpp chatml", "probe")] == "NoToolCallingError"
    assert outcome[("llama.cpp chatml", "tool round trip")] == "NoToolCallingError"
    calls = df[df.scenario == "tool round trip"].set_index("endpoint")["tool_calls"]
    assert calls["llama.cpp function-calling"] >= 1
    assert calls["llama.cpp chatml"] == 0
    assert outcome[("llama.cpp function-calling", "small budget")] == "OutputLimitError"


def test_a_run_that_fails_still_raises_a_rig_error_with_its_trace(fc_client: Client) -> None:
    # n_ctx is 2048: a prompt far past it is the server's error, reported as a BackendError.
    request = RunRequest(MODEL, 64, prompt="word " * 4000)
    with pytest.raises(RigError) as info:
        fc_client.run(request)
    assert type(info.value).__name__ == "BackendError"
    assert info.value.trace is not None and info.value.trace.outcome == "BackendError"
