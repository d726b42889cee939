"""The replies every wire must read alike, streamed or not: the personas that write calls as
text, scripted replies, and the probes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from rig_nb.testing import chat_reply, tool_call

USAGE = {
    "prompt_tokens": 12,
    "completion_tokens": 40,
    "total_tokens": 52,
    "completion_tokens_details": {"reasoning_tokens": 31},
    "prompt_tokens_details": {"cached_tokens": 8},
}


LONG_ARGS = {"text": "a long argument that arrives over several deltas " * 4}


NAMELESS = {"id": "call_x", "type": "function", "function": {"arguments": "{}"}}


PARTS = [
    {"type": "reasoning.text", "text": "First part of the reasoning, "},
    {"type": "reasoning.text", "text": "then the second part."},
]


THINKING = "Let me think about this for a moment before I answer."


def script_of(*replies: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(replies)


TEXT_TOOL_MODELS = [
    "hermes-text-tools",
    "gpt-oss-raw-harmony",
    "qwen3-coder-text-calls",
    "mistral-text-calls",
    "mistral-mlx-text-calls",
    "draft-then-call",
]


SCRIPTS = [
    pytest.param(script_of(chat_reply("Hello there.")), id="plain-answer"),
    pytest.param(
        script_of(
            chat_reply(None, tool_calls=[tool_call("echo", {"text": "hi"}, id="call_1")]),
            chat_reply("It said: echo hi."),
        ),
        id="tool-round-trip",
    ),
    pytest.param(
        script_of(
            chat_reply(
                None,
                tool_calls=[
                    tool_call("echo", LONG_ARGS, id="call_a"),
                    tool_call("echo", {"text": "two"}, id="call_b"),
                ],
            ),
            chat_reply("Both echoed."),
        ),
        id="two-calls-long-arguments",
    ),
    pytest.param(
        script_of(chat_reply("The answer.", reasoning_content=THINKING)), id="reasoning_content"
    ),
    pytest.param(script_of(chat_reply("The answer.", reasoning=THINKING)), id="reasoning"),
    pytest.param(
        script_of(chat_reply("The answer.", message_extra={"thinking": THINKING})), id="thinking"
    ),
    pytest.param(
        script_of(chat_reply("The answer.", message_extra={"reasoning_details": PARTS})),
        id="reasoning_details",
    ),
    pytest.param(
        script_of(
            chat_reply(
                "", tool_calls=[tool_call("echo", {"text": "x"})], reasoning_content=THINKING
            ),
            chat_reply("", reasoning=THINKING + " The answer is x."),
        ),
        id="calls-then-answer-in-reasoning",
    ),
    pytest.param(
        script_of(chat_reply(f"<think>{THINKING}</think>\n\nThe answer.")), id="think-in-content"
    ),
    pytest.param(
        script_of(
            chat_reply(
                '<think>Draft: <tool_call>{"name": "echo", "arguments": {"text": "x"}}'
                "</tool_call> no, not needed.</think>\n\nThe answer."
            )
        ),
        id="call-drafted-in-think",
    ),
    pytest.param(script_of(chat_reply("Once upon a", finish_reason="length")), id="finish-length"),
    pytest.param(
        script_of(chat_reply("", reasoning_content=THINKING, finish_reason="length")),
        id="length-in-reasoning",
    ),
    pytest.param(script_of(chat_reply(None, tool_calls=[NAMELESS])), id="nameless-call"),
    pytest.param(
        script_of(chat_reply("The answer.", reasoning_content=THINKING, usage=USAGE)),
        id="usage-with-reasoning-tokens",
    ),
    pytest.param(script_of(chat_reply(None, usage={})), id="empty"),
    pytest.param(
        script_of(
            chat_reply('<tool_call>\n{"name": "echo", "arguments": {"text": "t"}}\n</tool_call>'),
            chat_reply("Echoed t."),
        ),
        id="text-tool-call",
    ),
]


PROBES = [
    pytest.param(chat_reply(None, tool_calls=[tool_call("ping", {"message": "hello"})]), id="call"),
    pytest.param(chat_reply("I would ping."), id="text"),
    pytest.param(chat_reply("", reasoning=THINKING, finish_reason="length"), id="length"),
    pytest.param(chat_reply(None, tool_calls=[NAMELESS]), id="nameless"),
    pytest.param(
        chat_reply(
            None, tool_calls=[tool_call("ping", {})], message_extra={"reasoning_details": PARTS}
        ),
        id="call-with-reasoning-details",
    ),
]
