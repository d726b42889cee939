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
import pytest
from shared import PERSONAS

from rig_nb import BackendError, Client
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools
from rig_nb.testing import ScriptedServer, chat_reply, tool_call
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
    assert reply.reasoning_signature == (thinking[-1].signature if thinking else "")
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
