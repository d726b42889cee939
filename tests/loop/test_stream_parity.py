"""Streamed and unstreamed runs of the same replies agree (issue 12's equivalence table).

For every demo persona and a set of scripted replies, a run with `stream=True`
gives the same RunResult and the same trace as one without, once the timing
fields are removed; the probe too. Streamed rounds say so (`streamed`, `chunks`,
`ttft_s`). Also the demo endpoint's own stream: pacing, usage, errors.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
import pytest
from parity_cases import (
    PROBES,
    SCRIPTS,
    TEXT_TOOL_MODELS,
)
from parity_view import Script, persona_request, run_once, scripted_request, untimed
from shared import PERSONAS

from rig_nb import Client, RunRequest, Trace
from rig_nb.demo import DEMO_PROMPT, DemoServer, demo_tools
from rig_nb.testing import ScriptedServer

DEMO_MODELS = PERSONAS


def run_both_ways(client: Client, request: RunRequest) -> list[tuple[Any, Trace]]:
    return [run_once(client, request, stream) for stream in (False, True)]


def assert_same(plain: tuple[Any, Trace], streamed: tuple[Any, Trace]) -> None:
    assert streamed[0] == plain[0]
    assert untimed(streamed[1].to_dict()) == untimed(plain[1].to_dict())
    for it in plain[1].iterations:
        assert (it.streamed, it.chunks, it.ttft_s) == (False, 0, 0.0)
    replied = [it for it in streamed[1].iterations if it.ending != "error"]
    assert replied
    for it in replied:
        assert it.streamed and it.chunks > 0 and it.ttft_s > 0
        assert it.latency_s >= it.ttft_s


def test_the_table_covers_every_persona(demo: DemoServer) -> None:
    assert demo.models == DEMO_MODELS


@pytest.mark.parametrize("model", DEMO_MODELS)
def test_every_persona_runs_the_same_streamed(demo_client: Client, model: str) -> None:
    plain, streamed = run_both_ways(demo_client, persona_request(model))
    assert_same(plain, streamed)


@pytest.mark.parametrize("model", TEXT_TOOL_MODELS)
def test_recovered_text_calls_run_the_same_streamed(demo_client: Client, model: str) -> None:
    request = persona_request(model, recover_text_tool_calls=True)
    plain, streamed = run_both_ways(demo_client, request)
    assert_same(plain, streamed)
    assert len(plain[1].tool_calls) == 3  # the loop did run: the rows compare real work


@pytest.mark.parametrize("model", DEMO_MODELS)
def test_every_persona_probes_the_same_streamed(demo_client: Client, model: str) -> None:
    plain = demo_client.probe_trace(model)
    streamed = demo_client.probe_trace(model, stream=True)
    assert streamed.outcome == plain.outcome
    assert untimed(streamed.to_dict()) == untimed(plain.to_dict())
    assert streamed.iterations[0].streamed and streamed.iterations[0].chunks > 0


@pytest.mark.parametrize("replies", SCRIPTS)
@pytest.mark.parametrize(
    "recover", [pytest.param(False, id="plain"), pytest.param(True, id="recovering")]
)
def test_scripted_replies_run_the_same_streamed(
    server: ScriptedServer, replies: Sequence[Mapping[str, Any]], recover: bool
) -> None:
    # One server for both runs (the trace names its endpoint), each run served from the top.
    script = Script(server, replies, runs=2)
    request = scripted_request(recover_text_tool_calls=recover)
    with Client(server.base_url, max_retries=0) as client:
        script.rewind()
        plain = run_once(client, request, False)
        script.rewind()
        streamed = run_once(client, request, True)
    assert_same(plain, streamed)
    sent = [r.json for r in server.requests]
    assert [b.get("stream", False) for b in sent] == [False] * (len(sent) // 2) + [True] * (
        len(sent) // 2
    )
    assert all(b["stream_options"] == {"include_usage": True} for b in sent if b.get("stream"))


@pytest.mark.parametrize("reply", PROBES)
def test_scripted_probe_is_the_same_streamed(
    server: ScriptedServer, reply: Mapping[str, Any]
) -> None:
    server.push(reply, reply)
    with Client(server.base_url) as client:
        plain = client.probe_trace("scripted")
        streamed = client.probe_trace("scripted", stream=True)
    assert streamed.outcome == plain.outcome
    assert untimed(streamed.to_dict()) == untimed(plain.to_dict())
    assert streamed.iterations[0].streamed and streamed.iterations[0].chunks > 0


# The demo endpoint's own streams.


def _stream(server: DemoServer, model: str, **extra: Any) -> httpx.Response:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": DEMO_PROMPT}],
        "stream": True,
        **extra,
    }
    return httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=10)


def _events(reply: httpx.Response) -> list[Any]:
    assert reply.headers["content-type"] == "text/event-stream"
    lines = [line for line in reply.text.splitlines() if line]
    assert all(line.startswith("data: ") for line in lines)
    return [line[6:] if line == "data: [DONE]" else json.loads(line[6:]) for line in lines]


def test_deltas_are_paced_so_ttft_and_decode_speed_show() -> None:
    request = RunRequest("well-behaved", 512, prompt="Say hello to the team, please.")
    with DemoServer(stream_first_delay=0.2, stream_interval=0.01) as server:
        with Client(server.base_url) as client:
            streamed = client.run(dataclasses.replace(request, stream=True)).trace.iterations[0]
            plain = client.run(request).trace.iterations[0]
    assert streamed.ttft_s >= 0.2
    assert streamed.chunks > 5
    # Lower bounds the server's sleeps guarantee whatever the scheduling: the client
    # may read the first event late, never the last one early.
    assert streamed.latency_s >= 0.2 + 0.01 * (streamed.chunks - 1)
    assert streamed.decode_tok_s is not None and streamed.decode_tok_s > 0
    assert plain.ttft_s == 0.0 and plain.decode_tok_s is None


def test_the_default_server_paces_its_streams() -> None:
    request = RunRequest("well-behaved", 512, prompt="Hello!", stream=True)
    with DemoServer() as server, Client(server.base_url) as client:
        it = client.run(request).trace.iterations[0]
    assert (server.stream_first_delay, server.stream_interval) == (0.05, 0.004)
    assert it.ttft_s >= 0.05
    assert it.chunks > 2 and it.latency_s >= 0.05 + 0.004 * (it.chunks - 1)


@pytest.mark.parametrize(
    ("options", "usage"),
    [
        pytest.param({}, False, id="not-asked"),
        pytest.param({"stream_options": {"include_usage": False}}, False, id="asked-not"),
        pytest.param({"stream_options": {"include_usage": True}}, True, id="asked"),
    ],
)
def test_usage_is_streamed_only_when_asked(
    demo: DemoServer, options: dict[str, Any], usage: bool
) -> None:
    events = _events(_stream(demo, "reasoning-field", **options))
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert all(e["object"] == "chat.completion.chunk" for e in chunks)
    assert any(e["choices"] and e["choices"][0]["delta"].get("reasoning_content") for e in chunks)
    with_usage = [e for e in chunks if "usage" in e]
    if not usage:
        assert with_usage == []
        return
    body = {"model": "reasoning-field", "messages": [{"role": "user", "content": DEMO_PROMPT}]}
    unstreamed = httpx.post(f"{demo.base_url}/chat/completions", json=body, timeout=10).json()
    assert with_usage == [chunks[-1]]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == unstreamed["usage"]


@pytest.mark.parametrize(
    ("model", "extra", "status"),
    [
        pytest.param("tool-spinner", {"tool_choice": "required"}, 500, id="persona-500"),
        pytest.param("smollm2-recorded", {"tool_choice": "required"}, 500, id="recorded-500"),
        pytest.param("gpt-nope", {}, 404, id="unknown-model"),
        pytest.param("well-behaved", {"max_tokens": -1}, 400, id="bad-request"),
    ],
)
def test_errors_are_not_streamed(
    demo: DemoServer, model: str, extra: dict[str, Any], status: int
) -> None:
    if "tool_choice" in extra:
        extra = {**extra, "tools": [t.to_openai() for t in demo_tools()]}
    reply = _stream(demo, model, **extra)
    assert reply.status_code == status
    assert reply.headers["content-type"] == "application/json"
    assert "error" in reply.json()


@pytest.mark.parametrize(
    "delays",
    [
        pytest.param({"stream_first_delay": -0.1}, id="negative"),
        pytest.param({"stream_interval": float("nan")}, id="nan"),
        pytest.param({"stream_interval": True}, id="bool"),
        pytest.param({"stream_first_delay": "0.1"}, id="string"),
    ],
)
def test_stream_delays_must_be_seconds(delays: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="seconds >= 0"):
        DemoServer(**delays)
