"""Issue 35 beyond the stream reader: a content filter ends a turn as `content_filter` on
both wires, a caller's `extra_body` key wins over the whole thinking switch, and a Responses
error quotes an echoed key only after it is redacted.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from cli_helpers import assert_one_line_error, cli
from runs import LoopRunner

from rig_nb import BackendError, Tool
from rig_nb.testing import Response, ScriptedServer, chat_reply, sse_body, tool_call

SSE = {"content-type": "text/event-stream"}
WAYS = [
    pytest.param(api, stream, id=f"{api}-{'streamed' if stream else 'whole'}")
    for api in ("chat", "responses")
    for stream in (False, True)
]
KEY = "sk-proj-REDACTME0123456789abcdefghijklmnopqrstuvwxyzABCDEF"


def _never(args: dict[str, Any]) -> str:
    raise AssertionError("a call from a filtered turn ran")


NEVER = Tool("record", "Record an object.", {"type": "object", "properties": {}}, _never)


# Item 5: content_filter is an ending of its own, never an answer.


@pytest.mark.parametrize(("api", "stream"), WAYS)
def test_a_filtered_reply_ends_as_content_filter(
    server: ScriptedServer, run_loop: LoopRunner, api: str, stream: bool
) -> None:
    server.push(chat_reply("Here is the start of", finish_reason="content_filter"))
    trace = run_loop.trace(api=api, kind="openai", stream=stream)
    it = trace.iterations[0]
    assert (trace.outcome, it.ending, it.finish_reason) == (
        "content_filter",
        "content_filter",
        "content_filter",
    )
    assert it.text == "Here is the start of" and trace.exception is None


@pytest.mark.parametrize(("api", "stream"), WAYS)
def test_calls_in_a_filtered_turn_are_not_run(
    server: ScriptedServer, run_loop: LoopRunner, api: str, stream: bool
) -> None:
    reply = chat_reply(tool_calls=[tool_call("record", {"a": 1})], finish_reason="content_filter")
    server.push(reply)
    trace = run_loop.trace(api=api, kind="openai", stream=stream, tools=(NEVER,))
    assert trace.outcome == "content_filter" and len(trace.iterations) == 1
    # Shown as received (issue 45: an SDK keeps them too), never run.
    [call] = trace.iterations[0].tool_calls
    assert (call.name, call.result, call.is_error) == ("record", "", False)
    assert len(server.requests) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_responses_incomplete_for_the_filter_is_content_filter(
    server: ScriptedServer, run_loop: LoopRunner, stream: bool
) -> None:
    message = {"type": "message", "content": [{"type": "output_text", "text": "Part"}]}
    body = {
        "id": "resp_1",
        "status": "incomplete",
        "incomplete_details": {"reason": "content_filter"},
        "output": [message],
    }
    if stream:
        events = [
            {"type": "response.output_item.added", "output_index": 0, "item": message},
            {"type": "response.incomplete", "response": {**body, "output": None}},
        ]
        server.push(Response(sse_body(events, done=False), headers=SSE))
    else:
        server.push(Response(body))
    trace = run_loop.trace(api="responses", kind="openai", stream=stream)
    assert (trace.outcome, trace.iterations[0].ending) == ("content_filter", "content_filter")
    assert trace.iterations[0].text == "Part"


def test_the_cli_says_what_content_filter_means(
    capsys: pytest.CaptureFixture[str], server: ScriptedServer
) -> None:
    server.push(chat_reply("Here is", finish_reason="content_filter"))
    ran = cli(capsys, "run", "--base-url", server.base_url, "--model", "m", "--prompt", "hi")
    assert_one_line_error(
        ran, 1, "outcome content_filter: the server's content filter stopped the reply"
    )
    assert "outcome content_filter, ending content_filter" in ran.stdout


# Item 6: a key the caller sets wins over the whole switch it belongs to.


@pytest.mark.parametrize(
    ("api", "kind", "thinking", "extra", "sent", "absent"),
    [
        pytest.param(
            "responses",
            "openai",
            "high",
            {"reasoning": {"effort": "low", "summary": "auto"}},
            {"reasoning": {"effort": "low", "summary": "auto"}},
            ("reasoning_effort",),
            id="responses-reasoning",
        ),
        pytest.param(
            "chat",
            "openai",
            True,
            {"reasoning": {"effort": "low"}},
            {"reasoning": {"effort": "low"}},
            ("reasoning_effort",),
            id="chat-reasoning",
        ),
        pytest.param(
            "chat",
            "vllm",
            True,
            {"chat_template_kwargs": {"enable_thinking": False}},
            {"chat_template_kwargs": {"enable_thinking": False}},
            (),
            id="template-switch",
        ),
        pytest.param(
            "chat",
            "llama.cpp",
            256,
            {"thinking_token_budget": 64},
            {"thinking_token_budget": 64},
            ("thinking_budget_tokens",),
            id="budget",
        ),
    ],
)
def test_a_callers_key_wins_over_the_whole_switch(
    server: ScriptedServer,
    run_loop: LoopRunner,
    api: str,
    kind: str,
    thinking: Any,
    extra: dict[str, Any],
    sent: dict[str, Any],
    absent: tuple[str, ...],
) -> None:
    trace = run_loop.trace(
        chat_reply("ok"), api=api, kind=kind, thinking=thinking, extra_body=extra
    )
    body = server.requests[-1].json
    assert trace.outcome == "ok"
    assert {k: body[k] for k in sent} == sent
    assert not any(name in body for name in absent)
    assert trace.iterations[0].thinking_sent == {}


def test_without_a_callers_key_the_mapping_is_sent(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    trace = run_loop.trace(chat_reply("ok"), api="responses", kind="openai", thinking="high")
    assert server.requests[-1].json["reasoning"] == {"effort": "high"}
    assert trace.iterations[0].thinking_sent == {"reasoning_effort": "high"}


# Item 4: an echoed key is redacted before any cut.


def _status_reply(stream: bool) -> Response:
    if not stream:
        return Response({"id": "resp_1", "status": KEY, "output": []})
    event = {"type": "response.completed", "response": {"status": KEY, "output": []}}
    return Response(sse_body([event], done=False), headers=SSE)


def _item_reply(stream: bool) -> Response:
    if not stream:
        return Response({"id": "resp_1", "status": "completed", "output": [{"type": KEY}]})
    event = {"type": "response.output_item.added", "output_index": 0, "item": {"type": KEY}}
    return Response(sse_body([event], done=False), headers=SSE)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(
    ("reply", "words"),
    [
        pytest.param(_status_reply, "not finished (status", id="unknown-status"),
        pytest.param(_item_reply, "unknown type", id="unknown-item"),
    ],
)
def test_a_key_echoed_in_a_responses_reply_is_redacted(
    run_loop: LoopRunner, reply: Any, words: str, stream: bool
) -> None:
    trace = run_loop.trace(reply(stream), api="responses", key=KEY, stream=stream)
    exc = trace.exception
    assert isinstance(exc, BackendError) and exc.kind == "reply"
    assert words in exc.message and "[redacted]" in exc.message
    assert KEY[:10] not in exc.message and KEY[-10:] not in exc.message
    assert KEY[:10] not in trace.to_json()


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize(
    "body",
    [
        pytest.param(lambda key: " " * 3990 + f"bad key {key}", id="page"),
        pytest.param(
            lambda key: json.dumps({"error": {"message": "x" * 3995 + key}}), id="json-message"
        ),
    ],
)
def test_a_key_at_the_error_scan_limit_is_redacted(
    run_loop: LoopRunner, api: str, body: Any
) -> None:
    # The scan of an error body stops near 4000 characters: a key across that point must not
    # leave its first characters behind.
    trace = run_loop.trace(Response(body(KEY).encode(), status=401), api=api, key=KEY)
    exc = trace.exception
    assert isinstance(exc, BackendError) and exc.status_code == 401
    assert KEY[:5] not in exc.message and KEY[:5] not in trace.to_json()
