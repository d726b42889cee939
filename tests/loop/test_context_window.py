"""The long conversation on the wire: context errors, cached tokens, server timings, silent
truncation (Iteration.context_cut, outcome context_truncated) and Trace.prefix_reuse."""

from __future__ import annotations

from typing import Any

import pytest
from runs import LoopRunner

from rig_nb import BackendError, OutputLimitError, Tool, Trace
from rig_nb.compare import Scenario
from rig_nb.testing import Response, ScriptedServer, chat_reply, tool_call
from rig_nb.trace import Iteration

KEY = "sk-context-test-0123456789"


def _echo_tool() -> Tool:
    return Tool("echo", "Echo the text.", {"type": "object"}, lambda args: "echoed")


def _calls(prompt_tokens: Any, **usage: Any) -> dict[str, Any]:
    return chat_reply(
        tool_calls=[tool_call("echo", {})], usage={"prompt_tokens": prompt_tokens, **usage}
    )


def _answer(prompt_tokens: Any, **usage: Any) -> dict[str, Any]:
    return chat_reply("done", usage={"prompt_tokens": prompt_tokens, **usage})


def _run(run_loop: LoopRunner, **request: Any) -> Trace:
    return run_loop.trace(key=KEY, prompt="go", tools=[_echo_tool()], **request)


# --- BackendError kind "context" ----------------------------------------------------------

LLAMA_400 = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 5123,
        "n_ctx": 4096,
    }
}
VLLM_OLD = {
    "object": "error",
    "message": "This model's maximum context length is 2048 tokens. However, you requested "
    "3000 tokens (2900 in the messages, 100 in the completion). Please reduce the length.",
    "type": "BadRequestError",
    "code": 400,
}
VLLM_NEW = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, your request "
        "has 9001 input tokens. Please reduce the length of the input messages.",
        "type": "BadRequestError",
        "code": 400,
    }
}
# vLLM 0.32.0, seen on the real tier (tests/real/vllm): the prompt is counted up to the window
# plus one token.
VLLM_0_32 = {
    "error": {
        "message": "This model's maximum context length is 2048 tokens. However, your prompt "
        "contains at least 2049 input tokens, which exceeds this limit even without any output "
        "tokens. Please reduce the length of the input prompt. (parameter=input_tokens, "
        "value=2049)",
        "type": "BadRequestError",
        "param": "input_tokens",
        "code": 400,
    }
}
OPENAI = {
    "error": {
        "message": "This model's maximum context length is 128000 tokens. However, your "
        "messages resulted in 130512 tokens.",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    }
}
OLLAMA = {"error": {"message": "input exceeds the model's maximum context length", "type": "x"}}
ANTHROPIC = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "prompt is too long: 208000 tokens > 200000 maximum",
    },
}
SGLANG = {
    "object": "error",
    "message": "The input (40000 tokens) is longer than the model's context length (32768 tokens).",
    "code": 400,
}


@pytest.mark.parametrize(
    ("body", "window", "prompt"),
    [
        pytest.param(LLAMA_400, 4096, 5123, id="llama.cpp"),
        pytest.param(VLLM_OLD, 2048, 2900, id="vllm-old"),
        pytest.param(VLLM_NEW, 8192, 9001, id="vllm-new"),
        pytest.param(VLLM_0_32, 2048, 2049, id="vllm-0.32"),
        pytest.param(OPENAI, 128000, 130512, id="openai"),
        pytest.param(OLLAMA, None, None, id="ollama"),
        pytest.param(ANTHROPIC, 200000, 208000, id="anthropic"),
        pytest.param(SGLANG, 32768, 40000, id="sglang"),
    ],
)
def test_each_servers_context_error_is_kind_context_with_its_numbers(
    server: ScriptedServer,
    run_loop: LoopRunner,
    body: dict[str, Any],
    window: int | None,
    prompt: int | None,
) -> None:
    server.push(Response(body, 400))
    trace = _run(run_loop)
    exc = trace.exception
    assert isinstance(exc, BackendError)
    assert (exc.kind, exc.status_code) == ("context", 400)
    assert (exc.context_window, exc.prompt_tokens) == (window, prompt)
    assert exc.message.startswith("ai backend: HTTP 400: ")
    assert trace.outcome == "BackendError"


@pytest.mark.parametrize(
    ("body", "status"),
    [
        pytest.param(
            {
                "error": {
                    "message": "chat_template_kwargs: 'enable_thinking' is not a variable "
                    "of the template context",
                    "type": "invalid_request_error",
                }
            },
            400,
            id="template-context",
        ),
        pytest.param({"error": {"message": "Context canceled", "type": "x"}}, 400, id="canceled"),
        pytest.param(VLLM_OLD, 500, id="5xx-says-context"),
    ],
)
def test_an_error_that_mentions_context_for_another_reason_is_not_kind_context(
    server: ScriptedServer, run_loop: LoopRunner, body: dict[str, Any], status: int
) -> None:
    server.push(Response(body, status))
    exc = _run(run_loop).exception
    assert isinstance(exc, BackendError) and exc.kind == "http"
    assert exc.context_window is None and exc.prompt_tokens is None


def _error_body(api: str, message: str) -> dict[str, Any]:
    """`message` in the error shape of the server each wire is usually served by."""
    if api == "messages":
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    if api == "ollama":
        return {"error": message}
    return {"error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}}


WIRE_NAMES = ["chat", "responses", "messages", "ollama"]
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])


@pytest.mark.parametrize(
    ("window_said", "prompt_said"),
    [
        pytest.param("1e30", "9001", id="exponent-window"),
        pytest.param("8192", "9e99", id="exponent-prompt"),
        pytest.param("1.5", "9001", id="decimal-window"),
        pytest.param("8,192", "9,001", id="thousands-separators"),
        pytest.param("\u0668\u0661\u0669\u0662", "9001", id="arabic-indic-digits"),
        pytest.param("\uff18\uff11\uff19\uff12", "9001", id="fullwidth-digits"),
        pytest.param("0x2000", "9001", id="hex"),
    ],
)
@pytest.mark.parametrize("api", WIRE_NAMES)
@STREAMS
def test_a_context_errors_numbers_are_read_only_as_whole_decimal_numbers(
    server: ScriptedServer,
    run_loop: LoopRunner,
    api: str,
    stream: bool,
    window_said: str,
    prompt_said: str,
) -> None:
    message = (
        f"This model's maximum context length is {window_said} tokens. However, your request "
        f"has {prompt_said} input tokens. Please reduce the length of the input messages."
    )
    server.push(Response(_error_body(api, message), 400))
    exc = _run(run_loop, api=api, stream=stream).exception
    assert isinstance(exc, BackendError) and (exc.kind, exc.status_code) == ("context", 400)
    # 1e30 is not a window of 1, nor 9e99 a prompt of 9; 8,192 is not 8; other digits are
    # not decimal numbers here.
    window = 8192 if window_said == "8192" else None
    prompt = 9001 if prompt_said == "9001" else None
    assert (exc.context_window, exc.prompt_tokens) == (window, prompt)


# What a server says when `max_tokens`, not the prompt, does not fit: the prompt was read.
MAX_TOKENS_SAID = [
    pytest.param(
        "max_tokens=5000 cannot be greater than max_model_len=2048. Please request fewer "
        "output tokens.",
        id="vllm-0.32",
    ),
    pytest.param(
        "'max_tokens' is too large: 5000. This model's maximum context length is 2048 tokens "
        "and your request has 12 input tokens (5000 > 2048 - 12).",
        id="vllm-older",
    ),
    pytest.param(
        "This model's maximum context length is 2048 tokens. However, you requested 5000 "
        "output tokens and your prompt contains 12 input tokens, for a total of 5012 tokens. "
        "Please reduce the number of requested output tokens.",
        id="vllm-renderer",
    ),
    pytest.param(
        "Requested token count exceeds the model's maximum context length of 2048 tokens. You "
        "requested a total of 5012 tokens: 12 tokens from the input messages and 5000 tokens "
        "for the completion. Please reduce the number of tokens in the input messages or the "
        "completion to fit within the limit.",
        id="sglang-total",
    ),
    pytest.param(
        "This model's maximum context length is 4097 tokens. However, you requested 5000 "
        "tokens (12 in the messages, 4988 in the completion). Please reduce the length of "
        "the messages or completion.",
        id="openai-classic",
    ),
]


@pytest.mark.parametrize("message", MAX_TOKENS_SAID)
@pytest.mark.parametrize("api", WIRE_NAMES)
@STREAMS
def test_max_tokens_too_large_is_kind_http_not_context(
    server: ScriptedServer, run_loop: LoopRunner, api: str, stream: bool, message: str
) -> None:
    server.push(Response(_error_body(api, message), 400))
    exc = _run(run_loop, api=api, stream=stream).exception
    assert isinstance(exc, BackendError) and (exc.kind, exc.status_code) == ("http", 400)
    assert (exc.context_window, exc.prompt_tokens) == (None, None)
    assert message[:40] in exc.message


def test_a_prompt_past_the_window_in_the_same_words_is_still_kind_context(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    message = (
        "Requested token count exceeds the model's maximum context length of 2048 tokens. You "
        "requested a total of 7000 tokens: 2100 tokens from the input messages and 4900 tokens "
        "for the completion."
    )
    server.push(Response(_error_body("chat", message), 400))
    exc = _run(run_loop).exception
    assert isinstance(exc, BackendError) and exc.kind == "context"
    assert (exc.context_window, exc.prompt_tokens) == (2048, 2100)


@pytest.mark.parametrize("lie", [0, -5, 10**12, "4096", 4096.0, True, None, [4096]])
def test_lying_numbers_in_a_context_error_are_dropped_not_believed(
    server: ScriptedServer, run_loop: LoopRunner, lie: Any
) -> None:
    body = {"error": {**LLAMA_400["error"], "n_ctx": lie, "n_prompt_tokens": lie}}
    server.push(Response(body, 400))
    exc = _run(run_loop).exception
    assert isinstance(exc, BackendError) and exc.kind == "context"
    assert exc.context_window is None and exc.prompt_tokens is None


def test_a_context_error_keeps_its_numbers_when_the_thinking_switch_was_sent(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    server.push(Response(LLAMA_400, 400))
    trace = run_loop.trace(key=KEY, kind="llama.cpp", max_retries=2, prompt="go", thinking=False)
    exc = trace.exception
    assert isinstance(exc, BackendError) and exc.kind == "context"
    assert (exc.context_window, exc.prompt_tokens) == (4096, 5123)
    assert "thinking=" not in exc.message  # the thinking switch is not what was refused


def test_the_context_error_of_a_streamed_request_is_the_same(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    server.push(Response(LLAMA_400, 400))
    exc = _run(run_loop, stream=True).exception
    assert isinstance(exc, BackendError) and exc.kind == "context"
    assert exc.context_window == 4096


# --- cached tokens and server timings ------------------------------------------------------

LLAMA_TIMINGS = {
    "cache_n": 80,
    "prompt_n": 20,
    "prompt_ms": 12.5,
    "predicted_n": 7,
    "predicted_ms": 70.0,
    "predicted_per_second": 100.0,
}


@pytest.mark.parametrize(
    ("usage", "top", "cached"),
    [
        pytest.param({"prompt_tokens_details": {"cached_tokens": 64}}, {}, 64, id="chat"),
        pytest.param({"input_tokens_details": {"cached_tokens": 32}}, {}, 32, id="input-details"),
        pytest.param({"cache_read_input_tokens": 16}, {}, 16, id="anthropic-style"),
        pytest.param({}, {"timings": LLAMA_TIMINGS}, 80, id="llama-timings"),
        pytest.param(
            {"prompt_tokens_details": {"cached_tokens": 50}},
            {"timings": LLAMA_TIMINGS},
            50,
            id="usage-wins",
        ),
        pytest.param({"prompt_tokens_details": {"cached_tokens": "64"}}, {}, None, id="string"),
        pytest.param({}, {"timings": {"cache_n": "80"}}, None, id="timing-string"),
    ],
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_cached_tokens_come_from_whichever_field_the_server_uses(
    server: ScriptedServer,
    run_loop: LoopRunner,
    usage: dict[str, Any],
    top: dict[str, Any],
    cached: int | None,
    stream: bool,
) -> None:
    body = {**_answer(100, completion_tokens=7, **usage), **top}
    server.push(body)
    it = _run(run_loop, stream=stream).iterations[0]
    assert it.usage.get("cached_tokens") == cached
    assert it.usage["prompt_tokens"] == 100


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_server_timings_keep_only_what_llama_cpp_reported(
    server: ScriptedServer, run_loop: LoopRunner, stream: bool
) -> None:
    server.push({**_answer(100), "timings": LLAMA_TIMINGS})
    it = _run(run_loop, stream=stream).iterations[0]
    assert it.server_timings == {
        "prompt_s": pytest.approx(0.0125),
        "prompt_tokens": 20.0,
        "decode_s": pytest.approx(0.07),
        "decode_tokens": 7.0,
        "cached_tokens": 80.0,
    }


def test_ollama_durations_are_seconds_and_lies_are_dropped(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    durations = {
        "load_duration": 2_000_000_000,
        "prompt_eval_duration": 500_000_000,
        "prompt_eval_count": 40,
        "eval_duration": "fast",
        "eval_count": True,
        "total_duration": -1,
    }
    server.push({**_answer(100), **durations, "timings": {"prompt_ms": float("1e300")}})
    it = _run(run_loop).iterations[0]
    assert it.server_timings == {"load_s": 2.0, "prompt_s": 0.5, "prompt_tokens": 40.0}


def test_a_reply_without_timings_has_none(server: ScriptedServer, run_loop: LoopRunner) -> None:
    server.push(_answer(100))
    assert _run(run_loop).iterations[0].server_timings == {}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_cached_tokens_over_the_responses_wire(
    server: ScriptedServer, run_loop: LoopRunner, stream: bool
) -> None:
    server.push(_answer(100, prompt_tokens_details={"cached_tokens": 60}))
    trace = run_loop.trace(api="responses", max_retries=2, prompt="go", stream=stream)
    assert trace.iterations[0].usage["cached_tokens"] == 60


# --- silent truncation -----------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_prompt_tokens_that_fall_mark_the_cut_and_the_outcome(
    server: ScriptedServer, run_loop: LoopRunner, stream: bool
) -> None:
    server.push(_calls(100), _calls(900), _answer(600))
    trace = _run(run_loop, stream=stream)
    assert [it.context_cut for it in trace.iterations] == [False, False, True]
    assert trace.ending == "answer"
    assert trace.outcome == "context_truncated"  # it answered, without part of what was sent
    assert trace.error == ""


def test_a_run_that_raised_after_a_cut_is_context_truncated_and_still_raises(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    server.push(_calls(100), chat_reply("cut", finish_reason="length", usage={"prompt_tokens": 50}))
    with pytest.raises(OutputLimitError) as caught:
        run_loop.result(max_retries=2, prompt="go", tools=[_echo_tool()])
    trace = caught.value.trace
    assert trace is not None and trace.iterations[1].context_cut
    assert trace.outcome == "context_truncated"
    assert "OutputLimitError" in trace.error


def test_a_cut_is_judged_against_every_earlier_turn_not_only_the_last(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    # The second turn reported nothing: the third is still below the first.
    server.push(_calls(500), chat_reply(tool_calls=[tool_call("echo", {})], usage={}), _answer(400))
    trace = _run(run_loop)
    assert [it.context_cut for it in trace.iterations] == [False, False, True]


@pytest.mark.parametrize(
    "later",
    [
        pytest.param(None, id="missing"),
        pytest.param("50", id="string"),
        pytest.param(50.0, id="float"),
        pytest.param(True, id="bool"),
        pytest.param(0, id="zero"),
        pytest.param([50], id="list"),
    ],
)
def test_usage_that_is_missing_or_not_an_int_never_claims_a_cut(
    server: ScriptedServer, run_loop: LoopRunner, later: Any
) -> None:
    last = chat_reply("done", usage={} if later is None else {"prompt_tokens": later})
    server.push(_calls(500), last)
    trace = _run(run_loop)
    assert not any(it.context_cut for it in trace.iterations)
    assert trace.outcome == "ok"


def test_growing_or_equal_prompts_are_not_cut(server: ScriptedServer, run_loop: LoopRunner) -> None:
    server.push(_calls(100), _calls(100), _answer(2**62))
    trace = _run(run_loop)
    assert not any(it.context_cut for it in trace.iterations) and trace.outcome == "ok"


def test_context_cut_round_trips_through_a_trace_file(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    server.push({**_calls(300), "timings": LLAMA_TIMINGS}, _answer(200))
    trace = _run(run_loop)
    again = Trace.from_json(trace.to_json())
    assert again.iterations[1].context_cut and again.outcome == "context_truncated"
    assert again.iterations[0].server_timings == trace.iterations[0].server_timings


# --- prefix reuse ------------------------------------------------------------------------------


def _with(*usages: dict[str, Any]) -> Trace:
    return Trace(iterations=[Iteration(index=i, usage=u) for i, u in enumerate(usages)])


def test_prefix_reuse_is_the_share_of_the_previous_prompt_reported_cached() -> None:
    trace = _with(
        {"prompt_tokens": 100, "cached_tokens": 100},
        {"prompt_tokens": 200, "cached_tokens": 100},
        {"prompt_tokens": 400, "cached_tokens": 50},
        {"prompt_tokens": 500},
        {"prompt_tokens": 600, "cached_tokens": 900},
        {"cached_tokens": 10},
        {"prompt_tokens": 0, "cached_tokens": 0},
        {"prompt_tokens": 10, "cached_tokens": 5},
    )
    assert trace.prefix_reuse == [None, 1.0, 0.25, None, 1.0, pytest.approx(10 / 600), None, None]


@pytest.mark.parametrize("bad", ["100", -1, True, 1.5, None])
def test_prefix_reuse_ignores_counts_that_are_not_counts(bad: Any) -> None:
    assert _with({"prompt_tokens": 100}, {"cached_tokens": bad}).prefix_reuse == [None, None]
    assert _with({"prompt_tokens": bad}, {"cached_tokens": 5}).prefix_reuse == [None, None]


class _CountingUsage(dict[str, Any]):
    reads = 0

    def get(self, key: str, default: Any = None) -> Any:
        _CountingUsage.reads += 1
        return super().get(key, default)


def test_prefix_reuse_over_a_thousand_iterations_reads_each_usage_a_fixed_number_of_times() -> None:
    n = 1000
    its = [
        Iteration(index=i, usage=_CountingUsage(prompt_tokens=10 * (i + 1), cached_tokens=10 * i))
        for i in range(n)
    ]
    _CountingUsage.reads = 0
    shares = Trace(iterations=its).prefix_reuse
    assert _CountingUsage.reads <= 2 * n  # linear: each iteration's usage read twice at most
    assert shares[0] is None and shares[-1] == 1.0 and len(shares) == n


def test_a_real_run_reports_reuse_per_iteration(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    server.push(
        _calls(100, prompt_tokens_details={"cached_tokens": 0}),
        _calls(150, prompt_tokens_details={"cached_tokens": 90}),
        _answer(200, prompt_tokens_details={"cached_tokens": 150}),
    )
    assert _run(run_loop).prefix_reuse == [None, 0.9, 1.0]


# --- RunRequest(context_window=...) -------------------------------------------------------------


def test_context_window_is_recorded_and_not_sent_on_chat_or_responses(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    for api in ("chat", "responses"):
        server.push(_answer(10))
        trace = run_loop.trace(api=api, max_retries=2, prompt="go", context_window=8192)
        assert trace.settings["context_window"] == 8192
        assert trace.settings["context_window_sent"] is False
        sent = server.requests[-1].body.decode()
        assert "8192" not in sent and "num_ctx" not in sent and "context" not in sent


def test_without_a_context_window_nothing_is_recorded(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    server.push(_answer(10))
    assert "context_window" not in _run(run_loop).settings


@pytest.mark.parametrize("bad", [0, -1, True, "4096", 4096.0])
def test_a_context_window_that_is_not_a_positive_int_is_refused_before_any_request(
    server: ScriptedServer, run_loop: LoopRunner, bad: Any
) -> None:
    with pytest.raises(ValueError, match="context_window"):
        run_loop.result(max_retries=2, prompt="go", context_window=bad)
    assert server.requests == []


def test_a_scenario_takes_the_context_window_too() -> None:
    assert Scenario("long", context_window=4096).context_window == 4096
