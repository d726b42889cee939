"""Ollama's native wire (issue 32): what only it does, beside the loop it runs as chat does.

That every persona, scripted reply and probe runs the same over `/api/chat` as over
`/chat/completions` is in test_wire_parity.py, with Ollama's row of
`parity_view.CARRIES` (call ids made by the loop, arguments as objects, its own
`server_timings` and `thinking_sent`, no reasoning or cached token counts). Here: Ollama
reports its own work, and the thinking switch and the reasoning replay go over `think`
and `thinking`.
"""

from __future__ import annotations

import dataclasses

import pytest
from parity_view import assert_runs_same, persona_request, run_once, runs_over
from shared import PERSONAS

from rig_nb import Client, RunRequest
from rig_nb.demo import DEMO_PROMPT, DemoServer, demo_tools


@pytest.mark.parametrize("model", PERSONAS)
def test_every_persona_reports_its_own_work_over_ollama(demo: DemoServer, model: str) -> None:
    with Client(demo.base_url, api="ollama", max_retries=0) as client:
        for stream in (False, True):
            _, trace = run_once(client, persona_request(model), stream)
            assert trace.iterations, "the run made no round"
            for it in trace.iterations:
                if it.ending != "error":  # Ollama reports its own work; the demo does too
                    assert it.server_timings["decode_tokens"] == it.usage["completion_tokens"]
                    assert it.server_timings["total_s"] > it.server_timings["decode_s"] >= 0


def test_the_thinking_switch_and_replay_work_over_ollama(demo: DemoServer) -> None:
    # deepseek-thinking-tools answers 400 when a tool turn comes back without its reasoning:
    # over /api/chat it goes back in `thinking`, and the run ends as over chat.
    request = RunRequest(
        "deepseek-thinking-tools", 512, prompt=DEMO_PROMPT, tools=demo_tools(), thinking=True
    )
    runs = runs_over(demo.base_url, request, "ollama")
    assert_runs_same(runs, "ollama")
    trace = runs["ollama", False][1]
    assert trace.outcome == "ok"
    assert [it.replayed for it in trace.iterations[:-1]] == ["thinking"] * 2
    assert all(it.thinking_sent == {"think": True} for it in trace.iterations)
    off = dataclasses.replace(request, model="honors-thinking-switch", thinking=False)
    with Client(demo.base_url, api="ollama") as client:
        quiet = client.run(off).trace
    assert quiet.outcome == "ok"
    assert all(it.reasoning_content == "" for it in quiet.iterations)
    assert demo.requests[-1].json["think"] is False
