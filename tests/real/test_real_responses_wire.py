"""The Responses wire on real servers: llama-server's own /v1/responses and LiteLLM's proxy.

Every grammar-forced shape (grammars.SHAPES) runs through the loop over chat completions and
over /responses, streamed and not, on the same llama-server (deepseek reasoning format) in the
same test; each wire's ending is asserted, and everything else the client recorded must agree
but for what the tables below name. Through LiteLLM, /v1/responses is forwarded to
llama-server's own route without the request's server switches (FINDINGS.md, "The Responses
wire"). Kept to one llama-server flavour and one LiteLLM upstream: the module stays within
its time budget on a shared machine.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import grammars as G
import pytest
from client_view import Seen, client_for, run_loop, seen
from llama_server_procs import (
    LiteLLMProxy,
    Proc,
    ServerEnv,
    litellm_proxy,
)

from rig_nb import RunRequest

pytestmark = pytest.mark.real

SHAPE_KEYS = ("a", "c", "d", "d2", "e")
# (chat ending, responses ending) per flavour and shape; the same on both wires unless listed.
# llama-server's /v1/responses reports every reply `completed`, the budget-cut one too: over
# Responses, the unclosed think at the budget (c) is no longer finish "length".
CUT_OVER_RESPONSES = {
    "think-deepseek": ("length_in_reasoning", "reasoning_only"),
    "think-skip": ("length", "answer"),
}
ENDINGS = {
    "think-deepseek": {
        "a": "answer",
        "d": "reasoning_only",
        "d2": "reasoning_only",
        "e": "text_tool_calls",
    },
    "think-skip": {"a": "answer", "d": "answer", "d2": "reasoning_only", "e": "text_tool_calls"},
}
FIXTURES = {"think-deepseek": "think_deepseek_server"}


def expected(flavour: str, key: str) -> tuple[str, str]:
    if key == "c":
        return CUT_OVER_RESPONSES[flavour]
    ending = ENDINGS[flavour][key]
    return ending, ending


def both_wires(
    base_url: str, api_key: str, model: str, key: str | None, stream: bool
) -> dict[str, Seen]:
    """The loop's record of one forced shape (None: no grammar, 64 tokens) over chat and over
    /responses, on one server."""
    shape = G.SHAPES[key] if key is not None else None
    run = RunRequest(
        model,
        shape.max_tokens if shape is not None else 64,
        prompt=G.QUESTION,
        stream=stream,
        extra_body={"grammar": shape.grammar} if shape is not None else {},
    )
    out = {}
    with client_for(base_url, api_key) as client:
        for api in ("chat", "responses"):
            trace, _ = run_loop(client.over(api), run)
            assert trace.settings["api"] == api
            out[api] = seen(trace)
    return out


def wire_neutral(s: Seen) -> Seen:
    """What must agree between the wires: all but the ending's consequences and field name."""
    return dataclasses.replace(
        s, field=bool(s.field) and "field", ending="", finish="", outcome="", text=""
    )


def check(flavour: str, key: str, got: Mapping[str, Seen]) -> None:
    chat_ending, responses_ending = expected(flavour, key)
    assert (got["chat"].ending, got["responses"].ending) == (chat_ending, responses_ending)
    assert wire_neutral(got["chat"]) == wire_neutral(got["responses"])
    if got["responses"].reasoning:
        assert got["responses"].field == "reasoning_text"
    if key == "c":
        assert (got["chat"].finish, got["responses"].finish) == ("length", "stop")
    else:
        assert got["chat"] == dataclasses.replace(got["responses"], field=got["chat"].field)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("key", SHAPE_KEYS)
@pytest.mark.parametrize("flavour", list(FIXTURES))
def test_each_shape_on_llama_server_over_both_wires(
    request: pytest.FixtureRequest, flavour: str, key: str, stream: bool
) -> None:
    proc: Proc = request.getfixturevalue(FIXTURES[flavour])
    check(flavour, key, both_wires(proc.base_url, "", proc.model, key, stream))


ANSWER_FORMAT = {
    "type": "json_schema",
    "json_schema": {
        "name": "answer",
        "schema": {
            "type": "object",
            "properties": {"answer": {"type": "integer"}},
            "required": ["answer"],
            "additionalProperties": False,
        },
    },
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_response_format_holds_over_both_wires(hermes_tools_server: Proc, stream: bool) -> None:
    # llama-server's /v1/responses hands the body on to its chat route: the response_format
    # sent beside text.format is what it applies (text.format alone is ignored, FINDINGS.md).
    request = RunRequest(
        hermes_tools_server.model,
        64,
        prompt="What is 2+2? Say it in words.",
        stream=stream,
        response_format=ANSWER_FORMAT,
    )
    with client_for(hermes_tools_server.base_url) as client:
        for api in ("chat", "responses"):
            result = client.over(api).run(request)
            assert result.trace.settings["api"] == api
            value = json.loads(result.text)
            assert set(value) == {"answer"} and type(value["answer"]) is int, (api, result.text)


@pytest.fixture(scope="module")
def deepseek_proxy(
    server_env: ServerEnv, think_deepseek_server: Proc, llama_server_logs: Path
) -> Iterator[LiteLLMProxy]:
    """A LiteLLM proxy in front of the deepseek server alone (one upstream starts fastest)."""
    with litellm_proxy(server_env, [think_deepseek_server], llama_server_logs) as proxy:
        yield proxy


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_litellm_forwards_responses_without_the_server_switches(
    deepseek_proxy: LiteLLMProxy, stream: bool
) -> None:
    # LiteLLM sends /v1/responses on to llama-server's own route (its ids come back), keeping
    # only the Responses API's fields: the request `grammar` that its chat route passes on is
    # dropped, so the forced shape holds over chat only. Unforced, SmolLM2 stops inside its
    # think block: the same reply over both wires.
    assert deepseek_proxy.api_key
    model = deepseek_proxy.model
    free = both_wires(deepseek_proxy.base_url, deepseek_proxy.api_key, model, None, stream)
    assert (free["chat"].ending, free["responses"].ending) == ("reasoning_only", "reasoning_only")
    assert free["chat"] == dataclasses.replace(free["responses"], field=free["chat"].field)
    assert (free["chat"].field, free["responses"].field) == ("reasoning_content", "reasoning_text")
    forced = both_wires(deepseek_proxy.base_url, deepseek_proxy.api_key, model, "a", stream)
    assert forced["chat"].ending == "answer" and forced["chat"].reasoning == G.REASONING
    assert forced["responses"] == free["responses"]
