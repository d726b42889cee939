"""The long conversation on a real llama-server: a small `-c` split across `-np 2` slots.

`/props` gives the per-slot window (`-c` / `-np`) and the build; a prompt past the window is
the server's 400 `exceed_context_size_error`, read as BackendError kind `context` with the
server's own numbers; a second turn reports the prefix it reused from the slot's cache
(`timings.cache_n`, `prompt_tokens_details.cached_tokens`). Under a Qwen3-style template
(tests/real/templates/qwen3-thinking.jinja, which drops the reasoning of assistant turns
before the last user message) the second turn no longer extends the first, and
`/apply-template` names where; under a plain template (Hermes-2-Pro) it does. Turn 1 is
forced by a grammar so that the model's words are the test's. tests/real/FINDINGS.md
records what was seen.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from client_view import request_of
from llama_server_procs import (
    LITELLM_VERSION,
    MODEL,
    LiteLLMProxy,
    Proc,
    ServerEnv,
    litellm_proxy,
    llama_server,
)

from rig_nb import BackendError, Client, IterationLimitError, RunRequest, Tool, Trace
from rig_nb.capabilities.long_context import (
    context_window_check,
    long_prompt,
    prefix_cache_check,
    server_facts,
)
from rig_nb.capabilities.report import report_head
from rig_nb.record import record_one
from rig_nb.wire import chat_body
from rig_nb.wire.chat import user_message

pytestmark = pytest.mark.real

CTX, SLOTS = 1024, 2
# Prompt caching on (the other flavours turn it off to stay deterministic), and the small
# context split across two slots.
LONG_CONTEXT_ARGS = ("--ctx-size", str(CTX), "--parallel", str(SLOTS), "--cache-prompt")
REASONING = "The capital of France is Paris."
ANSWER = "Paris."


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("long-context")


@pytest.fixture(scope="module")
def qwen3_style(server_env: ServerEnv, logs: Path) -> Iterator[Proc]:
    with llama_server(server_env, "think-deepseek", logs, LONG_CONTEXT_ARGS) as s:
        yield s


@pytest.fixture(scope="module")
def plain(server_env: ServerEnv, logs: Path) -> Iterator[Proc]:
    with llama_server(server_env, "hermes-tools", logs, LONG_CONTEXT_ARGS) as s:
        yield s


@pytest.fixture(scope="module")
def proxy(server_env: ServerEnv, plain: Proc, logs: Path) -> Iterator[LiteLLMProxy]:
    with litellm_proxy(server_env, [plain], logs) as p:
        yield p


def _props(server: Proc) -> dict[str, object]:
    props = httpx.get(f"{server.root_url}/props", timeout=30).json()
    assert isinstance(props, dict)
    return props


def test_props_give_the_per_slot_window_and_the_build(qwen3_style: Proc) -> None:
    props = _props(qwen3_style)
    with Client(qwen3_style.base_url) as client:
        facts = server_facts(client, MODEL, "llama.cpp")
    assert facts.context_window == CTX // SLOTS  # -c is split across the -np slots
    assert facts.context_window == props["default_generation_settings"]["n_ctx"]  # type: ignore[index]
    assert facts.version == props["build_info"] and facts.version
    head = report_head(MODEL, "llama.cpp", facts.version, facts.context_window)
    assert head == f"{MODEL}: server llama.cpp {props['build_info']}, context window 512 tokens"
    print(head)


def test_a_prompt_past_the_window_is_kind_context_with_the_servers_numbers(
    qwen3_style: Proc,
) -> None:
    with Client(qwen3_style.base_url) as client:
        trace = client.run_trace(RunRequest(MODEL, 8, prompt=long_prompt(700)))
        exc = trace.exception
        assert isinstance(exc, BackendError)
        assert (exc.kind, exc.status_code, exc.context_window) == ("context", 400, CTX // SLOTS)
        assert exc.prompt_tokens is not None and exc.prompt_tokens > CTX // SLOTS
        print(exc.message, exc.context_window, exc.prompt_tokens)
        name, verdict, evidence, advice, _ = context_window_check(
            client, MODEL, "llama.cpp", CTX // SLOTS
        )
    assert (name, verdict) == ("context_window", f"error at {CTX // SLOTS} tokens")
    assert "exceeds the available context size" in evidence
    assert "-np" in advice
    print(verdict, "|", evidence)


def _turn_one(client: Client, grammar_text: str) -> Trace:
    body = chat_body(
        MODEL,
        [user_message("What is the capital of France?")],
        48,
        extra_body={"grammar": "root ::= " + json.dumps(grammar_text)},
    )
    trace, reply = record_one(client, request_of(body), {"kind": "turn one"})
    assert reply is not None and trace.ending == "answer", trace.error
    return trace


def test_a_plain_template_extends_the_cached_prefix(plain: Proc) -> None:
    with Client(plain.base_url) as client:
        first = _turn_one(client, ANSWER)
        name, verdict, evidence, advice, second = prefix_cache_check(
            client, MODEL, "llama.cpp", Trace(), first
        )
    assert second is not None
    # The check's trace holds the conversation: turn 1 (the one given), turn 2, turn 3.
    one, two = first.iterations[0], second.iterations[1]
    before, cached = one.usage["prompt_tokens"], two.usage["cached_tokens"]
    assert two.server_timings["cached_tokens"] == cached  # timings.cache_n
    assert cached >= before and verdict == f"reused {cached} of {before}"
    assert advice == "" and "apply-template" not in evidence
    run = Trace(iterations=[one, two])
    assert run.prefix_reuse == [None, 1.0]
    print(verdict, "|", evidence, "|", two.server_timings)


def test_a_qwen3_style_template_breaks_the_prefix_and_apply_template_says_where(
    qwen3_style: Proc,
) -> None:
    with Client(qwen3_style.base_url) as client:
        first = _turn_one(client, f"{REASONING}</think>\n\n{ANSWER}")
        assert first.iterations[0].reasoning_content == REASONING
        name, verdict, evidence, advice, second = prefix_cache_check(
            client, MODEL, "llama.cpp", Trace(), first
        )
    assert second is not None
    before = first.iterations[0].usage["prompt_tokens"]
    cached = second.iterations[1].usage["cached_tokens"]
    assert 0 < cached < before and verdict == f"reused {cached} of {before}"
    assert "stops extending turn 1's at character" in evidence
    assert "'<think>\\n' became 'Paris." in evidence
    assert "earlier reasoning dropped there" in evidence
    assert "template" in advice
    print(verdict, "|", evidence)


def test_a_real_two_turn_run_reports_the_second_turns_cached_tokens(qwen3_style: Proc) -> None:
    # The grammar makes the model write its call as text each turn (tool_choice "none" lets
    # a grammar go with tools); recovery runs it, so the run has a second turn.
    call = json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
    written = f"I will look it up.</think>\n\n<tool_call>\n{call}\n</tool_call>"
    weather = Tool(
        "get_weather",
        "Current weather for a city.",
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        lambda args: "Paris: 18 C, clear",
    )
    request = RunRequest(
        MODEL,
        64,
        prompt="What is the weather in Paris?",
        tools=[weather],
        tool_choice="none",
        recover_text_tool_calls=True,
        max_iterations=2,
        extra_body={"grammar": "root ::= " + json.dumps(written)},
    )
    with Client(qwen3_style.base_url) as client:
        trace = client.run_trace(request)
    assert isinstance(trace.exception, IterationLimitError), trace.error
    one, two = trace.iterations
    assert [c.source for c in one.tool_calls] == ["text"]
    cached = two.usage["cached_tokens"]
    assert cached == two.server_timings["cached_tokens"]  # timings.cache_n
    assert cached >= one.usage["prompt_tokens"]  # the tool turn re-renders as generated
    assert trace.prefix_reuse == [None, 1.0]
    assert not any(it.context_cut for it in trace.iterations)
    print([it.usage for it in trace.iterations], trace.prefix_reuse)


def test_litellm_names_its_version_and_no_window_it_was_not_given(proxy: LiteLLMProxy) -> None:
    with Client(proxy.base_url, proxy.api_key or "") as client:
        assert client.server_kind == "litellm"
        # /health/readiness names no version on this build: a reply's header does.
        assert server_facts(client, proxy.model, "litellm").version == ""
        reply = client.chat(request_of(chat_body(proxy.model, [user_message("Hi")], 2)))
        facts = server_facts(client, proxy.model, "litellm", headers=reply.headers)
    assert facts.version == LITELLM_VERSION
    # The proxy knows a window only from its cost map or the config's model_info.
    assert facts.context_window is None
    assert facts.evidence == "/model/info"
    print(facts)
