"""rig_nb's loop and probe over the chat wire of a real vLLM (hermes tool parser, deepseek_v3
reasoning parser), streamed and not.

Replies are forced with `structured_outputs` through `extra_body` (forced.py), so each test
knows what SmolLM2 wrote; what the client receives is the server's own parsing of it.
tests/real/FINDINGS.md ("vLLM") has the wire view.
"""

from __future__ import annotations

import forced as F
import pytest
from vllm_server import END_THINK_ID, MAX_MODEL_LEN, MODEL, VllmServer

from rig_nb import Client, IterationLimitError, NoToolCallingError, RunRequest, Trace

STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
THINKING_ON = {"chat_template_kwargs": {"enable_thinking": True, "thinking": True}}
THINKING_OFF = {"chat_template_kwargs": {"enable_thinking": False, "thinking": False}}


def test_the_model_list_says_vllm_and_the_window(client: Client, vllm: VllmServer) -> None:
    assert client.server_kind == "vllm"
    [listed] = client.list_models().items
    assert (listed["id"], listed["owned_by"], listed["max_model_len"]) == (
        MODEL,
        "vllm",
        MAX_MODEL_LEN,
    )


@STREAMS
def test_a_forced_call_is_a_native_call_the_loop_runs(client: Client, stream: bool) -> None:
    # Every reply is forced to call, so the run ends at its iteration cap.
    request = RunRequest(
        MODEL,
        64,
        prompt=F.WEATHER_PROMPT,
        tools=[F.weather_tool()],
        max_iterations=2,
        stream=stream,
        extra_body=F.the_call(),
    )
    trace = client.run_trace(request)
    assert isinstance(trace.exception, IterationLimitError), trace.error
    assert len(trace.iterations) == 2
    for it in trace.iterations:
        assert (it.finish_reason, it.ending, it.streamed) == ("tool_calls", "tool_calls", stream)
        assert it.raw_content == "" and it.reasoning_content == ""
        [call] = it.tool_calls
        assert (call.name, call.arguments, call.source) == (
            "get_weather",
            '{"city": "Paris"}',
            "native",
        )
        assert call.result == F.WEATHER_RESULT and not call.is_error
        # vLLM's ids, kept as received and echoed back.
        assert call.id == call.received_id and call.id.startswith("chatcmpl-tool-")
        assert 0 < it.usage["completion_tokens"] < 64
    # The second request carried the first call and its result.
    sent = trace.iterations[1].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[2]["tool_call_id"] == trace.iterations[0].tool_calls[0].id


@STREAMS
@pytest.mark.parametrize(
    ("tool_choice", "outcome"),
    [("auto", "NoToolCallingError"), ("required", "ok")],
)
def test_the_probe_as_this_server_answers_it(
    client: Client, stream: bool, tool_choice: str, outcome: str
) -> None:
    # The probe sends no extra_body: SmolLM2 answers "auto" in text, and "required" gets
    # vLLM's own call grammar, which fixes the <tool_call> wrapper and the name only.
    trace = Trace()
    if outcome == "ok":
        client.probe_tool_calling(MODEL, tool_choice=tool_choice, stream=stream, trace=trace)
    else:
        with pytest.raises(NoToolCallingError):
            client.probe_tool_calling(MODEL, tool_choice=tool_choice, stream=stream, trace=trace)
    assert trace.outcome == outcome, trace.error
    [it] = trace.iterations
    assert it.streamed == stream
    if outcome == "ok":
        [call] = it.tool_calls
        assert call.name == "ping" and call.id.startswith("chatcmpl-tool-")
        assert it.finish_reason == "tool_calls"
    else:
        assert it.tool_calls == [] and it.ending == "answer" and it.finish_reason == "stop"


@STREAMS
def test_thinking_on_splits_the_reasoning_into_reasoning(client: Client, stream: bool) -> None:
    request = RunRequest(
        MODEL, 48, prompt=F.QUESTION, thinking=True, stream=stream, extra_body=F.thought()
    )
    result = client.run(request)
    [it] = result.trace.iterations
    assert it.thinking_sent == THINKING_ON
    assert (it.reasoning_content, it.reasoning_field) == (F.REASONING, "reasoning")
    # The parser keeps what follows </think> as it is; the loop strips it.
    assert it.raw_content == "\n\n" + F.ANSWER
    assert (result.text, it.ending, it.reasoning_shape, it.leaks) == (
        F.ANSWER,
        "answer",
        "none",
        [],
    )
    # vLLM counts no reasoning tokens when the template opened the think block.
    assert it.usage["reasoning_tokens"] == 0


@STREAMS
def test_thinking_off_leaves_the_reply_in_content(client: Client, stream: bool) -> None:
    # The same forced text without the switch: the identity parser hands it over verbatim,
    # and the bare </think> is a leak the client sees.
    request = RunRequest(
        MODEL, 48, prompt=F.QUESTION, thinking=False, stream=stream, extra_body=F.thought()
    )
    trace = client.run_trace(request)
    [it] = trace.iterations
    assert it.thinking_sent == THINKING_OFF
    assert (it.raw_content, it.reasoning_content) == (F.THINK_TEXT, "")
    assert it.reasoning_shape == "unopened" and trace.outcome == "ok"
    assert it.text == F.ANSWER


def test_a_prompt_that_fits_with_max_tokens_past_the_window_is_served(client: Client) -> None:
    # vLLM lowers max_tokens to what is left of the window: a 200, not an error.
    request = RunRequest(MODEL, MAX_MODEL_LEN - 8, prompt="Say yes.", extra_body=F.exactly("yes"))
    result = client.run(request)
    [it] = result.trace.iterations
    assert (result.text, it.finish_reason, it.context_cut) == ("yes", "stop", False)
    assert it.usage["prompt_tokens"] + (MAX_MODEL_LEN - 8) > MAX_MODEL_LEN


def test_a_forced_call_and_a_repeated_long_prefix_report_cached_tokens(client: Client) -> None:
    # vLLM caches whole blocks of 128 tokens: the second request reuses every full block of
    # the first one's prompt (a system prompt long enough for several).
    system = " ".join(f"Rule {i}: answer briefly." for i in range(60))
    request = RunRequest(
        MODEL,
        64,
        system=system,
        prompt=F.WEATHER_PROMPT,
        tools=[F.weather_tool()],
        max_iterations=2,
        extra_body=F.the_call(),
    )
    trace = client.run_trace(request)
    assert isinstance(trace.exception, IterationLimitError), trace.error
    one, two = trace.iterations
    first, cached = one.usage["prompt_tokens"], two.usage["cached_tokens"]
    assert cached % 128 == 0 and cached > first - 128
    assert trace.prefix_reuse == [None, min(1.0, cached / first)]
    assert not any(it.context_cut for it in trace.iterations)


def test_the_reasoning_the_loop_sends_back_is_read_as_reasoning(client: Client) -> None:
    # Each reply: reasoning, then a forced call. The loop sends the first reply's reasoning
    # back in `reasoning` (rig_nb's replay field for vLLM); the template renders it, so the
    # second prompt is longer than when nothing is sent back.
    text = F.REASONING + "</think>\n\n" + F.CALL_TEXT
    extra = {**F.exactly(text), "logit_bias": {str(END_THINK_ID): 100}}
    second = {}
    for replay in ("tool_turns", "none"):
        request = RunRequest(
            MODEL,
            96,
            prompt=F.WEATHER_PROMPT,
            tools=[F.weather_tool()],
            thinking=True,
            max_iterations=2,
            reasoning_replay=replay,
            extra_body=extra,
        )
        trace = client.run_trace(request)
        assert isinstance(trace.exception, IterationLimitError), trace.error
        one, two = trace.iterations
        assert (one.reasoning_content, one.reasoning_field) == (F.REASONING, "reasoning")
        assert [c.name for c in one.tool_calls] == ["get_weather"]
        echoed = two.messages[1]
        assert echoed.get("reasoning") == (F.REASONING if replay == "tool_turns" else None)
        assert one.replayed == ("reasoning" if replay == "tool_turns" else "")
        second[replay] = two.usage["prompt_tokens"]
    assert second["tool_turns"] > second["none"] + 8, second
