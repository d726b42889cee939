"""GBNF grammars that make a real llama-server emit a chosen reply shape, and raw-HTTP helpers.

A request's `grammar` field constrains sampling, so SmolLM2 writes exactly the text below and the
server's real template and reasoning parser then turn it into what a client sees. The templates
used here (templates/qwen3-thinking.jinja) end the generation prompt in `<think>\\n`, so the
model's text starts inside the think block: a grammar writes `reasoning</think>\\n\\nanswer`, never
the opening tag. tests/real/FINDINGS.md records what each server makes of each shape.

Grammar plus `tools` is a 400 on llama-server ("Cannot use custom grammar constraints with
tools."); real tool calls come from an assistant prefill `<tool_call>\\n` plus tool_choice
"required" instead (tool_call_body): on the Hermes template and on the think template under
`deepseek` or `none`, not under --skip-chat-parsing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

REASONING = "I add 2 and 2, which gives 4."
ANSWER = "The answer is 4."
QUESTION = "What is 2 + 2?"
TOOL_NAME = "get_weather"
TOOL_ARGUMENTS = {"city": "Paris"}
TEXT_TOOL_CALL_JSON = json.dumps({"name": TOOL_NAME, "arguments": TOOL_ARGUMENTS})


def gbnf_literal(text: str) -> str:
    """A GBNF grammar whose only sentence is `text`."""
    return "root ::= " + json.dumps(text, ensure_ascii=True)


# a. A closed think block, then the answer.
# b. The same text is the bare `</think>` leak where nothing parses reasoning (--skip-chat-parsing,
#    or a template without think markers such as Hermes-2-Pro): the template opened `<think>` in
#    the prompt, so the reply holds only the closing tag. (Under `none` the server puts `<think>\n`
#    back in front.)
CLOSED_THINK_TEXT = f"{REASONING}</think>\n\n{ANSWER}"
CLOSED_THINK = gbnf_literal(CLOSED_THINK_TEXT)
BARE_CLOSE_LEAK = CLOSED_THINK

# c. A think block that never closes: no sentence ends, so only max_tokens stops it ("length").
UNCLOSED_THINK_PREFIX = "Let me think."
UNCLOSED_THINK = 'root ::= "Let me think." more\nmore ::= " Still thinking." more'

# d. The answer only in the reasoning: the model stops (end of generation) inside the think
#    block, so content is empty and everything is reasoning.
REASONING_ONLY_TEXT = f"{REASONING} {ANSWER}"
REASONING_ONLY = gbnf_literal(REASONING_ONLY_TEXT)
# d'. The same answer, the block closed and nothing after it.
REASONING_ONLY_CLOSED_TEXT = f"{REASONING} {ANSWER}</think>"
REASONING_ONLY_CLOSED = gbnf_literal(REASONING_ONLY_CLOSED_TEXT)

# e. A Hermes-style tool call written as text after the think block (no `tools` in the request,
#    so no native tool_calls).
TEXT_TOOL_CALL_TEXT = f"{REASONING}</think>\n\n<tool_call>\n{TEXT_TOOL_CALL_JSON}\n</tool_call>"
TEXT_TOOL_CALL = gbnf_literal(TEXT_TOOL_CALL_TEXT)


@dataclass(frozen=True)
class Shape:
    key: str
    title: str
    grammar: str
    max_tokens: int


SHAPES: dict[str, Shape] = {
    "a": Shape("a", "closed think then answer", CLOSED_THINK, 64),
    "b": Shape("b", "bare </think> leak (same text as a)", BARE_CLOSE_LEAK, 64),
    "c": Shape("c", "unclosed think at the budget", UNCLOSED_THINK, 12),
    "d": Shape("d", "answer only in reasoning (stop inside the block)", REASONING_ONLY, 64),
    "d2": Shape(
        "d2", "answer only in reasoning (block closed, nothing after)", REASONING_ONLY_CLOSED, 64
    ),
    "e": Shape("e", "<tool_call> JSON written as text", TEXT_TOOL_CALL, 96),
}

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city name."}},
                "required": ["city"],
            },
        },
    }
]

STREAM_OPTIONS = {"stream_options": {"include_usage": True}}


def user_messages(question: str = QUESTION) -> list[dict[str, Any]]:
    return [{"role": "user", "content": question}]


def chat_body(
    model: str,
    *,
    grammar: str | None = None,
    max_tokens: int = 64,
    stream: bool = False,
    messages: Sequence[Mapping[str, Any]] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A /v1/chat/completions body; streamed bodies ask for the usage chunk."""
    body: dict[str, Any] = {
        "model": model,
        "messages": list(messages) if messages is not None else user_messages(),
        "max_tokens": max_tokens,
        "temperature": 0,
    }
    if grammar is not None:
        body["grammar"] = grammar
    if stream:
        body["stream"] = True
        body.update(STREAM_OPTIONS)
    if extra:
        body.update(extra)
    return body


def shape_body(
    model: str, shape: Shape, *, stream: bool = False, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    return chat_body(
        model, grammar=shape.grammar, max_tokens=shape.max_tokens, stream=stream, extra=extra
    )


def tool_call_body(model: str, *, stream: bool = False) -> dict[str, Any]:
    """Real tool calls (Hermes template): tools, tool_choice "required", a `<tool_call>` prefill."""
    messages = [
        {"role": "user", "content": "What is the weather in Paris? Use the tool."},
        {"role": "assistant", "content": "<tool_call>\n"},
    ]
    return chat_body(
        model,
        max_tokens=96,
        stream=stream,
        messages=messages,
        extra={"tools": TOOLS, "tool_choice": "required"},
    )


@dataclass
class RawReply:
    """A non-streamed reply as it came over the wire."""

    status: int
    headers: dict[str, str]
    body: Any


@dataclass
class StreamReply:
    """A streamed reply: every SSE data line, parsed, in order."""

    status: int
    headers: dict[str, str]
    chunks: list[Any] = field(default_factory=list)
    raw_lines: list[str] = field(default_factory=list)
    done: bool = False  # saw `data: [DONE]`
    error_body: Any = None  # the JSON body when the status is not 200


def post_chat(
    base_url: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> RawReply:
    resp = httpx.post(
        f"{base_url}/chat/completions",
        json=dict(body),
        headers=dict(headers or {}),
        timeout=timeout,
        trust_env=False,  # loopback only: no proxy from the environment
    )
    try:
        parsed: Any = resp.json()
    except ValueError:
        parsed = resp.text
    return RawReply(resp.status_code, dict(resp.headers), parsed)


def stream_chat(
    base_url: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> StreamReply:
    with httpx.stream(
        "POST",
        f"{base_url}/chat/completions",
        json=dict(body),
        headers=dict(headers or {}),
        timeout=timeout,
        trust_env=False,
    ) as resp:
        out = StreamReply(resp.status_code, dict(resp.headers))
        if resp.status_code != 200:
            resp.read()
            try:
                out.error_body = resp.json()
            except ValueError:
                out.error_body = resp.text
            return out
        for line in resp.iter_lines():
            out.raw_lines.append(line)
            if not line.startswith("data:"):
                continue
            data = line[len("data:") :].strip()
            if data == "[DONE]":
                out.done = True
                continue
            out.chunks.append(json.loads(data))
    return out


@dataclass
class Assembled:
    """What the deltas of a stream add up to."""

    content: str | None
    reasoning_content: str | None
    tool_calls: list[dict[str, Any]]
    finish_reason: str | None
    usage: dict[str, Any] | None
    content_deltas: list[str]
    reasoning_deltas: list[str]


def assemble(chunks: Sequence[Mapping[str, Any]]) -> Assembled:
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: dict[str, Any] | None = None
    for chunk in chunks:
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                content.append(delta["content"])
            if delta.get("reasoning_content"):
                reasoning.append(delta["reasoning_content"])
            for tc in delta.get("tool_calls") or []:
                slot = calls.setdefault(
                    tc.get("index", 0), {"id": None, "name": "", "arguments": ""}
                )
                if tc.get("id"):
                    slot["id"] = tc["id"]
                fn = tc.get("function") or {}
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
    return Assembled(
        "".join(content) if content else None,
        "".join(reasoning) if reasoning else None,
        [calls[i] for i in sorted(calls)],
        finish,
        usage,
        content,
        reasoning,
    )


def message_of(reply: RawReply) -> dict[str, Any]:
    """choices[0].message of a 200 reply."""
    return dict(reply.body["choices"][0]["message"])
