"""The expectations per wire that tests/test_wire_protocol.py holds every wire to.

One `Row` per wire name: its route, framing, headers, the body of one conversation with
every turn kind, a minimal and a full reply, a stream, the thinking mapping, the replay
field and the model list. The chat and Responses rows are checked exactly; the Messages
and Ollama rows (tests/wire_rows_native.py) check what DESIGN.md spells out for those.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rig_nb.wire import Call, Request, ToolSpec, Turn

KEY = "sk-wire-4242"
FIELDS = ("reasoning_content", "reasoning", "thinking", "content")
TOOL = ToolSpec(
    "get_weather",
    "Weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
CALL = Call("call_1", "get_weather", '{"city": "Paris"}')


def conversation(reasoning_field: str, *, stream: bool = False) -> Request:
    """Every turn kind: system, user, assistant (text, reasoning, signature, a call), tool."""
    turns = (
        Turn("system", "Be brief."),
        Turn("user", "Weather in Paris?"),
        Turn(
            "assistant",
            text="Checking.",
            reasoning="Need the tool.",
            reasoning_field=reasoning_field,
            signature="sig-opaque-1",
            calls=(CALL,),
        ),
        Turn("tool", "Paris: 16 C", call_id="call_1", name="get_weather"),
    )
    return Request(
        "m", turns, 64, tools=(TOOL,), temperature=0.5, stream=stream, extra={"top_k": 5}
    )


def sse(*events: Any, done: bool = False) -> bytes:
    out = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    return out + (b"data: [DONE]\n\n" if done else b"")


# What the replies below say: one reasoning, one answer, one call, usage.
SAID = {
    "content": "Let me check.",
    "reasoning": "Need weather.",
    "calls": [("get_weather", {"city": "Oslo"})],
    "call_ids": ["call_9"],
    "usage": {
        "prompt_tokens": 20,
        "completion_tokens": 10,
        "reasoning_tokens": 4,
        "cached_tokens": 8,
    },
}


@dataclass(frozen=True)
class Row:
    """What one wire is expected to do."""

    route: str
    framing: str
    models_route: str
    root: str  # the root for base URL http://h:1/v1
    headers: dict[str, str]  # with KEY
    # Checks the body of `conversation(field)`: (body, field) -> None, asserting.
    body: Callable[[dict[str, Any], str], None]
    minimal: bytes
    minimal_said: dict[str, Any]
    full: bytes
    full_said: dict[str, Any]
    stream: bytes
    stream_said: dict[str, Any]
    thinking: dict[tuple[Any, str], dict[str, Any]]
    replay: dict[str, str]
    models: bytes
    model_ids: list[str]
    headers_no_key: dict[str, str] = field(default_factory=dict)


def exactly(expected: Callable[[str], dict[str, Any]]) -> Callable[[dict[str, Any], str], None]:
    """A body check: the body is `expected(field)`, exactly."""

    def check(body: dict[str, Any], reasoning_field: str) -> None:
        assert body == expected(reasoning_field)

    return check


# The chat completions wire.


def chat_body(reasoning_field: str) -> dict[str, Any]:
    assistant: dict[str, Any] = {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    if reasoning_field == "content":
        assistant["content"] = "<think>Need the tool.</think>\n\nChecking."
    else:
        assistant[reasoning_field] = "Need the tool."
    return {
        "model": "m",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            assistant,
            {"role": "tool", "tool_call_id": "call_1", "content": "Paris: 16 C"},
        ],
        "max_tokens": 64,
        "temperature": 0.5,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather for a city.",
                    "parameters": dict(TOOL.parameters),
                },
            }
        ],
        "tool_choice": "auto",
        "top_k": 5,
    }


CHAT_USAGE = {
    "prompt_tokens": 20,
    "completion_tokens": 10,
    "total_tokens": 30,
    "completion_tokens_details": {"reasoning_tokens": 4},
    "prompt_tokens_details": {"cached_tokens": 8},
}
CHAT_CALL = {
    "id": "call_9",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
}


def _delta(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _frag(**fn: Any) -> dict[str, Any]:
    return {"tool_calls": [{"index": 0, **fn}]}


CHAT_ROW = Row(
    route="/chat/completions",
    framing="sse",
    models_route="/models",
    root="http://h:1/v1",
    headers={"Authorization": f"Bearer {KEY}"},
    body=exactly(chat_body),
    minimal=b'{"choices":[{"message":{"content":"hi"}}]}',
    minimal_said={
        "content": "hi",
        "reasoning": "",
        "reasoning_field": "",
        "calls": [],
        "usage": {},
    },
    full=json.dumps(
        {
            "id": "c1",
            "object": "chat.completion",
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": "Let me check.",
                        "reasoning_content": "Need weather.",
                        "tool_calls": [CHAT_CALL],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": CHAT_USAGE,
        }
    ).encode(),
    full_said={**SAID, "reasoning_field": "reasoning_content", "finish_reason": "tool_calls"},
    stream=sse(
        _delta({"role": "assistant", "reasoning": "Need "}),
        _delta({"reasoning": "weather."}),
        _delta({"content": "Let me "}),
        _delta({"content": "check."}),
        _delta(
            _frag(
                id="call_9",
                type="function",
                function={"name": "get_weather", "arguments": '{"city":'},
            )
        ),
        _delta(_frag(function={"arguments": '"Oslo"}'})),
        _delta({}, "tool_calls"),
        {"object": "chat.completion.chunk", "choices": [], "usage": CHAT_USAGE},
        done=True,
    ),
    stream_said={**SAID, "reasoning_field": "reasoning", "finish_reason": "tool_calls"},
    thinking={
        (None, "llama.cpp"): {},
        (False, "llama.cpp"): {
            "reasoning_effort": "none",
            "chat_template_kwargs": {"enable_thinking": False},
        },
        (True, "vllm"): {"chat_template_kwargs": {"enable_thinking": True, "thinking": True}},
        ("high", "openai"): {"reasoning_effort": "high"},
        (True, "ollama"): {"reasoning_effort": "medium"},
        (300, "vllm"): {"thinking_token_budget": 300},
        (300, "llama.cpp"): {"thinking_budget_tokens": 300},
        (300, "openai"): {},
    },
    replay={"vllm": "reasoning", "ollama": "reasoning", "llama.cpp": "reasoning_content"},
    models=b'{"object":"list","data":[{"id":"a","object":"model"},"junk",{"id":"b"}]}',
    model_ids=["a", "b"],
)


# The Responses wire.


def responses_body(reasoning_field: str) -> dict[str, Any]:
    return {
        "model": "m",
        "instructions": "Be brief.",
        "input": [
            {"type": "message", "role": "user", "content": "Weather in Paris?"},
            {
                "type": "reasoning",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": "Need the tool."}],
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Checking."}],
            },
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city": "Paris"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "Paris: 16 C"},
        ],
        "store": False,
        "max_output_tokens": 64,
        "temperature": 0.5,
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Weather for a city.",
                "parameters": dict(TOOL.parameters),
            }
        ],
        "tool_choice": "auto",
        "top_k": 5,
    }


RESPONSES_USAGE = {
    "input_tokens": 20,
    "output_tokens": 10,
    "total_tokens": 30,
    "output_tokens_details": {"reasoning_tokens": 4},
    "input_tokens_details": {"cached_tokens": 8},
}
RS_ITEM = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [],
    "content": [{"type": "reasoning_text", "text": "Need weather."}],
}
MSG_ITEM = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Let me check.", "annotations": []}],
}
FC_ITEM = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_9",
    "name": "get_weather",
    "arguments": '{"city":"Oslo"}',
    "status": "completed",
}
RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "status": "completed",
    "model": "m",
    "output": [RS_ITEM, MSG_ITEM, FC_ITEM],
    "usage": RESPONSES_USAGE,
}


def _item_events(
    index: int, item: dict[str, Any], empty: dict[str, Any], kind: str, pieces: tuple[str, ...]
) -> Iterator[dict[str, Any]]:
    """One output item streamed: added (as `empty`), its deltas of `kind`, done."""
    yield {"type": "response.output_item.added", "output_index": index, "item": empty}
    for piece in pieces:
        delta = {"type": kind, "output_index": index, "item_id": item["id"], "delta": piece}
        if kind != "response.function_call_arguments.delta":
            delta = {**delta, "content_index": 0}
        yield delta
    if kind == "response.function_call_arguments.delta":
        yield {
            "type": "response.function_call_arguments.done",
            "output_index": index,
            "item_id": item["id"],
            "arguments": "".join(pieces),
        }
    yield {"type": "response.output_item.done", "output_index": index, "item": item}


def _responses_events() -> Iterator[dict[str, Any]]:
    started = {**RESPONSE, "status": "in_progress", "output": [], "usage": None}
    yield {"type": "response.created", "response": started}
    yield from _item_events(
        0,
        RS_ITEM,
        {**RS_ITEM, "content": []},
        "response.reasoning_text.delta",
        ("Need ", "weather."),
    )
    yield from _item_events(
        1,
        MSG_ITEM,
        {**MSG_ITEM, "content": []},
        "response.output_text.delta",
        ("Let me ", "check."),
    )
    yield from _item_events(
        2,
        FC_ITEM,
        {**FC_ITEM, "arguments": ""},
        "response.function_call_arguments.delta",
        ('{"city":', '"Oslo"}'),
    )
    yield {"type": "response.completed", "response": RESPONSE}


def _numbered(events: Iterator[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


RESPONSES_ROW = Row(
    route="/responses",
    framing="sse",
    models_route="/models",
    root="http://h:1/v1",
    headers={"Authorization": f"Bearer {KEY}"},
    body=exactly(responses_body),
    minimal=b'{"output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}',
    minimal_said={
        "content": "hi",
        "reasoning": "",
        "reasoning_field": "",
        "calls": [],
        "usage": {},
    },
    full=json.dumps(RESPONSE).encode(),
    full_said={**SAID, "reasoning_field": "reasoning_text", "finish_reason": "tool_calls"},
    stream=sse(*_numbered(_responses_events())),
    stream_said={**SAID, "reasoning_field": "reasoning_text", "finish_reason": "tool_calls"},
    thinking={
        (None, "openai"): {},
        ("high", "openai"): {"reasoning_effort": "high"},
        (False, "vllm"): {"chat_template_kwargs": {"enable_thinking": False, "thinking": False}},
        (300, "openai"): {},
    },
    replay={"vllm": "reasoning", "llama.cpp": "reasoning_content"},
    models=b'{"object":"list","data":[{"id":"a"},{"id":"b"}]}',
    model_ids=["a", "b"],
)

WIRE_ROWS: dict[str, Row] = {"chat": CHAT_ROW, "responses": RESPONSES_ROW}
