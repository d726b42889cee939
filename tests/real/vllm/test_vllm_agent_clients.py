"""The doctor's `agent_clients` on the real vLLM tier: each agent client's short tool run.

vLLM 0.32 takes Claude Code's system turn inside `messages` (refused before 0.23:
vllm-project/vllm#44000) but refuses its thinking budget (no reasoning config with
`--reasoning-parser deepseek_v3` alone), and streamed, that refusal arrives as an
in-stream `internal_error` (its Messages stream reads the chat error as a chunk); it
refuses Codex's `custom` tool with a grammar; opencode's shape runs. Verdicts as seen
are in FINDINGS.md, "Agent clients".
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from vllm_server import TIMEOUT_S, VllmServer

from rig_nb import Client
from rig_nb.capabilities import endpoint_report
from rig_nb.clients import CLIENTS
from rig_nb.wire import WIRES, Request, ToolSpec, Turn

pytestmark = pytest.mark.real

BUDGET_REFUSED = (
    "thinking_token_budget is set but reasoning_config is not configured. Please set "
    "--reasoning-parser and/or --reasoning-config to use thinking_token_budget."
)
GRAMMAR_REFUSED = (
    "Custom tools with a grammar format are not supported; only free-form text custom tools "
    "are accepted. (parameter=tools)"
)


def test_agent_clients_on_vllm(client: Client, vllm: VllmServer) -> None:
    report = endpoint_report(client, vllm.model, checks=["agent_clients"])
    check = report.check("agent_clients")
    assert report.server == "vllm"
    assert check.verdict == "claude-code BackendError; codex error 400; opencode ok"
    assert check.ok is False
    assert "claude-code: error in stream: internal_error: 2 validation errors for " in (
        check.evidence
    )
    assert f"codex: HTTP 400: {GRAMMAR_REFUSED}" in check.evidence
    assert "opencode: ended answer after 1 request" in check.evidence
    assert "--reasoning-config" in check.advice and "free-form text" in check.advice
    assert report.requests == 3


def _claude_code_body(vllm: VllmServer) -> dict[str, Any]:
    tool = ToolSpec("get_weather", "Get the weather.", {"type": "object", "properties": {}})
    turns = (Turn("system", "You are a coding agent."), Turn("user", "Hi."))
    request = Request(vllm.model, turns, 256, tools=(tool,))
    body = CLIENTS["claude-code"].shape(WIRES["messages"].body(request), request)
    return {**body, "stream": False}


def test_vllm_refuses_the_thinking_budget_and_takes_the_system_turn(vllm: VllmServer) -> None:
    body = _claude_code_body(vllm)
    assert [m["role"] for m in body["messages"]] == ["user", "system"]
    refused = httpx.post(f"{vllm.base_url}/messages", json=body, timeout=TIMEOUT_S)
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == BUDGET_REFUSED
    # The same body without thinking: the system turn inside messages is taken.
    taken = httpx.post(
        f"{vllm.base_url}/messages",
        json={k: v for k, v in body.items() if k != "thinking"},
        timeout=TIMEOUT_S,
    )
    assert taken.status_code == 200 and taken.json()["type"] == "message"
