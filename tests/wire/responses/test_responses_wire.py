"""The Responses API as a second wire (issue 22): what goes on it and how it is read.

That every persona, scripted reply and probe runs the same over `/responses` as over
`/chat/completions` is in test_wire_parity.py (over Responses reasoning is a `reasoning`
item; `reasoning_field` says `reasoning_text` or `summary_text`). Here: what goes on the
wire, how replies and streams are read, and each bad input as a clear BackendError with
what arrived kept.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from runs import LoopRunner
from shared import ECHO

from rig_nb import BackendError, Client, RunRequest
from rig_nb.demo import DEMO_PROMPT, DemoServer, demo_tools
from rig_nb.testing import (
    Response,
    ScriptedServer,
    chat_reply,
    sse_body,
    tool_call,
)

SSE = {"content-type": "text/event-stream"}
THINKING = "Let me think about this for a moment."
RESPONSES: dict[str, Any] = {"api": "responses", "max_tokens": 32}  # a run_loop run


# What goes on the wire.


def test_the_request_is_a_responses_request(server: ScriptedServer) -> None:
    server.push(
        chat_reply(
            None,
            tool_calls=[tool_call("echo", {"text": "hi"}, id="call_1")],
            reasoning_content=THINKING,
        ),
        chat_reply("Done."),
    )
    request = RunRequest(
        "m",
        64,
        system="Be brief.",
        prompt="Echo hi.",
        tools=(ECHO,),
        temperature=0.5,
        extra_body={"grammar": "root ::= x"},
    )
    with Client(server.base_url, api="responses") as client:
        result = client.run(request)
    assert result.text == "Done."
    first, second = (r.json for r in server.requests)
    assert {r.path for r in server.requests} == {"/v1/responses"}
    assert first == {
        "model": "m",
        "input": [{"type": "message", "role": "user", "content": "Echo hi."}],
        "instructions": "Be brief.",
        "store": False,
        "max_output_tokens": 64,
        "temperature": 0.5,
        "tools": [
            {
                "type": "function",
                "name": "echo",
                "description": ECHO.description,
                "parameters": ECHO.input_schema,
            }
        ],
        "tool_choice": "auto",
        "grammar": "root ::= x",
    }
    assert second["input"][1:] == [
        {
            "type": "reasoning",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": THINKING}],
        },
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "echo",
            "arguments": '{"text": "hi"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "echo hi"},
    ]


def test_a_stream_asks_for_one_and_nothing_chat_only(server: ScriptedServer) -> None:
    server.push(chat_reply("Hi."))
    with Client(server.base_url, api="responses") as client:
        client.run(RunRequest("o3-mini", 32, prompt="hi", stream=True))
    body = server.requests[0].json
    assert body["stream"] is True and body["max_output_tokens"] == 32
    assert not {"messages", "stream_options", "max_tokens", "max_completion_tokens"} & set(body)


def test_a_named_tool_choice_and_an_effort_take_the_responses_shape(
    server: ScriptedServer,
) -> None:
    server.push(chat_reply("Hi."))
    choice = {"type": "function", "function": {"name": "echo"}}
    request = RunRequest(
        "m",
        32,
        prompt="hi",
        tools=(ECHO,),
        tool_choice=choice,
        extra_body={"reasoning_effort": "low"},
    )
    with Client(server.base_url, api="responses") as client:
        client.run(request)
    body = server.requests[0].json
    assert body["tool_choice"] == {"type": "function", "name": "echo"}
    assert body["reasoning"] == {"effort": "low"} and "reasoning_effort" not in body


ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}}


@pytest.mark.parametrize(
    ("response_format", "extra", "text"),
    [
        (
            {"type": "json_schema", "json_schema": {"name": "a", "schema": ANSWER_SCHEMA}},
            {},
            {"format": {"type": "json_schema", "name": "a", "schema": ANSWER_SCHEMA}},
        ),
        ({"type": "json_object"}, {}, {"format": {"type": "json_object"}}),
        # The caller's own `text` wins.
        ({"type": "json_object"}, {"text": {"verbosity": "low"}}, {"verbosity": "low"}),
    ],
    ids=["json_schema", "json_object", "caller-text"],
)
def test_a_response_format_goes_out_as_text_format_too(
    server: ScriptedServer, response_format: dict[str, Any], extra: dict[str, Any], text: Any
) -> None:
    server.push(chat_reply('{"answer": 4}'))
    request = RunRequest("m", 32, prompt="2+2?", response_format=response_format, extra_body=extra)
    with Client(server.base_url, api="responses") as client:
        assert client.run(request).text == '{"answer": 4}'
    body = server.requests[0].json
    # text.format for the servers that read the Responses API's field (vLLM); response_format
    # as sent over chat for llama-server, whose /v1/responses hands the body to its chat route.
    assert body["text"] == text
    assert body["response_format"] == response_format


def test_api_is_checked_at_construction() -> None:
    with pytest.raises(ValueError, match="api must be"):
        Client("http://127.0.0.1:9", api="completions")


# How replies are read.


def _response(output: list[Any], **extra: Any) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": "completed", "output": output, **extra}


def _message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def test_usage_and_summaries_are_read(run_loop: LoopRunner) -> None:
    usage = {
        "input_tokens": 12,
        "output_tokens": 40,
        "total_tokens": 52,
        "output_tokens_details": {"reasoning_tokens": 31},
        "input_tokens_details": {"cached_tokens": 8},
    }
    summary = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Short."}]}
    trace = run_loop.trace(
        Response(_response([summary, _message("Hi.")], usage=usage)), **RESPONSES
    )
    it = trace.iterations[0]
    assert trace.outcome == "ok" and it.text == "Hi."
    assert (it.reasoning_content, it.reasoning_field) == ("Short.", "summary_text")
    assert it.usage == {
        "prompt_tokens": 12,
        "completion_tokens": 40,
        "reasoning_tokens": 31,
        "cached_tokens": 8,
    }


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(
    ("reply", "ending"),
    [
        pytest.param(chat_reply("Once upon a", finish_reason="length"), "length", id="length"),
        pytest.param(
            chat_reply("", reasoning_content=THINKING, finish_reason="length"),
            "length_in_reasoning",
            id="length-in-reasoning",
        ),
    ],
)
def test_incomplete_for_the_output_budget_is_finish_length(
    server: ScriptedServer, run_loop: LoopRunner, reply: Any, ending: str, stream: bool
) -> None:
    trace = run_loop.trace(reply, stream=stream, **RESPONSES)
    it = trace.iterations[0]
    assert (trace.outcome, it.finish_reason, it.ending) == ("OutputLimitError", "length", ending)
    sent = server.requests[0].json
    assert sent.get("stream", False) is stream


def test_streamed_reasoning_summaries_and_whole_items(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    events = [
        {"type": "response.created", "response": {"status": "in_progress"}},
        {"type": "response.reasoning_summary_text.delta", "item_id": "rs", "delta": "Brief "},
        {"type": "response.reasoning_summary_text.delta", "item_id": "rs", "delta": "plan."},
        # A server that sends a message item whole, with no deltas for it.
        {"type": "response.output_item.done", "output_index": 1, "item": _message("Whole.")},
        {"type": "response.completed", "response": {"status": "completed", "usage": None}},
    ]
    trace = run_loop.trace(
        Response(sse_body(events, done=False), headers=SSE), stream=True, **RESPONSES
    )
    it = trace.iterations[0]
    assert (trace.outcome, it.text) == ("ok", "Whole.")
    assert (it.reasoning_content, it.reasoning_field) == ("Brief plan.", "summary_text")
    assert it.chunks == len(events)


def test_tool_call_markup_streamed_as_output_text_is_a_leak(run_loop: LoopRunner) -> None:
    markup = '<tool_call>\n{"name": "echo", "arguments": {"text": "t"}}\n</tool_call>'
    trace = run_loop.trace(chat_reply(markup), stream=True, tools=(ECHO,), **RESPONSES)
    it = trace.iterations[0]
    assert it.ending == "text_tool_calls" and "tool-call-tag" in it.leaks


# Bad input: each a clear BackendError, what arrived kept.

PARTIAL = [
    {"type": "response.created", "response": {"status": "in_progress"}},
    {"type": "response.output_item.added", "output_index": 0, "item": _message("")},
    {"type": "response.output_text.delta", "output_index": 0, "delta": "partial answer"},
]
CALL_ADDED = {
    "type": "response.output_item.added",
    "output_index": 1,
    "item": {"type": "function_call", "id": "fc_1", "name": "echo", "arguments": ""},
}
COMPLETED = {"type": "response.completed", "response": {"status": "completed"}}


@pytest.mark.parametrize(
    ("tail", "kind", "message"),
    [
        pytest.param(
            [{"type": "error", "message": "model overloaded"}],
            "reply",
            "error in stream: model overloaded",
            id="error-event",
        ),
        pytest.param(
            [
                {
                    "type": "response.failed",
                    "response": {"status": "failed", "error": {"message": "boom"}},
                }
            ],
            "reply",
            "response failed: boom",
            id="response-failed",
        ),
        pytest.param(
            [{"type": "response.output_item.added", "item": {"type": "web_search_call"}}],
            "reply",
            "output item of unknown type 'web_search_call'",
            id="unknown-item",
        ),
        pytest.param([CALL_ADDED, COMPLETED], "reply", "without call_id", id="call-without-id"),
        pytest.param([], "protocol", "ended without response.completed", id="no-terminal"),
    ],
)
def test_bad_streams_are_clear_errors_with_the_partial_reply_kept(
    run_loop: LoopRunner, tail: list[Any], kind: str, message: str
) -> None:
    body = sse_body([*PARTIAL, *tail], done=False)
    trace = run_loop.trace(Response(body, headers=SSE), stream=True, tools=(ECHO,), **RESPONSES)
    it = trace.iterations[0]
    assert trace.outcome == "BackendError"
    assert isinstance(trace.exception, BackendError)
    assert trace.exception.kind == kind and message in trace.exception.message
    assert (it.ending, it.raw_content) == ("error", "partial answer")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            _response([], status="failed", error={"message": "boom"}), "failed: boom", id="failed"
        ),
        pytest.param(
            _response([{"type": "image_generation_call"}]), "unknown type", id="unknown-item"
        ),
        pytest.param(
            _response([{"type": "function_call", "name": "echo", "arguments": "{}"}]),
            "without call_id",
            id="call-without-id",
        ),
        pytest.param({"object": "response"}, "has no output", id="no-output"),
        pytest.param(_response([], status="in_progress"), "not finished", id="in-progress"),
    ],
)
def test_bad_replies_are_clear_errors(run_loop: LoopRunner, body: Any, message: str) -> None:
    trace = run_loop.trace(Response(body), **RESPONSES)
    assert isinstance(trace.exception, BackendError)
    assert trace.exception.kind == "reply" and message in trace.exception.message


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_server_without_the_route_says_so(stream: bool) -> None:
    with ScriptedServer() as srv:
        srv.push(Response({"error": {"message": "File Not Found"}}, status=404))
        with Client(srv.base_url, api="responses", max_retries=0) as client:
            trace = client.run_trace(RunRequest("m", 16, prompt="hi", stream=stream))
    exc = trace.exception
    assert isinstance(exc, BackendError)
    assert (exc.kind, exc.status_code) == ("http", 404)
    assert "no Responses API" in exc.message and 'api="chat"' in exc.message


def test_the_demo_serves_responses_streamed_and_not(demo: DemoServer) -> None:
    request = RunRequest("reasoning-field", 512, prompt=DEMO_PROMPT, tools=demo_tools())
    with Client(demo.base_url, api="responses") as client:
        for stream in (False, True):
            result = client.run(dataclasses.replace(request, stream=stream))
            assert result.trace.settings["api"] == "responses"
            assert result.trace.outcome == "ok" and result.tool_calls == 3
            assert result.trace.iterations[0].reasoning_field == "reasoning_text"
    assert demo.requests[-1].path == "/v1/responses"


@pytest.mark.parametrize(
    "events",
    [
        pytest.param(
            [
                {**CALL_ADDED, "item": {**CALL_ADDED["item"], "call_id": "call_9"}},
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": "fc_1",
                    "arguments": '{"text": "once"}',
                },
            ],
            id="arguments-only-at-done",
        ),
        pytest.param(
            [
                {
                    "type": "response.output_item.done",
                    "output_index": 0,
                    "item": {
                        "type": "function_call",
                        "id": "fc_1",
                        "call_id": "call_9",
                        "name": "echo",
                        "arguments": '{"text": "once"}',
                    },
                }
            ],
            id="whole-item-at-done",
        ),
    ],
)
def test_calls_that_arrive_whole_run_once(run_loop: LoopRunner, events: list[Any]) -> None:
    body = sse_body([*events, COMPLETED], done=False)
    trace = run_loop.trace(
        Response(body, headers=SSE), chat_reply("Echoed."), stream=True, tools=(ECHO,), **RESPONSES
    )
    assert trace.outcome == "ok"
    [call] = trace.tool_calls
    assert (call.received_id, call.name, call.arguments, call.result) == (
        "call_9",
        "echo",
        '{"text": "once"}',
        "echo once",
    )
    assert trace.iterations[0].finish_reason == "tool_calls"
