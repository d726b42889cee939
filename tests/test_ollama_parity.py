"""Ollama's native wire (issue 32): the same loop, trace and endings over `/api/chat`.

Every demo persona and every scripted reply of the stream-parity table gives the same
result, outcome and endings over `/api/chat` as over `/chat/completions`, streamed or
not, and the same trace apart from what the wire itself decides: timing fields,
`settings["api"]`, which field carried reasoning, the call ids (Ollama sends none: the
loop makes them), arguments as text (Ollama sends an object), `server_timings` (Ollama
reports its durations), `thinking_sent` (each wire's own switch) and the usage details
Ollama does not report (reasoning and cached tokens).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from shared import ECHO, PERSONAS
from test_stream_parity import PROBES, SCRIPTS, TEXT_TOOL_MODELS, run_once, untimed

from rig_nb import Client, RunRequest, Trace
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools
from rig_nb.testing import RecordedRequest, ScriptedServer
from rig_nb.wire import REASONING_FIELDS

WIRES = ("chat", "ollama")
_IDS = frozenset({"id", "received_id", "tool_call_id"})
# Mistral's call ids written in content: a persona makes them from the request, which
# differs between wires (the loop's call ids are in it).
_MISTRAL_ID = re.compile(r'"id": "[0-9a-f]{9}"')


def _arguments(text: str) -> Any:
    # Ollama sends arguments as an object: the text a chat server sent is re-serialized,
    # and blank arguments are {}.
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        return text


def _without_ids(value: Any) -> Any:
    if isinstance(value, str):
        return _MISTRAL_ID.sub('"id": ""', value)
    if isinstance(value, dict):
        return {
            k: _arguments(v) if k == "arguments" and isinstance(v, str) else _without_ids(v)
            for k, v in value.items()
            if k not in _IDS
        }
    if isinstance(value, list | tuple):
        return [_without_ids(v) for v in value]
    return value


def wire_neutral(trace: Trace) -> dict[str, Any]:
    """The untimed trace without what the wire decides (see the module docstring)."""
    data = untimed(trace.to_dict())
    data["settings"].pop("api")
    for it in data["iterations"]:
        it["reasoning_field"] = bool(it["reasoning_field"])
        it["replayed"] = bool(it.get("replayed"))
        it.pop("server_timings", None)
        it.pop("thinking_sent", None)  # each wire's own switch
        usage = it["usage"]
        it["usage"] = {k: usage[k] for k in ("prompt_tokens", "completion_tokens") if k in usage}
        it["messages"] = [
            {("reasoning" if k in REASONING_FIELDS else k): v for k, v in m.items()}
            for m in it["messages"]
        ]
    return _without_ids(data)


def four_ways(base_url: str, request: RunRequest) -> dict[tuple[str, bool], tuple[Any, Trace]]:
    out = {}
    for api in WIRES:
        with Client(base_url, api=api, max_retries=0) as client:
            for stream in (False, True):
                out[api, stream] = run_once(client, request, stream)
    return out


def assert_same_over_both_wires(runs: Mapping[tuple[str, bool], tuple[Any, Trace]]) -> None:
    result, trace = runs["chat", False]
    for (api, stream), (other, other_trace) in runs.items():
        assert _without_ids(other) == _without_ids(result), (api, stream)
        assert other_trace.outcome == trace.outcome, (api, stream)
        endings = [it.ending for it in other_trace.iterations]
        assert endings == [it.ending for it in trace.iterations], (api, stream)
        assert wire_neutral(other_trace) == wire_neutral(trace), (api, stream)
        assert other_trace.settings["api"] == api
        for it in other_trace.iterations:
            assert it.streamed is stream


@pytest.fixture(scope="module")
def quick_demo() -> Any:
    with DemoServer(stream_first_delay=0, stream_interval=0) as server:
        yield server


@pytest.mark.parametrize("model", PERSONAS)
def test_every_persona_runs_the_same_over_chat_and_ollama(
    quick_demo: DemoServer, model: str
) -> None:
    request = RunRequest(model, 512, system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools())
    runs = four_ways(quick_demo.base_url, request)
    assert_same_over_both_wires(runs)
    for stream in (False, True):
        for it in runs["ollama", stream][1].iterations:
            if it.ending != "error":  # Ollama reports its own work; the demo does too
                assert it.server_timings["decode_tokens"] == it.usage["completion_tokens"]
                assert it.server_timings["total_s"] > it.server_timings["decode_s"] >= 0


@pytest.mark.parametrize("model", TEXT_TOOL_MODELS)
def test_recovered_text_calls_run_the_same_over_chat_and_ollama(
    quick_demo: DemoServer, model: str
) -> None:
    request = RunRequest(
        model,
        512,
        system=DEMO_SYSTEM,
        prompt=DEMO_PROMPT,
        tools=demo_tools(),
        recover_text_tool_calls=True,
    )
    runs = four_ways(quick_demo.base_url, request)
    assert_same_over_both_wires(runs)
    assert len(runs["ollama", True][1].tool_calls) == 3


@pytest.mark.parametrize("model", PERSONAS)
def test_every_persona_probes_the_same_over_chat_and_ollama(
    quick_demo: DemoServer, model: str
) -> None:
    traces = {}
    for api in WIRES:
        with Client(quick_demo.base_url, api=api) as client:
            for stream in (False, True):
                traces[api, stream] = client.probe_trace(model, stream=stream)
    plain = traces["chat", False]
    for (api, _), trace in traces.items():
        assert trace.outcome == plain.outcome
        assert trace.settings["api"] == api
        assert wire_neutral(trace) == wire_neutral(plain)


def _serve(server: ScriptedServer, n: int) -> list[Any]:
    queue: list[Mapping[str, Any]] = []

    def serve(request: RecordedRequest) -> Mapping[str, Any]:
        return queue.pop(0)

    server.push(*[serve] * n)
    return queue


@pytest.mark.parametrize("replies", SCRIPTS)
def test_scripted_replies_run_the_same_over_chat_and_ollama(
    server: ScriptedServer, replies: Sequence[Mapping[str, Any]]
) -> None:
    queue = _serve(server, 4 * 3)
    request = RunRequest("scripted", 256, prompt="Echo something.", tools=(ECHO,), max_iterations=3)
    runs = {}
    for api in WIRES:
        with Client(server.base_url, api=api, max_retries=0) as client:
            for stream in (False, True):
                queue[:] = replies
                runs[api, stream] = run_once(client, request, stream)
    assert_same_over_both_wires(runs)
    assert {r.path for r in server.requests} == {"/v1/chat/completions", "/api/chat"}


@pytest.mark.parametrize("reply", PROBES)
def test_scripted_probe_is_the_same_over_chat_and_ollama(
    server: ScriptedServer, reply: Mapping[str, Any]
) -> None:
    server.push(*[reply] * 4)
    traces = []
    for api in WIRES:
        with Client(server.base_url, api=api) as client:
            traces += [client.probe_trace("scripted", stream=s) for s in (False, True)]
    assert len({t.outcome for t in traces}) == 1
    assert all(wire_neutral(t) == wire_neutral(traces[0]) for t in traces)


def test_the_thinking_switch_and_replay_work_over_ollama(quick_demo: DemoServer) -> None:
    # deepseek-thinking-tools answers 400 when a tool turn comes back without its reasoning:
    # over /api/chat it goes back in `thinking`, and the run ends as over chat.
    request = RunRequest(
        "deepseek-thinking-tools", 512, prompt=DEMO_PROMPT, tools=demo_tools(), thinking=True
    )
    runs = four_ways(quick_demo.base_url, request)
    assert_same_over_both_wires(runs)
    trace = runs["ollama", False][1]
    assert trace.outcome == "ok"
    assert [it.replayed for it in trace.iterations[:-1]] == ["thinking"] * 2
    assert all(it.thinking_sent == {"think": True} for it in trace.iterations)
    off = dataclasses.replace(request, model="honors-thinking-switch", thinking=False)
    with Client(quick_demo.base_url, api="ollama") as client:
        quiet = client.run(off).trace
    assert quiet.outcome == "ok"
    assert all(it.reasoning_content == "" for it in quiet.iterations)
    assert quick_demo.requests[-1].json["think"] is False
