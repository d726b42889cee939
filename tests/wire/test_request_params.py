"""`Request.stop` and `Request.parallel_tool_calls` on every wire, read by the SDKs' own
request types (openai for chat and Responses, anthropic for Messages): each wire sends
them in its own field, and a wire without the field refuses the request before sending."""

from __future__ import annotations

from typing import Any

import anthropic.types as anthropic_types
import pydantic
import pytest
from anthropic.types import message_create_params
from openai.types.chat import completion_create_params
from openai.types.responses import response_create_params

from rig_nb.wire import WIRES, Request, ToolSpec, Turn

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = (ToolSpec("get_weather", "Weather.", CITY), ToolSpec("get_time", "Time.", CITY))
TURNS = (Turn("user", "What is the weather in Paris?"),)
NAMED = {"type": "function", "function": {"name": "get_time"}}

CHAT = completion_create_params.CompletionCreateParamsNonStreaming
RESPONSES = response_create_params.ResponseCreateParamsNonStreaming
MESSAGES = message_create_params.MessageCreateParamsNonStreaming


def _keys(typed: Any) -> frozenset[str]:
    return frozenset(typed.__required_keys__ | typed.__optional_keys__)


def _valid(typed: Any, body: dict[str, Any]) -> None:
    """`body` is what the SDK's request type allows: no field it lacks, each value typed."""
    assert set(body) <= _keys(typed), set(body) - _keys(typed)
    pydantic.TypeAdapter(typed).validate_python(body)


def _request(**kw: Any) -> Request:
    return Request("m", TURNS, 64, **kw)


@pytest.mark.parametrize("parallel", [False, True])
def test_chat_sends_stop_and_parallel_tool_calls(parallel: bool) -> None:
    body = WIRES["chat"].body(
        _request(tools=TOOLS, stop=("gamma", "delta"), parallel_tool_calls=parallel)
    )
    assert body["stop"] == ["gamma", "delta"] and body["parallel_tool_calls"] is parallel
    _valid(CHAT, body)


def test_chat_sends_parallel_tool_calls_only_beside_tools() -> None:
    # OpenAI refuses parallel_tool_calls without tools.
    body = WIRES["chat"].body(_request(parallel_tool_calls=False))
    assert "parallel_tool_calls" not in body and "stop" not in body


def test_responses_sends_parallel_tool_calls_and_has_no_stop() -> None:
    body = WIRES["responses"].body(_request(tools=TOOLS, parallel_tool_calls=False))
    assert body["parallel_tool_calls"] is False
    _valid(RESPONSES, body)
    # The API has no stop: rather than drop it, the wire refuses before anything is sent.
    assert "stop" not in _keys(RESPONSES)
    assert "stop" not in WIRES["responses"].params
    with pytest.raises(ValueError, match="no stop"):
        WIRES["responses"].body(_request(stop=("gamma",)))


@pytest.mark.parametrize(
    ("choice", "parallel", "sent"),
    [
        pytest.param("auto", False, {"type": "auto", "disable_parallel_tool_use": True}, id="auto"),
        pytest.param(None, False, {"type": "auto", "disable_parallel_tool_use": True}, id="unset"),
        pytest.param(
            "required", True, {"type": "any", "disable_parallel_tool_use": False}, id="any"
        ),
        pytest.param(
            NAMED,
            False,
            {"type": "tool", "name": "get_time", "disable_parallel_tool_use": True},
            id="named",
        ),
        # A "none" choice calls nothing, and its type takes no switch.
        pytest.param("none", False, {"type": "none"}, id="none"),
    ],
)
def test_messages_carries_the_switch_in_tool_choice(
    choice: Any, parallel: bool, sent: dict[str, Any]
) -> None:
    body = WIRES["messages"].body(
        _request(tools=TOOLS, tool_choice=choice, parallel_tool_calls=parallel, stop=("gamma",))
    )
    assert body["tool_choice"] == sent
    assert body["stop_sequences"] == ["gamma"] and "stop" not in body
    assert "parallel_tool_calls" not in body
    _valid(MESSAGES, body)
    kind = {
        "auto": anthropic_types.ToolChoiceAutoParam,
        "any": anthropic_types.ToolChoiceAnyParam,
        "tool": anthropic_types.ToolChoiceToolParam,
        "none": anthropic_types.ToolChoiceNoneParam,
    }[sent["type"]]
    assert set(sent) <= _keys(kind)


def test_ollama_sends_stop_in_options_and_has_no_parallel_tool_calls() -> None:
    body = WIRES["ollama"].body(_request(tools=TOOLS, stop=("gamma",)))
    assert body["options"]["stop"] == ["gamma"] and "stop" not in body
    assert "parallel_tool_calls" not in WIRES["ollama"].params
    with pytest.raises(ValueError, match="no parallel_tool_calls"):
        WIRES["ollama"].body(_request(tools=TOOLS, parallel_tool_calls=False))


def test_a_request_without_them_sends_neither() -> None:
    for wire in WIRES.values():
        body = wire.body(_request(tools=TOOLS))
        assert not {"stop", "stop_sequences", "parallel_tool_calls"} & set(body)
        assert "disable_parallel_tool_use" not in str(body.get("tool_choice"))
        assert "stop" not in body.get("options", {})


@pytest.mark.parametrize(
    "kw",
    [
        pytest.param({"stop": "gamma"}, id="stop-a-string"),
        pytest.param({"stop": ("",)}, id="stop-empty"),
        pytest.param({"stop": (3,)}, id="stop-not-text"),
        pytest.param({"parallel_tool_calls": "no"}, id="parallel-not-bool"),
    ],
)
def test_bad_values_are_refused_when_the_request_is_made(kw: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        _request(**kw)
