"""Recorded sessions replayed by the demo endpoint: record through RecordingProxy, then serve.

Bodies and streams, each replayed both ways.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.request
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import pytest
from shared import ECHO

from rig_nb import (
    BackendError,
    Client,
    IterationLimitError,
    NoToolCallingError,
    OutputLimitError,
    RunRequest,
    Trace,
)
from rig_nb.capabilities import tool_choice_matrix
from rig_nb.compare import Endpoint, compare
from rig_nb.demo import DemoServer
from rig_nb.demo.recording import RecordingProxy
from rig_nb.demo.replay import ReplayPersona, load_recording, recorded_personas
from rig_nb.testing import Response, ScriptedServer, chat_reply, sse_body, tool_call
from rig_nb.wire import Request, stream_chunks

LOOP = RunRequest("real", 128, prompt="Echo hi twice, then answer.", tools=(ECHO,))
SCRIPT: list[Response | Mapping[str, Any]] = [
    chat_reply(None, tool_calls=[tool_call("echo", {"text": "hi"}, id="call_a")]),
    chat_reply(None, tool_calls=[tool_call("echo", "{text: hi", id="call_b")]),
    chat_reply("Done: echo hi."),
    chat_reply("Once upon a", finish_reason="length"),
    Response({"error": {"message": "Internal Server Error"}}, status=500),
]


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    """A session recorded from a scripted upstream: a 3-round loop, a small budget, a 500."""
    out = tmp_path / "rec.jsonl"
    with ScriptedServer(SCRIPT) as upstream:
        with RecordingProxy(upstream.base_url, out, note="a scripted stand-in") as proxy:
            with Client(proxy.base_url) as client:
                client.run(LOOP)
                with pytest.raises(OutputLimitError):
                    client.run(RunRequest("real", 4, prompt="Tell a story."))
                with pytest.raises(BackendError):
                    client.probe_tool_calling("real", tool_choice="required")
    return out


@pytest.fixture
def demo(recording: Path) -> Iterator[DemoServer]:
    with DemoServer(extra_personas=[ReplayPersona("replayed", recording)]) as server:
        yield server


def _shape(trace: Trace) -> list[tuple[Any, ...]]:
    return [
        (
            it.text,
            it.finish_reason,
            [(c.id, c.arguments, c.result, c.is_error) for c in it.tool_calls],
        )
        for it in trace.iterations
    ]


def test_an_identical_run_replays_exactly(demo: DemoServer) -> None:
    with ScriptedServer(SCRIPT[:3]) as live, Client(live.base_url) as client:
        expected = client.run(LOOP)
    with Client(demo.base_url) as client:
        got = client.run(RunRequest("replayed", 128, prompt=LOOP.prompt, tools=(ECHO,)))
    assert got.text == expected.text == "Done: echo hi."
    assert _shape(got.trace) == _shape(expected.trace)
    assert got.trace.tool_calls[1].is_error  # the malformed arguments, replayed as sent
    chat = [r.json for r in demo.requests if r.path.endswith("/chat/completions")]
    assert [b["model"] for b in chat] == ["replayed"] * 3


def test_replies_carry_the_persona_name_and_recorded_errors_keep_their_status(
    demo: DemoServer,
) -> None:
    with Client(demo.base_url) as client:
        with pytest.raises(BackendError) as info:
            client.probe_tool_calling("replayed", tool_choice="required")
        assert info.value.status_code == 500
        with pytest.raises(OutputLimitError) as budget:
            client.run(RunRequest("replayed", 4, prompt="Tell a story."))
    assert budget.value.trace is not None
    assert budget.value.trace.iterations[0].raw_content == "Once upon a"


def test_an_unrecorded_conversation_follows_the_closest_one_by_position(
    demo: DemoServer,
) -> None:
    # Different prompt, same tools and budget: the recorded loop, round by round.
    request = RunRequest("replayed", 128, prompt="Something else entirely.", tools=(ECHO,))
    with Client(demo.base_url) as client:
        result = client.run(request)
    assert result.iterations == 3 and result.text == "Done: echo hi."
    # A small budget without tools is closest to the recorded small-budget run.
    with Client(demo.base_url) as client, pytest.raises(OutputLimitError):
        client.run(RunRequest("replayed", 8, prompt="Write an epic."))


def test_past_the_recorded_end_the_last_round_is_served_again(tmp_path: Path) -> None:
    out = tmp_path / "spin.jsonl"
    spin = [
        chat_reply(None, tool_calls=[tool_call("echo", {"text": "x"}, id=f"c{i}")])
        for i in range(2)
    ]
    with ScriptedServer(spin) as upstream, RecordingProxy(upstream.base_url, out) as proxy:
        with Client(proxy.base_url) as client, pytest.raises(IterationLimitError):
            client.run(RunRequest("real", 64, prompt="spin", tools=(ECHO,), max_iterations=2))
    with DemoServer(extra_personas=[ReplayPersona("spin", out)]) as server:
        with Client(server.base_url) as client, pytest.raises(IterationLimitError) as info:
            client.run(RunRequest("spin", 64, prompt="spin", tools=(ECHO,), max_iterations=5))
    trace = info.value.trace
    assert trace is not None and len(trace.iterations) == 5
    # The repeated recorded id is replaced by the loop, as with any duplicate id.
    assert [c.received_id for c in trace.tool_calls] == ["c0", "c1", "c1", "c1", "c1"]
    assert len({c.id for c in trace.tool_calls}) == 5


def test_a_malformed_request_is_refused_like_any_persona(demo: DemoServer) -> None:
    with Client(demo.base_url, max_retries=0) as client:
        with pytest.raises(BackendError) as info:
            client.chat(Request("replayed", (), 16))
    assert info.value.status_code == 400


def test_the_note_describes_the_persona(demo: DemoServer, recording: Path) -> None:
    with urllib.request.urlopen(f"{demo.base_url}/models", timeout=10) as resp:
        models = {m["id"]: m for m in json.load(resp)["data"]}
    assert models["replayed"]["description"] == "a scripted stand-in"
    assert len(load_recording(recording)) == 5


def test_a_broken_or_empty_recording_is_refused(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"request": {"path": "chat/completions"}}\n')
    with pytest.raises(ValueError, match="line 1"):
        load_recording(broken)
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"note": "nothing here"}) + "\n")
    with pytest.raises(ValueError, match="no chat completions"):
        ReplayPersona("empty", empty)


def test_no_tool_calling_replays_as_no_tool_calling(tmp_path: Path) -> None:
    out = tmp_path / "plain.jsonl"
    with ScriptedServer([chat_reply("ping")]) as upstream:
        with RecordingProxy(upstream.base_url, out) as proxy, Client(proxy.base_url) as client:
            with pytest.raises(NoToolCallingError):
                client.probe_tool_calling("real")
    with DemoServer(extra_personas=[ReplayPersona("plain", out)]) as server:
        with Client(server.base_url) as client, pytest.raises(NoToolCallingError):
            client.probe_tool_calling("plain")


@pytest.fixture(scope="module")
def recorded() -> Iterator[DemoServer]:
    with DemoServer() as server:
        yield server


def test_packaged_recordings_are_served_as_personas(recorded: DemoServer) -> None:
    names = [p.name for p in recorded_personas()]
    assert names == [
        "llama-server-deepseek-recorded",
        "llama-server-none-recorded",
        "llama-server-skip-recorded",
        "smollm2-chatml-recorded",
        "smollm2-recorded",
    ]
    assert recorded.models[-5:] == names
    with urllib.request.urlopen(f"{recorded.base_url}/models", timeout=10) as resp:
        described = {m["id"]: m["description"] for m in json.load(resp)["data"]}
    assert "chatml-function-calling" in described["smollm2-recorded"]
    assert "SmolLM2" in described["smollm2-chatml-recorded"]


def test_packaged_recordings_hold_no_headers_and_relative_paths_only() -> None:
    folder = resources.files("rig_nb.demo") / "recordings"
    for f in folder.iterdir():
        for line in f.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if "note" in record:
                continue
            assert set(record) == {"request", "response"}
            assert set(record["request"]) == {"method", "path", "body"}
            assert not record["request"]["path"].startswith(("/", "http"))
        assert "authorization" not in f.read_text(encoding="utf-8").lower()


def test_the_recorded_tool_choice_matrix_is_the_real_servers(recorded: DemoServer) -> None:
    with Client(recorded.base_url) as client:
        fc = tool_choice_matrix(client, "smollm2-recorded")
        plain = tool_choice_matrix(client, "smollm2-chatml-recorded")
    assert fc["auto"] == "tool call" and fc["required"] == "error 500"
    assert fc["unset"] in ("text", "length")
    assert set(plain.values()) <= {"text", "length"}


def test_compare_tells_the_recorded_configurations_apart(recorded: DemoServer) -> None:
    df = compare([Endpoint(m, recorded.base_url, m) for m in recorded.models[-5:]])
    outcome = {(r.endpoint, r.scenario): r.outcome for r in df.itertuples()}
    assert outcome[("smollm2-recorded", "probe")] == "ok"
    assert outcome[("smollm2-chatml-recorded", "probe")] != "ok"
    calls = df.set_index(["endpoint", "scenario"])["tool_calls"]
    assert calls[("smollm2-recorded", "tool round trip")] >= 1
    assert calls["smollm2-chatml-recorded"].fillna(0).eq(0).all()


# Streamed sessions: recorded event by event, replayed as streams.

FINAL = "Done: echo hi, and that is the whole story of this run."
STREAM_SCRIPT: list[Response | Mapping[str, Any]] = [
    chat_reply(None, tool_calls=[tool_call("echo", {"text": "hi"}, id="call_a")]),
    chat_reply(FINAL, reasoning_content="Both calls are back; time to answer."),
]
STREAM_LOOP = RunRequest("real", 128, prompt="Echo hi, then answer.", tools=(ECHO,))


def _untimed(trace: Trace) -> list[dict[str, Any]]:
    timing = {"latency_s", "ttft_s", "chunks", "streamed", "duration_s"}
    rows = []
    for it in trace.to_dict()["iterations"]:
        it = {k: v for k, v in it.items() if k not in timing}
        it["tool_calls"] = [
            {k: v for k, v in c.items() if k not in timing} for c in it["tool_calls"]
        ]
        rows.append(it)
    return rows


def _sse(server: DemoServer, body: dict[str, Any]) -> list[Any]:
    reply = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=10)
    assert reply.headers["content-type"] == "text/event-stream"
    lines = [line[6:] for line in reply.text.splitlines() if line.startswith("data: ")]
    return [line if line == "[DONE]" else json.loads(line) for line in lines]


@pytest.fixture
def streamed_recording(tmp_path: Path) -> tuple[Path, Trace]:
    """A streamed two-round loop recorded through the proxy, and the live run's trace."""
    out = tmp_path / "stream.jsonl"
    with ScriptedServer(STREAM_SCRIPT) as upstream:
        with RecordingProxy(upstream.base_url, out, note="a streamed session") as proxy:
            with Client(proxy.base_url) as client:
                live = client.run(dataclasses.replace(STREAM_LOOP, stream=True)).trace
    return out, live


def test_a_recorded_stream_replays_event_by_event(
    streamed_recording: tuple[Path, Trace],
) -> None:
    path, live = streamed_recording
    exchanges = load_recording(path)
    assert [ex.streamed for ex in exchanges] == [True, True]
    request = dataclasses.replace(STREAM_LOOP, model="replayed", stream=True)
    with DemoServer(
        extra_personas=[ReplayPersona("replayed", path)], stream_first_delay=0, stream_interval=0
    ) as server:
        with Client(server.base_url) as client:
            replayed = client.run(request).trace
        first = {**exchanges[0].request, "model": "replayed"}
        served = _sse(server, first)
    assert _untimed(replayed) == _untimed(live)
    assert replayed.iterations[-1].text == FINAL
    # The recorded events, as recorded: not rebuilt from a body with other piece sizes.
    assert [it.chunks for it in replayed.iterations] == [it.chunks for it in live.iterations]
    assert served == [
        {**e, "model": "replayed"} if isinstance(e, dict) else e for e in exchanges[0].events or ()
    ]


def test_a_recorded_stream_answers_an_unstreamed_request_with_its_sum(
    streamed_recording: tuple[Path, Trace],
) -> None:
    path, live = streamed_recording
    with DemoServer(extra_personas=[ReplayPersona("replayed", path)]) as server:
        with Client(server.base_url) as client:
            result = client.run(dataclasses.replace(STREAM_LOOP, model="replayed"))
    assert result.text == FINAL and result.iterations == 2 and result.tool_calls == 1
    assert _untimed(result.trace) == _untimed(live)
    assert not any(it.streamed for it in result.trace.iterations)


def test_a_recorded_body_is_streamed_when_asked(demo: DemoServer) -> None:
    with ScriptedServer(SCRIPT[:3]) as live, Client(live.base_url) as client:
        expected = client.run(LOOP).trace
    request = RunRequest("replayed", 128, prompt=LOOP.prompt, tools=(ECHO,), stream=True)
    with Client(demo.base_url) as client:
        got = client.run(request).trace
        with pytest.raises(BackendError) as info:
            client.probe_tool_calling("replayed", tool_choice="required", stream=True)
    assert _untimed(got) == _untimed(expected)
    assert all(it.streamed and it.chunks > 0 for it in got.iterations)
    assert info.value.status_code == 500  # a recorded error is replayed, not streamed


def test_each_way_of_asking_gets_the_reply_recorded_that_way(tmp_path: Path) -> None:
    out = tmp_path / "both.jsonl"
    reply = chat_reply("Recorded both ways, with enough text to stream in pieces.")
    with ScriptedServer([reply, reply]) as upstream, RecordingProxy(upstream.base_url, out) as p:
        with Client(p.base_url) as client:
            client.run(RunRequest("real", 64, prompt="hi"))
            client.run(RunRequest("real", 64, prompt="hi", stream=True))
    plain, streamed = load_recording(out)
    assert (plain.streamed, streamed.streamed) == (False, True)
    body = {**plain.request, "model": "both"}
    with DemoServer(
        extra_personas=[ReplayPersona("both", out)], stream_first_delay=0, stream_interval=0
    ) as server:
        got = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=10).json()
        events = _sse(server, {**streamed.request, "model": "both"})
    assert got == {**plain.body, "model": "both"}
    assert len(events) == len(streamed.events or ()) and events[-1] == "[DONE]"


def test_a_broken_recorded_stream_replays_broken(tmp_path: Path) -> None:
    out = tmp_path / "broken.jsonl"
    events = stream_chunks(chat_reply("cut off in the middle of a word"), piece_chars=6)[:4]
    broken = Response(sse_body(events, done=False), headers={"content-type": "text/event-stream"})
    request = RunRequest("real", 64, prompt="hi", stream=True)
    with ScriptedServer([broken]) as upstream, RecordingProxy(upstream.base_url, out) as proxy:
        with Client(proxy.base_url, max_retries=0) as client, pytest.raises(BackendError):
            client.run(request)
    with DemoServer(extra_personas=[ReplayPersona("broken", out)]) as server:
        with Client(server.base_url, max_retries=0) as client:
            with pytest.raises(BackendError) as info:
                client.run(dataclasses.replace(request, model="broken"))
    assert info.value.kind == "protocol"
    assert info.value.trace is not None
    assert info.value.trace.iterations[0].raw_content == "cut off in the mid"
