"""The Anthropic Messages wire on real servers: llama-server's /v1/messages and LiteLLM's.

On one llama-server (deepseek reasoning format) the same request runs through the loop over
chat completions and over /v1/messages, streamed and not: unforced, both wires record the
same reply (reasoning in `reasoning_content` over chat, in a `thinking` block over
Messages); forced, the grammar holds over chat only, since llama-server's Anthropic
converter keeps only the Messages API's fields. On the Hermes tool template a tool loop
with thinking on runs over /v1/messages (the prefill makes the calls real); streamed,
llama-server opens the second tool_use block before it stops the first, which the
reader records as a stream fault. Through LiteLLM, /v1/messages loses the reasoning
and refuses `thinking`. Every difference is in FINDINGS.md, "The Anthropic Messages wire".
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import grammars as G
import pytest
from client_view import Seen, client_for, run_loop, seen
from llama_server_procs import (
    TEMPLATE_FLAVOUR,
    LiteLLMProxy,
    Proc,
    ServerEnv,
    litellm_proxy,
    llama_server,
)

from rig_nb import BackendError, Client, RunRequest
from rig_nb.capabilities import endpoint_report
from rig_nb.wire import WIRES, Call, Request, ToolSpec, Turn

pytestmark = pytest.mark.real

# SmolLM2 unforced under the thinking template: it writes its answer inside the think block.
FREE = "\nThe answer is 4."
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])


def over_both(base_url: str, api_key: str, run: RunRequest) -> dict[str, Seen]:
    out = {}
    with client_for(base_url, api_key) as client:
        for api in ("chat", "messages"):
            trace, _ = run_loop(client.over(api), run)
            assert trace.settings["api"] == api
            out[api] = seen(trace)
    return out


def unforced(model: str, stream: bool, **kw: object) -> RunRequest:
    return RunRequest(model, 64, prompt=G.QUESTION, stream=stream, **kw)  # type: ignore[arg-type]


@STREAMS
def test_an_unforced_reply_is_the_same_over_chat_and_messages(
    think_deepseek_server: Proc, stream: bool
) -> None:
    got = over_both(
        think_deepseek_server.base_url, "", unforced(think_deepseek_server.model, stream)
    )
    assert got["chat"].field == "reasoning_content" and got["messages"].field == "thinking"
    assert got["messages"] == dataclasses.replace(got["chat"], field="thinking")
    assert (got["messages"].reasoning, got["messages"].ending) == (FREE, "reasoning_only")


@STREAMS
def test_a_grammar_holds_over_chat_only(think_deepseek_server: Proc, stream: bool) -> None:
    shape = G.SHAPES["a"]
    run = RunRequest(
        think_deepseek_server.model,
        shape.max_tokens,
        prompt=G.QUESTION,
        stream=stream,
        extra_body={"grammar": shape.grammar},
    )
    got = over_both(think_deepseek_server.base_url, "", run)
    assert (got["chat"].reasoning, got["chat"].text, got["chat"].ending) == (
        G.REASONING,
        G.ANSWER,
        "answer",
    )
    # llama-server's /v1/messages drops `grammar`: the model's own reply comes back.
    assert (got["messages"].reasoning, got["messages"].ending) == (FREE, "reasoning_only")


@STREAMS
def test_the_thinking_switch_is_sent_and_changes_nothing_here(
    think_deepseek_server: Proc, stream: bool
) -> None:
    # This template has no enable_thinking switch: off or on, the same reply on both wires.
    for thinking in (False, True):
        run = unforced(think_deepseek_server.model, stream, thinking=thinking)
        with client_for(think_deepseek_server.base_url) as client:
            trace, _ = run_loop(client.over("messages"), run)
        it = trace.iterations[0]
        assert it.thinking_sent["thinking"]["type"] == ("enabled" if thinking else "disabled")
        assert (it.reasoning_content, it.ending) == (FREE, "reasoning_only")


def _weather() -> ToolSpec:
    function = G.TOOLS[0]["function"]
    return ToolSpec(G.TOOL_NAME, function["description"], function["parameters"])


@STREAMS
def test_a_tool_loop_with_thinking_on_over_messages(
    hermes_tools_server: Proc, stream: bool
) -> None:
    messages = WIRES["messages"]
    thinking = messages.thinking_fields(True, "llama.cpp")
    asked = [Turn("user", "What is the weather in Paris? Use the tool.")]
    prefill = Turn("assistant", "<tool_call>\n")  # the Hermes prefill that makes calls real

    def ask(turns: list[Turn], tool_choice: str) -> object:
        request = Request(
            hermes_tools_server.model,
            tuple(turns),
            96,
            tools=(_weather(),),
            tool_choice=tool_choice,
            stream=stream,
            extra=thinking,
        )
        with client_for(hermes_tools_server.base_url) as client:
            wire = client.over("messages")
            return wire.stream(request, wire.reader()) if stream else wire.chat(request)

    first = ask([*asked, prefill], "required")
    assert first.finish_reason == "tool_calls"  # type: ignore[attr-defined]
    calls = first.tool_calls  # type: ignore[attr-defined]
    assert calls and all(c.name == G.TOOL_NAME for c in calls)
    assert all(re.fullmatch(r"[A-Za-z0-9]{32}", c.id) for c in calls)
    faults = first.stream_faults  # type: ignore[attr-defined]
    if stream and len(calls) > 1:
        assert "content_block_start for index 1 while index 0 is open" in faults
    else:
        assert faults == []
    made = tuple(Call(c.id, c.name, c.arguments) for c in calls)
    results = [Turn("tool", "Paris: 16 C, overcast", call_id=c.id, name=c.name) for c in made]
    second = ask([*asked, Turn("assistant", calls=made), *results], "auto")
    # The tool results were read: the server answered the next round (text or another call).
    assert second.finish_reason in ("stop", "length", "tool_calls")  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def deepseek_proxy(
    server_env: ServerEnv, think_deepseek_server: Proc, llama_server_logs: Path
) -> Iterator[LiteLLMProxy]:
    with litellm_proxy(server_env, [think_deepseek_server], llama_server_logs) as proxy:
        yield proxy


@STREAMS
def test_litellm_messages_loses_the_reasoning(deepseek_proxy: LiteLLMProxy, stream: bool) -> None:
    assert deepseek_proxy.api_key
    run = unforced(deepseek_proxy.model, stream)
    got = over_both(deepseek_proxy.base_url, deepseek_proxy.api_key, run)
    assert (got["chat"].reasoning, got["chat"].ending) == (FREE, "reasoning_only")
    # LiteLLM turns /v1/messages into a chat request upstream and drops reasoning_content
    # on the way back: no thinking block, nothing at all.
    assert (got["messages"].reasoning, got["messages"].raw, got["messages"].ending) == (
        "",
        "",
        "empty",
    )


def test_litellm_refuses_thinking_on_messages(deepseek_proxy: LiteLLMProxy) -> None:
    key = deepseek_proxy.api_key
    assert key
    with client_for(deepseek_proxy.base_url, key) as client:
        trace, error = run_loop(
            client.over("messages"), unforced(deepseek_proxy.model, False, thinking=True)
        )
    assert isinstance(error, BackendError) and error.status_code == 400
    assert "UnsupportedParamsError" in error.message and key not in error.message
    assert trace.iterations[0].thinking_sent == {
        "thinking": {"type": "enabled", "budget_tokens": 63}
    }


def test_api_parity_shows_what_litellm_messages_loses(deepseek_proxy: LiteLLMProxy) -> None:
    with client_for(deepseek_proxy.base_url, deepseek_proxy.api_key or "") as client:
        report = endpoint_report(client, deepseek_proxy.model, stream=False, checks=["api_parity"])
    check = next(c for c in report.checks if c.name == "api_parity")
    assert check.verdict.startswith("differs: ")
    assert "over messages" in check.verdict
    assert "LiteLLM turns /v1/messages into a chat request" in check.advice


# Issue 45: under gpt-oss's template SmolLM2's reply is no harmony, and llama-server's parser
# refuses it: 500 "... peg-native format" when not streamed; streamed, after the stream began
# (200), an error in its own shape on each route (`event: error` with `{"code", "message",
# "type"}` on /v1/messages, `data: {"error": {...}}` on the others). Each is the server's 500.
PEG = "The model produced output that does not match the expected peg-native format"


@pytest.fixture(scope="module")
def gpt_oss_server(server_env: ServerEnv, llama_server_logs: Path) -> Iterator[Proc]:
    name = f"{TEMPLATE_FLAVOUR}openai-gpt-oss-120b"
    with llama_server(server_env, name, llama_server_logs) as s:
        yield s


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
@STREAMS
def test_a_reply_its_parser_refuses_is_the_servers_500_on_every_wire(
    gpt_oss_server: Proc, api: str, stream: bool
) -> None:
    with Client(gpt_oss_server.base_url, api=api, timeout=120, max_retries=0) as client:
        trace = client.run_trace(RunRequest(gpt_oss_server.model, 16, prompt="Hi", stream=stream))
    exc = trace.exception
    assert isinstance(exc, BackendError), trace.error
    assert (exc.kind, exc.status_code) == ("http", 500)
    assert exc.message == f"ai backend: HTTP 500: {PEG}"
    assert len(trace.iterations) == 1 and trace.iterations[0].ending == "error"
