"""The Anthropic Messages wire (issue 32): the same loop, trace and endings as chat.

Every demo persona, every scripted reply of the stream-parity table and every probe give
the same RunResult and trace over `/messages` as over `/chat/completions`, streamed or
not, apart from what the Messages wire cannot carry the same way: timing fields,
`settings["api"]`, which field carried reasoning (a `thinking` block), the thinking
block's signature, reasoning token counts (Anthropic's usage has none), and the spacing
of tool arguments (a `tool_use` input is an object, so its JSON text is re-encoded,
and no arguments at all are `{}`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from shared import ECHO, PERSONAS
from test_responses_wire import wire_neutral
from test_stream_parity import PROBES, SCRIPTS, TEXT_TOOL_MODELS, run_once

from rig_nb import Client, RunRequest, Trace
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools
from rig_nb.testing import RecordedRequest, ScriptedServer

APIS = ("chat", "messages")


def _arguments(text: Any) -> Any:
    """Tool arguments as what they say: parsed JSON when they parse, else the text; none at
    all is `{}` (an empty tool_use input is one)."""
    if text == "":
        return {}
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def _calls_as_said(holder: dict[str, Any]) -> None:
    for call in holder.get("tool_calls") or []:
        fn = call.get("function", call)
        if "arguments" in fn:
            fn["arguments"] = _arguments(fn["arguments"])


def neutral(trace: Trace) -> dict[str, Any]:
    """The wire-neutral trace (see the module docstring for what is left out)."""
    data = wire_neutral(trace)
    for it in data["iterations"]:
        it.pop("reasoning_signature", None)
        # llama.cpp's own `timings` ride beside a chat completion; a Messages body has no place.
        it.pop("server_timings", None)
        it["usage"].pop("reasoning_tokens", None)
        _calls_as_said(it)
        for message in it["messages"]:
            message.pop("reasoning_signature", None)
            _calls_as_said(message)
    return data


def both_wires(base_url: str, request: RunRequest) -> dict[tuple[str, bool], tuple[Any, Trace]]:
    out = {}
    for api in APIS:
        with Client(base_url, api=api, max_retries=0) as client:
            for stream in (False, True):
                out[api, stream] = run_once(client, request, stream)
    return out


def _result(result: Any) -> Any:
    # (text, iterations, tool_calls), or the error's class name.
    return result


def assert_same(runs: Mapping[tuple[str, bool], tuple[Any, Trace]]) -> None:
    result, trace = runs["chat", False]
    for (api, stream), (other, other_trace) in runs.items():
        assert _result(other) == _result(result), (api, stream)
        assert other_trace.outcome == trace.outcome, (api, stream)
        assert [i.ending for i in other_trace.iterations] == [i.ending for i in trace.iterations], (
            api,
            stream,
        )
        assert neutral(other_trace) == neutral(trace), (api, stream)
        assert other_trace.settings["api"] == api
        assert all(it.streamed is stream for it in other_trace.iterations)


@pytest.fixture(scope="module")
def quick_demo() -> Any:
    with DemoServer(stream_first_delay=0, stream_interval=0) as server:
        yield server


@pytest.mark.parametrize("model", PERSONAS)
def test_every_persona_runs_the_same_over_chat_and_messages(
    quick_demo: DemoServer, model: str
) -> None:
    request = RunRequest(model, 512, system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools())
    assert_same(both_wires(quick_demo.base_url, request))


@pytest.mark.parametrize("model", TEXT_TOOL_MODELS)
def test_recovered_text_calls_run_the_same_over_messages(
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
    runs = both_wires(quick_demo.base_url, request)
    assert_same(runs)
    assert len(runs["messages", True][1].tool_calls) == 3


@pytest.mark.parametrize("model", PERSONAS)
def test_every_persona_probes_the_same_over_messages(quick_demo: DemoServer, model: str) -> None:
    traces = {}
    for api in APIS:
        with Client(quick_demo.base_url, api=api) as client:
            for stream in (False, True):
                traces[api, stream] = client.probe_trace(model, stream=stream)
    plain = traces["chat", False]
    for (api, _), trace in traces.items():
        assert trace.outcome == plain.outcome
        assert trace.settings["api"] == api
        assert neutral(trace) == neutral(plain)


def _serve(server: ScriptedServer, n: int) -> list[Any]:
    queue: list[Mapping[str, Any]] = []

    def serve(request: RecordedRequest) -> Mapping[str, Any]:
        return queue.pop(0)

    server.push(*[serve] * n)
    return queue


@pytest.mark.parametrize("replies", SCRIPTS)
def test_scripted_replies_run_the_same_over_messages(
    server: ScriptedServer, replies: Sequence[Mapping[str, Any]]
) -> None:
    queue = _serve(server, 2 * 2 * 3)
    request = RunRequest("scripted", 256, prompt="Echo something.", tools=(ECHO,), max_iterations=3)
    runs = {}
    for api in APIS:
        with Client(server.base_url, api=api, max_retries=0) as client:
            for stream in (False, True):
                queue[:] = replies
                runs[api, stream] = run_once(client, request, stream)
    assert_same(runs)
    assert {r.path for r in server.requests} == {"/v1/chat/completions", "/v1/messages"}


@pytest.mark.parametrize("reply", PROBES)
def test_scripted_probe_is_the_same_over_messages(
    server: ScriptedServer, reply: Mapping[str, Any]
) -> None:
    server.push(*[reply] * 4)
    traces = []
    for api in APIS:
        with Client(server.base_url, api=api) as client:
            traces += [client.probe_trace("scripted", stream=s) for s in (False, True)]
    assert len({t.outcome for t in traces}) == 1
    assert all(neutral(t) == neutral(traces[0]) for t in traces)
