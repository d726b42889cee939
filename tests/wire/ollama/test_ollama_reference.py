"""The official `ollama` Python client as the reference reader of the demo's `/api/chat`.

For every persona, each request of a run over `api="ollama"` is sent again by
`ollama.Client.chat` (streamed and not); the exact bytes it sent are then posted once
more and read by rig_nb's wire. Both must give the same reply: content, thinking, tool
calls, finish, counts and durations. So rig_nb's reader and the demo's server side
cannot err together: a third party reads the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import ollama
import pytest
from shared import PERSONAS

from rig_nb import Client, RunRequest
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools
from rig_nb.wire import WIRES, Reply

OLLAMA = WIRES["ollama"]


@pytest.fixture(scope="module")
def quick_demo() -> Iterator[DemoServer]:
    with DemoServer(stream_first_delay=0, stream_interval=0) as server:
        yield server


def _bodies(demo: DemoServer, model: str) -> list[dict[str, Any]]:
    """The `/api/chat` bodies of a three-round run of `model` over the ollama wire."""
    mark = len(demo.requests)
    request = RunRequest(
        model, 512, system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools(), max_iterations=3
    )
    with Client(demo.base_url, api="ollama", max_retries=0) as client:
        trace = client.run_trace(request)
    assert trace.iterations
    sent = [r for r in demo.requests[mark:] if r.path == "/api/chat"]
    assert len(sent) == len(trace.iterations)
    return [r.json for r in sent]


def _reference(demo: DemoServer, body: dict[str, Any], stream: bool) -> dict[str, Any]:
    """What ollama.Client.chat reads for `body`, and the bytes it sent (`sent`)."""
    mark = len(demo.requests)
    args: dict[str, Any] = {
        "model": body["model"],
        "messages": body["messages"],
        "tools": body.get("tools"),
        "options": body["options"],
        "think": body.get("think"),
    }
    with ollama.Client(host=demo.origin) as client:
        if not stream:
            parts = [client.chat(**args, stream=False)]
        else:
            parts = list(client.chat(**args, stream=True))
    sent = demo.requests[mark].body
    last = parts[-1]
    calls = [
        (c.function.name, dict(c.function.arguments))
        for part in parts
        for c in part.message.tool_calls or []
    ]
    return {
        "content": "".join(p.message.content or "" for p in parts),
        "thinking": "".join(p.message.thinking or "" for p in parts),
        "calls": calls,
        "done_reason": last.done_reason,
        "counts": (last.prompt_eval_count, last.eval_count),
        "total_s": (last.total_duration or 0) / 1e9,
        "done": last.done,
        "sent": sent,
    }


def _ours(demo: DemoServer, sent: bytes) -> Reply:
    """rig_nb's wire reading the demo's answer to the same request bytes."""
    stream = json.loads(sent).get("stream", True)
    headers = {"content-type": "application/json"}
    with httpx.Client(base_url=demo.origin) as http:
        if not stream:
            return OLLAMA.parse(http.post("/api/chat", content=sent, headers=headers).content)
        with http.stream("POST", "/api/chat", content=sent, headers=headers) as response:
            return OLLAMA.read_stream(response.iter_bytes(), OLLAMA.reader())


@pytest.mark.parametrize("model", PERSONAS)
def test_the_ollama_client_reads_what_rig_nb_reads(quick_demo: DemoServer, model: str) -> None:
    for body in _bodies(quick_demo, model):
        for stream in (False, True):
            ref = _reference(quick_demo, body, stream)
            ours = _ours(quick_demo, ref["sent"])
            where = (model, stream, len(body["messages"]))
            assert ref["done"] is True, where
            assert ours.content == ref["content"], where
            assert ours.reasoning == ref["thinking"], where
            assert ours.reasoning_field == ("thinking" if ref["thinking"] else ""), where
            calls = [(c.name, json.loads(c.arguments)) for c in ours.tool_calls]
            assert calls == ref["calls"], where
            finish = (
                "tool_calls"
                if ref["calls"] and ref["done_reason"] == "stop"
                else ref["done_reason"]
            )
            assert ours.finish_reason == finish, where
            usage = (ours.usage.get("prompt_tokens"), ours.usage.get("completion_tokens"))
            assert usage == ref["counts"], where
            assert ours.server_timings.get("total_s", 0.0) == pytest.approx(ref["total_s"]), where
            assert ours.stream_faults == [], where
