"""Requests the demo tests send: raw chat bodies, the demo tool run, a probe verdict."""

from __future__ import annotations

import json
from typing import Any

import httpx

from rig_nb import Client, RigError, RunRequest, Trace
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools

TEXT = "text_tool_calls"  # the outcome of a run ended by tool calls written as text
ANSWER = (
    "Here is what I found. Lisbon: 21 C, clear sky. Oslo: 4 C, light rain. add(21, 4) gives 25."
)
CALLS = [
    ("get_weather", {"city": "Lisbon"}),
    ("get_weather", {"city": "Oslo"}),
    ("add", {"a": 21, "b": 4}),
]


def post(demo: DemoServer, body: Any) -> httpx.Response:
    """`body` POSTed to the demo's chat route, as it is."""
    return httpx.post(f"{demo.base_url}/chat/completions", json=body, timeout=10)


def chat(demo: DemoServer, model: str, **extra: Any) -> dict[str, Any]:
    """The 200 reply of `model` to the demo prompt, `extra` in the body."""
    body = {"model": model, "messages": [{"role": "user", "content": DEMO_PROMPT}], **extra}
    reply = post(demo, body)
    assert reply.status_code == 200, reply.text
    data: dict[str, Any] = reply.json()
    return data


def loop(client: Client, model: str, max_tokens: int = 512, **options: Any) -> tuple[str, Trace]:
    """The demo tool run of `model`: its outcome (or error class name) and trace."""
    request = RunRequest(
        model, max_tokens, system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools(), **options
    )
    try:
        trace = client.run(request).trace
    except RigError as exc:
        assert exc.trace is not None
        return type(exc).__name__, exc.trace
    return trace.outcome, trace


def probe(client: Client, model: str, tool_choice: str | None = "auto") -> str:
    """The probe's verdict: "tool call" or the error class name."""
    try:
        client.probe_tool_calling(model, tool_choice=tool_choice)
    except RigError as exc:
        return type(exc).__name__
    return "tool call"


def calls_of(trace: Trace) -> list[tuple[str, Any]]:
    """The trace's tool calls as (name, decoded arguments)."""
    return [(c.name, json.loads(c.arguments)) for c in trace.tool_calls]
