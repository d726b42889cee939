"""The Messages wire from the server's side, for the local servers (demo, tests, benchmarks).

`chat_request` turns a Messages request into the chat body a chat-speaking persona
answers (as llama-server converts one; `system` as a string or text blocks, a system turn
inside `messages` kept where it is); `message_object` and `message_events` turn that
chat.completion into the Messages reply and the event stream a server sends for it, and
`error_body` a chat error into Anthropic's. A thinking block's signature is a digest of
its text (`signature_of`), so a server can tell a replayed block that was changed
(`bad_signature`). `rig_nb.wire.messages` reads both back into the same Reply.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from ..text import REASONING_FIELDS, text_of

__all__ = [
    "bad_signature",
    "chat_request",
    "error_body",
    "message_events",
    "message_object",
    "signature_of",
    "sse_event",
]

_MESSAGES_ONLY = frozenset(
    {"system", "messages", "thinking", "tool_choice", "tools", "stream", "stop_sequences"}
)
_STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}
# Chat error types as Anthropic names them (the rest keep their own).
_ERROR_TYPES = {"not_found_error": "not_found_error", "server_error": "api_error"}


def signature_of(thinking: str) -> str:
    """The demo's signature of a thinking block: a digest of its text."""
    return "sig-" + hashlib.sha256(thinking.encode("utf-8", "replace")).hexdigest()[:32]


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def bad_signature(body: Mapping[str, Any]) -> str:
    """Where a replayed thinking block's signature does not match its text ("" when all do
    or carry none)."""
    messages = body.get("messages")
    for m, message in enumerate(messages if isinstance(messages, list) else []):
        if not isinstance(message, dict):
            continue
        for b, block in enumerate(_blocks(message.get("content"))):
            if isinstance(block, dict) and block.get("type") == "thinking":
                text, signed = block.get("thinking"), block.get("signature")
                # An unsigned block (reasoning a server sent without one) is taken, as
                # llama-server takes it; a signature that does not match its text is not.
                if signed and (not isinstance(text, str) or signed != signature_of(text)):
                    return f"messages.{m}.content.{b}: Invalid `signature` in `thinking` block"
    return ""


def _system(value: Any) -> str:
    return value if isinstance(value, str) else text_of(value)


def _assistant(blocks: list[Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    text: list[str] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            text.append(str(block.get("text", "")))
        elif kind == "thinking":
            # Under both input names chat servers read (llama.cpp and DeepSeek, vLLM).
            message["reasoning_content"] = message["reasoning"] = block.get("thinking", "")
        elif kind == "tool_use":
            given = block.get("input")
            arguments = given if isinstance(given, str) else json.dumps(given)
            call = {
                "id": block.get("id"),
                "type": "function",
                "function": {"name": block.get("name"), "arguments": arguments},
            }
            message.setdefault("tool_calls", []).append(call)
        elif kind != "redacted_thinking":
            raise ValueError(f"assistant content block type {str(kind)[:40]!r} is not supported")
    message["content"] = "".join(text)
    return message


def _user(blocks: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    text: list[str] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            text.append(str(block.get("text", "")))
        elif kind == "tool_result":
            content = block.get("content")
            result = content if isinstance(content, str) else text_of(content)
            call_id = block.get("tool_use_id")
            out.append({"role": "tool", "tool_call_id": call_id, "content": result})
        else:
            raise ValueError(f"user content block type {str(kind)[:40]!r} is not supported")
    if text:
        out.append({"role": "user", "content": "".join(text)})
    return out


def chat_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The chat body for a Messages request: system first, tool results as tool messages,
    thinking blocks as the reasoning of their turn, tools and tool_choice in chat's shape
    (`disable_parallel_tool_use` as `parallel_tool_calls`), `stop_sequences` as `stop`,
    the thinking switch as chat_template_kwargs. ValueError for what cannot be read."""
    turns = body.get("messages")
    if not isinstance(turns, list) or not turns:
        raise ValueError("messages: field required (a non-empty list)")
    messages: list[dict[str, Any]] = []
    system = _system(body.get("system"))
    if system:
        messages.append({"role": "system", "content": system})
    for turn in turns:
        if not isinstance(turn, dict) or turn.get("role") not in ("user", "assistant", "system"):
            raise ValueError("every message must be an object with role user, assistant or system")
        blocks = _blocks(turn.get("content"))
        if turn["role"] == "system":
            # A system turn inside the conversation (Anthropic takes one since 2026, and so
            # does vLLM from 0.23: vllm-project/vllm#44000): a chat system message there.
            messages.append({"role": "system", "content": _system(turn.get("content"))})
        elif turn["role"] == "assistant":
            messages.append(_assistant(blocks))
        else:
            messages.extend(_user(blocks))
    chat: dict[str, Any] = {k: v for k, v in body.items() if k not in _MESSAGES_ONLY}
    chat["messages"] = messages
    if isinstance(body.get("tools"), list):
        chat["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.get("name"),
                    "description": t.get("description", ""),
                    "parameters": t.get("input_schema", {}),
                },
            }
            for t in body["tools"]
            if isinstance(t, dict)
        ]
    choice = body.get("tool_choice")
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "tool" and isinstance(choice, dict):
        chat["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    elif kind in ("auto", "none"):
        chat["tool_choice"] = kind
    elif kind == "any":
        chat["tool_choice"] = "required"
    if isinstance(choice, dict) and isinstance(choice.get("disable_parallel_tool_use"), bool):
        chat["parallel_tool_calls"] = not choice["disable_parallel_tool_use"]
    if "stop_sequences" in body:
        chat["stop"] = body["stop_sequences"]
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") in ("enabled", "disabled"):
        on = thinking["type"] == "enabled"
        chat["chat_template_kwargs"] = {"enable_thinking": on, "thinking": on}
    if body.get("stream") is True:
        chat["stream"] = True
        chat["stream_options"] = {"include_usage": True}
    return chat


def _usage(usage: Any, timings: Any = None) -> dict[str, Any]:
    """Chat usage as Anthropic's: `input_tokens` without the cached part, which is
    `cache_read_input_tokens` (from the usage details, or llama.cpp's `timings.cache_n`);
    only the counts chat gave (a reply without usage has none)."""
    if not isinstance(usage, dict):
        return {}
    out: dict[str, Any] = {}
    prompt = usage.get("prompt_tokens")
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if cached is None and isinstance(timings, dict):
        cached = timings.get("cache_n")
    if isinstance(prompt, int):
        out["input_tokens"] = prompt
        if isinstance(cached, int):
            out["input_tokens"] = max(prompt - cached, 0)
            out["cache_read_input_tokens"] = cached
    if "completion_tokens" in usage:
        out["output_tokens"] = usage["completion_tokens"]
    return out


def _input(arguments: Any) -> Any:
    """A call's arguments as tool_use `input`: the object, or the text as the model wrote it
    when it is not one (a persona's broken arguments stay broken on this wire too)."""
    if not isinstance(arguments, str):
        return arguments if isinstance(arguments, dict) else {}
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, RecursionError):
        return arguments
    return value if isinstance(value, dict) else arguments


def _content(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for name in REASONING_FIELDS:
        text = text_of(message.get(name))
        if text:
            blocks.append({"type": "thinking", "thinking": text, "signature": signature_of(text)})
            break
    text = text_of(message.get("content"))
    if text:
        blocks.append({"type": "text", "text": text})
    for n, call in enumerate(message.get("tool_calls") or []):
        fn = call.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id") or f"toolu_{n}",
                "name": fn.get("name") or "",
                "input": _input(fn.get("arguments")),
            }
        )
    return blocks


def message_object(chat: Mapping[str, Any]) -> dict[str, Any]:
    """The Messages reply for a chat.completion body (choice 0)."""
    mid = str(chat.get("id", "demo")).removeprefix("chatcmpl-") or "demo"
    choice = (chat.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    reason = choice.get("finish_reason")
    return {
        "id": f"msg_{mid}",
        "type": "message",
        "role": "assistant",
        "model": chat.get("model", ""),
        "content": _content(message),
        "stop_reason": _STOP.get(reason, "end_turn") if isinstance(reason, str) else "end_turn",
        "stop_sequence": None,
        "usage": _usage(chat.get("usage"), chat.get("timings")),
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _deltas(block: Mapping[str, Any], index: int, size: int) -> list[dict[str, Any]]:
    kind = block["type"]
    if kind == "text":
        pieces = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], size)]
    elif kind == "thinking":
        thought = _pieces(block["thinking"], size)
        pieces = [{"type": "thinking_delta", "thinking": p} for p in thought]
        pieces.append({"type": "signature_delta", "signature": block["signature"]})
    else:
        given = block["input"]
        text = given if isinstance(given, str) else json.dumps(given)
        pieces = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(text, size)]
    return [{"type": "content_block_delta", "index": index, "delta": d} for d in pieces]


def message_events(chat: Mapping[str, Any], *, piece_chars: int = 16) -> list[dict[str, Any]]:
    """The Messages events a server streams for a chat.completion body: message_start, each
    block's start, deltas and stop, message_delta (stop reason, usage), message_stop."""
    whole = message_object(chat)
    usage = whole["usage"]
    head = {**whole, "content": [], "stop_reason": None, "usage": dict(usage)}
    if "output_tokens" in usage:
        head["usage"]["output_tokens"] = 1
    events: list[dict[str, Any]] = [{"type": "message_start", "message": head}]
    for index, block in enumerate(whole["content"]):
        empty = {"text": {"text": ""}, "thinking": {"thinking": "", "signature": ""}}
        start = {**block, **empty.get(block["type"], {"input": {}})}
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events += _deltas(block, index, piece_chars)
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
            "usage": {k: v for k, v in usage.items() if k == "output_tokens"},
        }
    )
    events.append({"type": "message_stop"})
    return events


def sse_event(event: Mapping[str, Any]) -> bytes:
    """One event as a Messages server frames it: `event: <type>` then its data."""
    return f"event: {event.get('type')}\ndata: {json.dumps(event)}\n\n".encode()


def error_body(chat_error: Any, status: int) -> dict[str, Any]:
    """A chat error body (`{"error": {"message", "type"}}`) as Anthropic's error body."""
    error = chat_error.get("error") if isinstance(chat_error, Mapping) else None
    message = error.get("message") if isinstance(error, Mapping) else error
    kind = error.get("type") if isinstance(error, Mapping) else None
    if not isinstance(kind, str) or not kind:
        kind = "invalid_request_error" if 400 <= status < 500 else "api_error"
    return {
        "type": "error",
        "error": {
            "type": _ERROR_TYPES.get(kind, kind),
            "message": message if isinstance(message, str) else json.dumps(chat_error)[:500],
        },
    }
