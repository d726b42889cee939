"""The doctor's `agent_clients` on real servers: llama-server, and LiteLLM in front of it.

Each agent client's two-turn tool run (rig_nb.clients: Claude Code over /v1/messages,
Codex over /v1/responses, opencode over chat) against llama-server with the Hermes tool
template, then through a LiteLLM proxy in front of the same server. SmolLM2 answers
without calling the tool under this template (no prefill here), so each run is one
request: what is judged is whether the server takes the client's shape. Verdicts as seen
are in FINDINGS.md, "Agent clients".
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from client_view import client_for
from llama_server_procs import LiteLLMProxy, Proc, ServerEnv, litellm_proxy

from rig_nb.capabilities import endpoint_report

pytestmark = pytest.mark.real

# llama-server's warning for Codex's apply_patch (the behaviour of ggml-org/llama.cpp#23041).
SKIPPED = "unsupported Responses tool type 'custom' skipped"


@pytest.fixture(scope="module")
def hermes_proxy(
    server_env: ServerEnv, hermes_tools_server: Proc, llama_server_logs: Path
) -> Iterator[LiteLLMProxy]:
    with litellm_proxy(server_env, [hermes_tools_server], llama_server_logs) as proxy:
        yield proxy


def test_llama_server_takes_every_clients_shape(hermes_tools_server: Proc) -> None:
    with client_for(hermes_tools_server.base_url) as client:
        report = endpoint_report(client, hermes_tools_server.model, checks=["agent_clients"])
    check = report.check("agent_clients")
    assert report.server == "llama.cpp"
    assert check.verdict == "claude-code ok; codex ok; opencode ok"
    assert check.ok is True and check.advice == ""
    # A system turn inside messages, cache_control blocks and a thinking budget over
    # /v1/messages: taken. Codex's custom tool: skipped with a warning, not refused.
    assert check.evidence == "; ".join(
        f"{name}: ended answer after 1 request" for name in ("claude-code", "codex", "opencode")
    )
    assert report.requests == 3
    assert SKIPPED in hermes_tools_server.log.read_text()


def test_litellm_refuses_claude_codes_thinking(hermes_proxy: LiteLLMProxy) -> None:
    key = hermes_proxy.api_key or ""
    with client_for(hermes_proxy.base_url, key) as client:
        report = endpoint_report(client, hermes_proxy.model, checks=["agent_clients"])
    check = report.check("agent_clients")
    assert report.server == "litellm"
    assert check.verdict == "claude-code error 400; codex ok; opencode ok"
    assert check.ok is False
    # LiteLLM maps `thinking` to reasoning.effort, which it refuses for this model.
    assert "claude-code: HTTP 400: litellm.UnsupportedParamsError: smollm2 doesn't support " in (
        check.evidence
    )
    assert "`reasoning.effort`" in check.evidence and key not in check.evidence
    assert "drop_params" in check.advice
    assert check.trace is not None and check.trace.client == "claude-code"
