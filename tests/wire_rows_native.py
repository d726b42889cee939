"""The Messages and Ollama rows of tests/test_wire_protocol.py, from DESIGN.md.

What DESIGN.md spells out for the Anthropic Messages wire and Ollama's native wire:
bodies are checked on those points (not byte for byte), replies and streams on what
they say.
"""

from __future__ import annotations

import json
from typing import Any

from wire_rows import KEY, SAID, TOOL, Row

# The Anthropic Messages wire (DESIGN, "The Anthropic Messages wire").

VERSION = {"anthropic-version": "2023-06-01"}
INLINE = "<think>Need the tool.</think>\n\nChecking."


def check_messages_body(body: dict[str, Any], reasoning_field: str) -> None:
    assert (body["model"], body["max_tokens"], body["system"]) == ("m", 64, "Be brief.")
    assert (body["temperature"], body["top_k"]) == (0.5, 5)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    user, assistant, results = (m["content"] for m in body["messages"])
    assert user == [{"type": "text", "text": "Weather in Paris?"}]
    # Thinking blocks first, then text, then tool_use; the signature sent back unchanged.
    if reasoning_field != "content":
        assert [b["type"] for b in assistant] == ["thinking", "text", "tool_use"]
        assert assistant[0] == {
            "type": "thinking",
            "thinking": "Need the tool.",
            "signature": "sig-opaque-1",
        }
    # Reasoning sent back in `content` goes inline, `<think>` first, as on chat.
    text = "Checking." if reasoning_field != "content" else INLINE
    assert assistant[-2:] == [
        {"type": "text", "text": text},
        {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
    ]
    (result,) = results
    assert (result["type"], result["tool_use_id"], result["content"]) == (
        "tool_result",
        "call_1",
        "Paris: 16 C",
    )
    assert result.get("is_error", False) is False
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Weather for a city.",
            "input_schema": dict(TOOL.parameters),
        }
    ]
    assert body["tool_choice"] == {"type": "auto"}


def named(kind: str, **event: Any) -> bytes:
    """One server-sent event with its `event:` line, as Anthropic sends them."""
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **event})}\n\n".encode()


def _block(index: int, block: dict[str, Any], deltas: list[dict[str, Any]]) -> bytes:
    out = named("content_block_start", index=index, content_block=block)
    out += b"".join(named("content_block_delta", index=index, delta=d) for d in deltas)
    return out + named("content_block_stop", index=index)


MESSAGES_USAGE = {"input_tokens": 12, "output_tokens": 10, "cache_read_input_tokens": 8}
# input_tokens leaves the cached part out: prompt tokens are 12 + 8.
MESSAGES_SAID = {
    **SAID,
    "usage": {"prompt_tokens": 20, "completion_tokens": 10, "cached_tokens": 8},
    "signature": "sig-b",
    "finish_reason": "tool_calls",
}
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [
        {"type": "thinking", "thinking": "Need ", "signature": "sig-a"},
        {"type": "thinking", "thinking": "weather.", "signature": "sig-b"},
        {"type": "text", "text": "Let me "},
        {"type": "text", "text": "check."},
        {"type": "tool_use", "id": "call_9", "name": "get_weather", "input": {"city": "Oslo"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": MESSAGES_USAGE,
}
MESSAGES_STREAM = (
    named(
        "message_start",
        message={
            **MESSAGE,
            "content": [],
            "stop_reason": None,
            "usage": {**MESSAGES_USAGE, "output_tokens": 1},
        },
    )
    + _block(
        0,
        {"type": "thinking", "thinking": "", "signature": ""},
        [
            {"type": "thinking_delta", "thinking": "Need "},
            {"type": "thinking_delta", "thinking": "weather."},
            {"type": "signature_delta", "signature": "sig-b"},
        ],
    )
    + named("ping")
    + _block(
        1,
        {"type": "text", "text": ""},
        [{"type": "text_delta", "text": "Let me "}, {"type": "text_delta", "text": "check."}],
    )
    + _block(
        2,
        {"type": "tool_use", "id": "call_9", "name": "get_weather", "input": {}},
        [
            {"type": "input_json_delta", "partial_json": '{"city":'},
            {"type": "input_json_delta", "partial_json": ' "Oslo"}'},
        ],
    )
    + named(
        "message_delta",
        delta={"stop_reason": "tool_use", "stop_sequence": None},
        usage={"output_tokens": 10},
    )
    + named("message_stop")
)

MESSAGES_ROW = Row(
    route="/messages",
    framing="sse",
    models_route="/models",
    root="http://h:1/v1",
    headers={**VERSION, "x-api-key": KEY},
    headers_no_key=VERSION,
    body=check_messages_body,
    minimal=b'{"content":[{"type":"text","text":"hi"}]}',
    minimal_said={"content": "hi", "reasoning": "", "calls": [], "signature": ""},
    full=json.dumps(MESSAGE).encode(),
    full_said=MESSAGES_SAID,
    stream=MESSAGES_STREAM,
    stream_said=MESSAGES_SAID,
    thinking={
        (False, "openai"): {"thinking": {"type": "disabled"}},
        (300, "openai"): {"thinking": {"type": "enabled", "budget_tokens": 300}},
        ("low", "vllm"): {"thinking": {"type": "enabled", "budget_tokens": 1024}},
        (True, "openai"): {"thinking": {"type": "enabled", "budget_tokens": 4096}},
        ("high", "llama.cpp"): {"thinking": {"type": "enabled", "budget_tokens": 16384}},
    },
    replay={},
    models=b'{"data":[{"id":"claude-x","type":"model","display_name":"X"}],"has_more":false}',
    model_ids=["claude-x"],
)


# Ollama's native wire (DESIGN, "Ollama's native wire").


def check_ollama_body(body: dict[str, Any], reasoning_field: str) -> None:
    assert body["model"] == "m" and body["stream"] is False and body["top_k"] == 5
    assert body["options"]["num_predict"] == 64 and body["options"]["temperature"] == 0.5
    system, user, assistant, result = body["messages"]
    assert system == {"role": "system", "content": "Be brief."}
    assert user == {"role": "user", "content": "Weather in Paris?"}
    if reasoning_field != "content":
        assert (assistant["content"], assistant["thinking"]) == ("Checking.", "Need the tool.")
    else:
        assert assistant["content"] == INLINE and "thinking" not in assistant
    assert assistant["role"] == "assistant"
    (call,) = assistant["tool_calls"]
    assert call["function"] == {"name": "get_weather", "arguments": {"city": "Paris"}}
    assert (result["role"], result["content"], result["tool_name"]) == (
        "tool",
        "Paris: 16 C",
        "get_weather",
    )
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city.",
                "parameters": dict(TOOL.parameters),
            },
        }
    ]


def ndjson(*lines: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def ollama_line(**message: Any) -> dict[str, Any]:
    """One line of an Ollama chat stream before `done`: an assistant message with `message`."""
    return {"model": "m", "message": {"role": "assistant", "content": "", **message}, "done": False}


OLLAMA_CALL = {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
OLLAMA_DONE = {
    "done": True,
    "done_reason": "stop",
    "total_duration": 1_500_000_000,
    "load_duration": 1_000_000,
    "prompt_eval_count": 20,
    "prompt_eval_duration": 2_000_000,
    "eval_count": 10,
    "eval_duration": 500_000_000,
}
OLLAMA_SAID = {
    "content": "Let me check.",
    "reasoning": "Need weather.",
    "reasoning_field": "thinking",
    "calls": SAID["calls"],
    "finish_reason": "tool_calls",
    "usage": {"prompt_tokens": 20, "completion_tokens": 10},
    # DESIGN, "The long conversation": the keys the server reported, durations in seconds.
    "timings": {
        "load_s": 0.001,
        "prompt_s": 0.002,
        "prompt_tokens": 20.0,
        "decode_s": 0.5,
        "decode_tokens": 10.0,
        "total_s": 1.5,
    },
}

OLLAMA_ROW = Row(
    route="/api/chat",
    framing="ndjson",
    models_route="/api/tags",
    root="http://h:1",
    headers={"Authorization": f"Bearer {KEY}"},
    body=check_ollama_body,
    minimal=b'{"message":{"role":"assistant","content":"hi"},"done":true}',
    minimal_said={"content": "hi", "reasoning": "", "calls": []},
    full=json.dumps(
        {
            "model": "m",
            "message": {
                "role": "assistant",
                "content": "Let me check.",
                "thinking": "Need weather.",
                "tool_calls": [OLLAMA_CALL],
            },
            **OLLAMA_DONE,
        }
    ).encode(),
    full_said=OLLAMA_SAID,
    stream=ndjson(
        ollama_line(thinking="Need "),
        ollama_line(thinking="weather."),
        ollama_line(content="Let me "),
        ollama_line(content="check."),
        ollama_line(tool_calls=[OLLAMA_CALL]),
        {**ollama_line(), **OLLAMA_DONE},
    ),
    stream_said=OLLAMA_SAID,
    thinking={
        (False, "ollama"): {"think": False},
        (True, "ollama"): {"think": True},
        ("high", "ollama"): {"think": "high"},
        (300, "ollama"): {"think": True},
    },
    replay={},
    models=b'{"models":[{"name":"qwen3:8b","model":"qwen3:8b","size":1}]}',
    model_ids=["qwen3:8b"],
)

NATIVE_ROWS: dict[str, Row] = {"messages": MESSAGES_ROW, "ollama": OLLAMA_ROW}
