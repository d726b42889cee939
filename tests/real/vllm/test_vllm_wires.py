"""rig_nb over vLLM's own Responses (`/v1/responses`) and Messages (`/v1/messages`) routes.

The Responses route takes `structured_outputs` as chat does, so calls and reasoning are forced
the same way (forced.py). The Messages route ignores `structured_outputs` (a 200 with free
text) but applies `output_config.format` (a JSON schema), which rig_nb passes through
`extra_body`; its usage leaves cached and newly cached tokens out of `input_tokens`, and a
stream says the whole prompt in `message_start` but the uncached part in `message_delta`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import forced as F
import pytest
from vllm_server import MODEL, TIMEOUT_S, VllmServer

from rig_nb import BackendError, Client, IterationLimitError, RunRequest

STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
CITY = {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris"]}}}
CITY_FORMAT = {"output_config": {"format": {"type": "json_schema", "schema": CITY}}}


@pytest.fixture
def responses(vllm: VllmServer) -> Iterator[Client]:
    with Client(vllm.base_url, timeout=TIMEOUT_S, api="responses") as c:
        yield c


@pytest.fixture
def messages(vllm: VllmServer) -> Iterator[Client]:
    with Client(vllm.base_url, timeout=TIMEOUT_S, api="messages") as c:
        yield c


@STREAMS
def test_responses_a_forced_call_runs_and_the_next_turn_reads_the_cache(
    responses: Client, stream: bool
) -> None:
    request = RunRequest(
        MODEL,
        64,
        prompt=F.WEATHER_PROMPT,
        tools=[F.weather_tool()],
        max_iterations=2,
        stream=stream,
        extra_body=F.the_call(),
    )
    trace = responses.run_trace(request)
    assert isinstance(trace.exception, IterationLimitError), trace.error
    assert trace.settings["api"] == "responses"
    for it in trace.iterations:
        assert (it.ending, it.streamed, it.stream_faults) == ("tool_calls", stream, [])
        [call] = it.tool_calls
        assert (call.name, call.arguments, call.result) == (
            "get_weather",
            '{"city": "Paris"}',
            F.WEATHER_RESULT,
        )
        assert call.id.startswith("chatcmpl-tool-")
    one, two = trace.iterations
    cached = two.usage["cached_tokens"]
    assert cached > 0 and cached % 128 == 0
    assert trace.prefix_reuse == [None, min(1.0, cached / one.usage["prompt_tokens"])]


@STREAMS
def test_responses_thinking_on_gives_a_reasoning_item(responses: Client, stream: bool) -> None:
    request = RunRequest(
        MODEL, 48, prompt=F.QUESTION, thinking=True, stream=stream, extra_body=F.thought()
    )
    result = responses.run(request)
    [it] = result.trace.iterations
    assert (it.reasoning_content, it.reasoning_field) == (F.REASONING, "reasoning_text")
    assert (result.text, it.ending, it.stream_faults) == (F.ANSWER, "answer", [])


def test_messages_a_forced_answer_counts_the_cached_prompt_the_same_streamed(
    messages: Client,
) -> None:
    # The same request twice, not streamed then streamed: the second reads the first's blocks.
    system = " ".join(f"Rule {i}: name the city." for i in range(40))
    seen = []
    for stream in (False, True):
        request = RunRequest(
            MODEL, 24, system=system, prompt="Which city?", stream=stream, extra_body=CITY_FORMAT
        )
        result = messages.run(request)
        [it] = result.trace.iterations
        assert json.loads(result.text) == {"city": "Paris"}
        assert (it.finish_reason, it.streamed, it.stream_faults) == ("stop", stream, [])
        seen.append(it.usage)
    whole, streamed = seen
    assert whole["prompt_tokens"] == streamed["prompt_tokens"]
    assert streamed["cached_tokens"] > 0 and streamed["cached_tokens"] % 128 == 0
    assert streamed["cached_tokens"] <= whole["prompt_tokens"]


def test_messages_structured_outputs_are_ignored(messages: Client) -> None:
    # A 200 with the model's own words (greedy), not the forced text.
    request = RunRequest(MODEL, 16, prompt=F.QUESTION, extra_body=F.exactly("Forty-two."))
    trace = messages.run_trace(request)
    [it] = trace.iterations
    assert it.ending != "error" and "Forty-two." not in it.raw_content


def test_messages_thinking_with_a_small_budget_is_vllms_400(messages: Client) -> None:
    # rig_nb holds the Messages thinking budget to max_tokens - 1; vLLM, as Anthropic, takes no
    # budget under 1024 tokens.
    trace = messages.run_trace(RunRequest(MODEL, 48, prompt=F.QUESTION, thinking=True))
    exc = trace.exception
    assert isinstance(exc, BackendError)
    assert (exc.kind, exc.status_code) == ("http", 400)
    assert "budget_tokens" in exc.message and "greater than or equal to 1024" in exc.message
    assert trace.iterations[0].thinking_sent == {
        "thinking": {"type": "enabled", "budget_tokens": 47}
    }
