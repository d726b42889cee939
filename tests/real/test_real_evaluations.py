"""Evaluations on real servers: `structured_output` against llama-server's own `response_format`
support and through a LiteLLM proxy, and the agentic request shape (a 4 KB system prompt, 12
tools, three dependent steps) sent to both.

llama-server turns a json_schema `response_format` into a grammar. Under a template without
thinking (Hermes-2-Pro) the grammar holds from the first token and the JSON object is the
content (`content`). Under the Qwen3-Thinking-style template, which opens `<think>`, the grammar
waits for the thinking block to close, and SmolLM2 never closes it: nothing is constrained, the
reply is no JSON object (`ignored`), directly and through LiteLLM alike. The agent's request
(2134 tokens) does not fit the 2048-token context these servers run with: HTTP 400, passed
through by the proxy. Small budgets keep the module short; `pytest -s` prints the verdicts.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from client_view import client_for
from llama_server_procs import LiteLLMProxy, Proc

from rig_nb import Client
from rig_nb.agentic import AGENTIC_SYSTEM, AGENTIC_TASK
from rig_nb.capabilities.structured import structured_output_check
from rig_nb.compare import Endpoint, Scenario, compare

pytestmark = pytest.mark.real

# Small budgets: the shape of the request is what is tested, not how long SmolLM2 goes on.
AGENTIC = dataclasses.replace(Scenario.agentic(), max_tokens=48, max_iterations=2)
BUDGET = 48


def verdict_of(client: Client, model: str) -> tuple[str, str]:
    check = structured_output_check(client, model, "llama.cpp", max_tokens=BUDGET)
    assert check.trace is not None
    print(f"\n  structured_output {check.verdict}: {check.evidence}")
    return check.verdict, check.evidence


@pytest.mark.parametrize(
    ("server", "verdict"),
    [
        pytest.param("hermes_tools_server", "content", id="hermes"),
        pytest.param("think_deepseek_server", "ignored", id="deepseek"),
    ],
)
def test_llama_server_structured_output(
    request: pytest.FixtureRequest, server: str, verdict: str
) -> None:
    proc: Proc = request.getfixturevalue(server)
    with client_for(proc.base_url) as client:
        got, evidence = verdict_of(client, proc.model)
    assert got == verdict, evidence
    assert ('"answer"' in evidence) == (verdict == "content")


def test_litellm_passes_response_format_through(
    litellm_server: LiteLLMProxy, think_deepseek_server: Proc
) -> None:
    with client_for(litellm_server.base_url, litellm_server.api_key) as client:
        got, _ = verdict_of(client, litellm_server.models[think_deepseek_server.name])
    # The proxy adds nothing and loses nothing: the upstream's verdict.
    assert got == "ignored"


def agentic_row(
    base_url: str, model: str, api_key: str = ""
) -> tuple[tuple[str, str], dict[str, object]]:
    endpoint = Endpoint("e", base_url, model, api_key=api_key)
    df = compare([endpoint], scenarios=[AGENTIC], progress=False, timeout=60, deadline=120)
    trace = df.attrs["traces"][0]
    first = trace.iterations[0]
    print(f"\n  agentic {df.loc[0, 'outcome']}: {df.loc[0, 'error'][:160]}")
    return (str(df.loc[0, "outcome"]), str(df.loc[0, "error"])), {
        "system": first.messages[0]["content"],
        "task": first.messages[1]["content"],
        "tools": trace.settings["tools"],
    }


def test_agentic_shape_on_llama_server_and_through_litellm(
    think_skip_server: Proc, litellm_server: LiteLLMProxy
) -> None:
    direct = agentic_row(think_skip_server.base_url, think_skip_server.model)
    proxied = agentic_row(
        litellm_server.base_url,
        litellm_server.models[think_skip_server.name],
        litellm_server.api_key,
    )
    for (outcome, error), sent in (direct, proxied):
        assert sent["system"] == AGENTIC_SYSTEM and sent["task"] == AGENTIC_TASK
        assert isinstance(sent["tools"], list) and len(sent["tools"]) == 12
        # The agent's request does not fit SmolLM2's 2048-token context: the server says so.
        assert outcome == "BackendError" and "400" in error, json.dumps(sent)[:200]
