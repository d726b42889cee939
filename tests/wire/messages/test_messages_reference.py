"""The Anthropic SDK as the reference reader of the demo's `/v1/messages` (issue 32).

For every demo persona, what the DemoServer serves on `/v1/messages` is read by the
official `anthropic` SDK (`messages.create`, and the `messages.stream` accumulator's
`get_final_message()`) and by rig_nb's Messages wire, and both readings agree: text,
thinking, signature, tool_use ids, names and inputs, stop reason and usage. The SDK is a
test dependency only, so rig_nb's reader and its server side cannot err together.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pydantic
import pytest
from shared import PERSONAS

from rig_nb import BackendError, Client, RunRequest, tool
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools
from rig_nb.testing import Response, ScriptedServer, chat_reply, sse_body, tool_call
from rig_nb.wire import WIRES, Reply, Request, ToolSpec, Turn

MESSAGES = WIRES["messages"]
FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def _request(model: str, stream: bool) -> Request:
    specs = tuple(ToolSpec(t.name, t.description, t.input_schema) for t in demo_tools())
    turns = (Turn("system", DEMO_SYSTEM), Turn("user", DEMO_PROMPT))
    return Request(model, turns, 512, tools=specs, stream=stream)


def _sdk(base_url: str) -> anthropic.Anthropic:
    # The SDK adds /v1/messages to its base URL.
    return anthropic.Anthropic(
        base_url=base_url.removesuffix("/v1"), api_key="sk-ant-test", max_retries=0
    )


def _arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def assert_agree(message: Any, reply: Reply) -> None:
    """The SDK's Message and rig_nb's Reply say the same."""
    blocks = message.content
    assert reply.content == "".join(b.text for b in blocks if b.type == "text")
    thinking = [b for b in blocks if b.type == "thinking"]
    assert reply.reasoning == "".join(b.thinking for b in thinking)
    assert reply.reasoning_field == ("thinking" if reply.reasoning else "")
    assert reply.reasoning_signature == ((thinking[-1].signature or "") if thinking else "")
    uses = [(b.id, b.name, b.input) for b in blocks if b.type == "tool_use"]
    calls = [(c.id, c.name, _arguments(c.arguments)) for c in reply.tool_calls]
    assert calls == uses
    assert reply.finish_reason == FINISH[message.stop_reason]
    usage = message.usage
    cached = usage.cache_read_input_tokens or 0
    written = usage.cache_creation_input_tokens or 0
    assert reply.usage["prompt_tokens"] == usage.input_tokens + cached + written
    assert reply.usage["completion_tokens"] == usage.output_tokens
    assert reply.usage.get("cached_tokens") == usage.cache_read_input_tokens


def _body(request: Request) -> dict[str, Any]:
    body = MESSAGES.body(request)
    body.pop("stream", None)
    return body


@pytest.mark.parametrize("model", PERSONAS)
def test_the_sdk_and_rig_nb_read_a_whole_reply_alike(demo: DemoServer, model: str) -> None:
    request = _request(model, stream=False)
    with _sdk(demo.base_url) as sdk:
        message = sdk.messages.create(**_body(request))
    with Client(demo.base_url, api="messages", max_retries=0) as client:
        reply = client.chat(request)
    assert message.type == "message" and message.role == "assistant"
    assert_agree(message, reply)


@pytest.mark.parametrize("model", PERSONAS)
def test_the_sdk_accumulator_and_rig_nb_read_a_stream_alike(demo: DemoServer, model: str) -> None:
    request = _request(model, stream=True)
    with _sdk(demo.base_url) as sdk, sdk.messages.stream(**_body(request)) as stream:
        types = [event.type for event in stream]
        message = stream.get_final_message()
    with Client(demo.base_url, api="messages", max_retries=0) as client:
        reader = client.reader()
        reply = client.stream(request, reader)
    assert types[0] == "message_start" and types[-1] == "message_stop"
    assert_agree(message, reply)
    assert reply.stream_faults == []
    assert reader.done


def test_the_sdk_reads_a_scripted_reply_with_cache_counts_alike(server: ScriptedServer) -> None:
    usage = {
        "prompt_tokens": 120,
        "completion_tokens": 9,
        "prompt_tokens_details": {"cached_tokens": 100},
    }
    reply = chat_reply(None, tool_calls=[tool_call("ping", {"n": 1}, id="toolu_1")], usage=usage)
    server.push(reply, reply, reply, reply)
    request = Request("m", (Turn("user", "go"),), 64, tools=(ToolSpec("ping", "p", {}),))
    with _sdk(server.base_url) as sdk:
        message = sdk.messages.create(**_body(request))
        with sdk.messages.stream(**_body(request)) as stream:
            streamed = stream.get_final_message()
    with Client(server.base_url, api="messages") as client:
        whole = client.chat(request)
        live = client.stream(Request(**{**request.__dict__, "stream": True}), client.reader())
    for theirs, ours in ((message, whole), (streamed, live)):
        assert_agree(theirs, ours)
        assert ours.usage == {"prompt_tokens": 120, "completion_tokens": 9, "cached_tokens": 100}
        assert ours.tool_calls[0].id == "toolu_1"


def test_the_sdk_and_rig_nb_both_refuse_a_changed_signature(demo: DemoServer) -> None:
    turns = (
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "changed", "signature": "sig-0"}],
        },
        {"role": "user", "content": "again"},
    )
    with _sdk(demo.base_url) as sdk, pytest.raises(anthropic.BadRequestError) as theirs:
        sdk.messages.create(model="well-behaved", max_tokens=64, messages=list(turns))
    request = Request(
        "well-behaved",
        (
            Turn("user", "hi"),
            Turn("assistant", reasoning="changed", reasoning_field="thinking", signature="sig-0"),
            Turn("user", "again"),
        ),
        64,
    )
    with Client(demo.base_url, api="messages") as client, pytest.raises(BackendError) as ours:
        client.chat(request)
    assert ours.value.status_code == theirs.value.status_code == 400
    assert "Invalid `signature` in `thinking` block" in ours.value.message


# Issue 45: the same blocks read whole and streamed, by the SDK and by rig_nb.

ASK = Request("m", (Turn("user", "hi"),), 64)
HEAD = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m"}
USAGE = {"input_tokens": 5, "output_tokens": 3}


def _sse(events: list[dict[str, Any]]) -> Response:
    framed = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]
    return Response(sse_body(framed, done=False), headers={"content-type": "text/event-stream"})


def _stream_of(blocks: list[dict[str, Any]], starts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events of a reply whose block i starts as `starts[i]` and whose deltas carry the
    rest of `blocks[i]` (its text after the start's, its signature when it has one)."""
    head = {**HEAD, "content": [], "stop_reason": None, "usage": dict(USAGE)}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": head}]
    for index, (block, start) in enumerate(zip(blocks, starts, strict=True)):
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        key = {"text": "text", "thinking": "thinking"}[block["type"]]
        rest = block[key][len(start[key]) :]
        events.append(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": f"{key}_delta", key: rest},
            }
        )
        if isinstance(block.get("signature"), str):
            delta = {"type": "signature_delta", "signature": block["signature"]}
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    end = {"stop_reason": "end_turn", "stop_sequence": None}
    events.append({"type": "message_delta", "delta": end, "usage": {"output_tokens": 3}})
    events.append({"type": "message_stop"})
    return events


def _read_both_ways(
    server: ScriptedServer, blocks: list[dict[str, Any]], starts: list[dict[str, Any]]
) -> list[tuple[Any, Reply]]:
    """[(the SDK's whole Message, rig_nb's whole Reply), (the SDK accumulator's final
    Message, rig_nb's streamed Reply)] for one reply's blocks."""
    whole = {**HEAD, "content": blocks, "stop_reason": "end_turn", "usage": USAGE}
    events = _stream_of(blocks, starts)
    server.push(whole, _sse(events), whole, _sse(events))
    with _sdk(server.base_url) as sdk:
        theirs = sdk.messages.create(**_body(ASK))
        with sdk.messages.stream(**_body(ASK)) as stream:
            streamed = stream.get_final_message()
    with Client(server.base_url, api="messages", max_retries=0) as client:
        ours = client.chat(ASK)
        live = client.stream(Request("m", ASK.turns, 64, stream=True), client.reader())
    return [(theirs, ours), (streamed, live)]


def test_a_blocks_starting_text_is_kept_when_deltas_follow(server: ScriptedServer) -> None:
    blocks = [
        {"type": "thinking", "thinking": "I think.", "signature": "sig-1"},
        {"type": "text", "text": "Hello, world."},
    ]
    starts = [
        {"type": "thinking", "thinking": "I th", "signature": ""},
        {"type": "text", "text": "Hel"},
    ]
    for theirs, ours in _read_both_ways(server, blocks, starts):
        assert_agree(theirs, ours)
        assert (ours.reasoning, ours.content) == ("I think.", "Hello, world.")


@pytest.mark.parametrize(
    "last",
    [
        pytest.param({"type": "thinking", "thinking": "Then."}, id="no-signature"),
        pytest.param({"type": "thinking", "thinking": "Then.", "signature": None}, id="null"),
        pytest.param({"type": "thinking", "thinking": "Then.", "signature": ""}, id="empty"),
        pytest.param({"type": "thinking", "thinking": "Then.", "signature": "sig-2"}, id="signed"),
    ],
)
def test_the_signature_is_the_last_thinking_blocks_whole_and_streamed(
    server: ScriptedServer, last: dict[str, Any]
) -> None:
    blocks = [
        {"type": "thinking", "thinking": "First.", "signature": "sig-1"},
        {"type": "text", "text": "Hi."},
        last,
    ]
    starts = [
        {"type": "thinking", "thinking": "", "signature": ""},
        {"type": "text", "text": ""},
        {"type": "thinking", "thinking": "", "signature": ""},
    ]
    read = _read_both_ways(server, blocks, starts)
    for theirs, ours in read:
        assert_agree(theirs, ours)
    (_, whole), (_, live) = read
    assert whole.reasoning_signature == live.reasoning_signature == (last.get("signature") or "")


@tool
def ping(n: int) -> str:
    """Ping."""
    return f"pong {n}"


TOOL_USE = pydantic.TypeAdapter(anthropic.types.ToolUseBlockParam)
TOOL_RESULT = pydantic.TypeAdapter(anthropic.types.ToolResultBlockParam)


@pytest.mark.parametrize(
    "arguments",
    ['n": 1}', '{"n": ', "[1, 2]", '"one"', "null"],
    ids=["dropped-opening", "never-closed", "array", "string", "null"],
)
@pytest.mark.parametrize("api", ["messages", "ollama"])
def test_arguments_that_never_formed_an_object_go_back_as_an_object(
    server: ScriptedServer, arguments: str, api: str
) -> None:
    # The loop fed the tool's error back; the echoed call carries `{}`, the object both wires
    # require (Anthropic's ToolUseBlockParam.input, Ollama's arguments).
    first = chat_reply(tool_calls=[tool_call("ping", arguments, id="toolu_1")])
    server.push(first, chat_reply("Sorry."))
    with Client(server.base_url, api=api, max_retries=0) as client:
        trace = client.run_trace(RunRequest("m", 64, prompt="ping", tools=(ping,)))
    assert trace.outcome == "ok", trace.error
    [call] = trace.iterations[0].tool_calls
    assert call.is_error
    sent = server.requests[1].json["messages"]
    if api == "ollama":  # Ollama's server side sends arguments as an object when it can
        assert sent[-2]["tool_calls"][0]["function"]["arguments"] == {}
        return
    assert call.arguments == arguments
    use, result = sent[-2]["content"][-1], sent[-1]["content"][0]
    assert use == {"type": "tool_use", "id": "toolu_1", "name": "ping", "input": {}}
    TOOL_USE.validate_python(use, strict=True)
    TOOL_RESULT.validate_python(result, strict=True)
    assert result["is_error"] is True and "not" in result["content"]
