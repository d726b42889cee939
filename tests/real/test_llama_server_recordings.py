"""The packaged llama-server recordings: what they hold, and that they replay as the servers run.

rig_nb/demo/recordings/llama-server-<flavour>.jsonl come from tests/real/llama_server_sessions.py
(run it to record them again). The demo serves each as the persona
`llama-server-<flavour>-recorded`; here the same requests go to the live servers of the real
tier and to those personas, and must end the same way.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

import pytest
from llama_server_procs import MODEL, Proc
from llama_server_sessions import FLAVOURS, RECORDING_KEY, demo_scenarios

from rig_nb.compare import DEFAULT_SCENARIOS, Endpoint, compare
from rig_nb.demo import DemoServer
from rig_nb.demo.replay import load_recording

pytestmark = pytest.mark.real

FIXTURES = {
    "llama-server-deepseek": "think_deepseek_server",
    "llama-server-none": "think_none_server",
    "llama-server-skip": "think_skip_server",
}
# What must never be in a packaged file: an address, a port, a header, a key, a local path.
FORBIDDEN = re.compile(
    r"127\.0\.0\.1|localhost|\[redacted\]|authorization|bearer|\bsk-|https?://|:\d{2,5}/|"
    r"/root/|/home/|/tmp/|\.cache",
    re.IGNORECASE,
)


def packaged(stem: str) -> str:
    return (resources.files("rig_nb.demo") / "recordings" / f"{stem}.jsonl").read_text("utf-8")


@pytest.mark.parametrize("stem", list(FLAVOURS))
def test_a_packaged_recording_holds_exchanges_and_nothing_that_names_a_machine(stem: str) -> None:
    text = packaged(stem)
    first, *lines = text.splitlines()
    # The first line says what it is; the demo's model list shows it as the description.
    assert json.loads(first) == {"note": FLAVOURS[stem][1]}
    assert RECORDING_KEY not in text
    assert not FORBIDDEN.findall(text), FORBIDDEN.findall(text)
    paths = []
    for line in lines:
        record = json.loads(line)
        assert set(record) == {"request", "response"}  # no headers, either way
        assert set(record["request"]) == {"method", "path", "body"}
        assert set(record["response"]) <= {"status", "body", "events"}
        paths.append(record["request"]["path"])
    assert set(paths) <= {"chat/completions", "models"}
    exchanges = load_recording(resources.files("rig_nb.demo") / "recordings" / f"{stem}.jsonl")
    # Real llama-server replies, unforced (no grammar in any request).
    assert len(exchanges) >= 12 and all(ex.status == 200 for ex in exchanges)
    assert not [ex for ex in exchanges if "grammar" in ex.request]
    assert {ex.body["system_fingerprint"] for ex in exchanges} == {"b0-unknown"}
    assert all("timings" in ex.body for ex in exchanges)


def rows_of(df: Any) -> list[tuple[Any, ...]]:
    """Each row's outcome as compare reports it, and each iteration's ending (not the words:
    which ones a greedy decoder picks may change with the CPU's arithmetic)."""
    traces = df.attrs["traces"]
    out = []
    for index, r in enumerate(df.itertuples()):
        trace = traces[index]
        endings = [(it.ending, it.reasoning_shape, it.reasoning_field) for it in trace.iterations]
        out.append(
            (
                r.scenario,
                r.outcome,
                r.ending,
                r.reasoning_shapes,
                r.leaks,
                r.iterations,
                r.tool_calls,
                endings,
            )
        )
    return out


@pytest.mark.parametrize("stem", list(FLAVOURS))
def test_a_recorded_persona_ends_every_demo_request_as_the_live_server_does(
    request: pytest.FixtureRequest, stem: str
) -> None:
    live: Proc = request.getfixturevalue(FIXTURES[stem])
    scenarios = [*demo_scenarios(), *DEFAULT_SCENARIOS[1:]]
    persona = f"{stem}-recorded"
    live_df = compare([Endpoint(stem, live.base_url, MODEL)], scenarios=scenarios, concurrency=1)
    with DemoServer(stream_first_delay=0, stream_interval=0) as demo:
        assert persona in demo.models
        replay_df = compare([Endpoint(stem, demo.base_url, persona)], scenarios=scenarios)
        streamed_df = compare(
            [Endpoint(stem, demo.base_url, persona)], scenarios=scenarios[:2], stream=True
        )
    print(f"\n{stem}:\n" + live_df.drop(columns=["error", "latency_s", "ttft_s"]).to_string())
    assert rows_of(replay_df) == rows_of(live_df)
    # Streamed from the recorded bodies, the demo's probe and run end the same way.
    assert rows_of(streamed_df) == rows_of(live_df)[:2]
    # What the three flags make of the same model: the reasoning's place, and no tool calls.
    assert set(live_df["tool_calls"].fillna(0)) == {0}
    # compare names reasoning that came in the reasoning field "field".
    shapes = {"llama-server-deepseek": "field", "llama-server-none": "unclosed"}
    run = rows_of(live_df)[1]
    assert run[0] == "demo"
    if stem in shapes:
        # All of it reasoning (the template opened the block, SmolLM2 never closes it): no answer.
        assert run[1:4] == ("reasoning_only", "reasoning_only", shapes[stem])
    else:
        # Verbatim under --skip-chat-parsing: the same reasoning reads as an answer.
        assert run[1:4] == ("ok", "answer", "none")
