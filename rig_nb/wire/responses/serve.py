"""The Responses wire from the server's side, for the local servers (demo, tests, benchmarks).

`chat_request` turns a Responses request into the chat body a chat-speaking persona
answers (as llama-server converts one); `response_object` and `response_events` turn
that chat.completion into the Responses object and the event stream a server sends
for it. `rig_nb.wire.responses` reads both back into the same Reply.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..text import REASONING_FIELDS, text_of

__all__ = ["chat_request", "response_events", "response_object"]

_RESPONSES_ONLY = frozenset({"input", "instructions", "max_output_tokens", "store", "reasoning"})


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return text_of(content)


def chat_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The chat body for a Responses request: items as messages (a reasoning item becomes
    `reasoning_content` and `reasoning` of the assistant turn it precedes), tools flattened
    back, the output budget as `max_tokens`. ValueError for what cannot be read."""
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    if not isinstance(items, list):
        raise ValueError("'input' must be a string or a list of items")
    messages: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str):
        messages.append({"role": "system", "content": body["instructions"]})
    for item in items:
        if not isinstance(item, dict):
            raise ValueError("every input item must be an object")
        kind = item.get("type", "message")
        last = messages[-1] if messages and messages[-1]["role"] == "assistant" else None
        if kind == "message" and item.get("role") != "assistant":
            messages.append({"role": item.get("role"), "content": _text(item.get("content"))})
        elif kind == "message":
            if last is not None and not last.get("content"):
                last["content"] = _text(item.get("content"))
            else:
                messages.append({"role": "assistant", "content": _text(item.get("content"))})
        elif kind == "reasoning":
            text = text_of(item.get("content")) or text_of(item.get("summary"))
            # Under both input names chat servers read (llama.cpp and DeepSeek, vLLM).
            messages.append(
                {"role": "assistant", "content": "", "reasoning_content": text, "reasoning": text}
            )
        elif kind == "function_call":
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": item.get("name"), "arguments": item.get("arguments")},
            }
            if last is None:
                last = {"role": "assistant", "content": ""}
                messages.append(last)
            last.setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": item.get("call_id"),
                    "content": _text(item.get("output")),
                }
            )
        else:
            raise ValueError(f"input item type {str(kind)[:40]!r} is not supported")
    chat: dict[str, Any] = {k: v for k, v in body.items() if k not in _RESPONSES_ONLY}
    chat["messages"] = messages
    if "max_output_tokens" in body:
        chat["max_tokens"] = body["max_output_tokens"]
    if isinstance(body.get("tools"), list):
        chat["tools"] = [
            {"type": "function", "function": {k: v for k, v in t.items() if k != "type"}}
            if isinstance(t, dict) and t.get("type") == "function"
            else t
            for t in body["tools"]
        ]
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "function" and "name" in choice:
        chat["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    if isinstance(body.get("reasoning"), dict) and "effort" in body["reasoning"]:
        chat.setdefault("reasoning_effort", body["reasoning"]["effort"])
    if body.get("stream") is True:
        chat["stream_options"] = {"include_usage": True}
    return chat


def _usage(usage: Any) -> dict[str, Any] | None:
    if not isinstance(usage, dict):
        return None
    out: dict[str, Any] = {}
    for ours, theirs in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")):
        if ours in usage:
            out[theirs] = usage[ours]
    if "total_tokens" in usage:
        out["total_tokens"] = usage["total_tokens"]
    for holder, key, theirs in (
        ("completion_tokens_details", "reasoning_tokens", "output_tokens_details"),
        ("prompt_tokens_details", "cached_tokens", "input_tokens_details"),
    ):
        details = usage.get(holder)
        if isinstance(details, dict) and key in details:
            out[theirs] = {key: details[key]}
    return out


def _items(message: Mapping[str, Any], rid: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for name in REASONING_FIELDS:
        text = text_of(message.get(name))
        if text:
            items.append(
                {
                    "id": f"rs_{rid}",
                    "type": "reasoning",
                    "summary": [],
                    "content": [{"type": "reasoning_text", "text": text}],
                    "status": "completed",
                }
            )
            break
    content = text_of(message.get("content"))
    if content:
        items.append(
            {
                "id": f"msg_{rid}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": content, "annotations": []}],
            }
        )
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        item: dict[str, Any] = {
            "id": f"fc_{call.get('id') or len(items)}",
            "type": "function_call",
            "status": "completed",
            "call_id": call.get("id") or "",
            "arguments": fn.get("arguments") if fn.get("arguments") is not None else "",
        }
        if fn.get("name") is not None:
            item["name"] = fn["name"]
        items.append(item)
    return items


# Chat finish reasons that are a Responses `status: "incomplete"`, and its reason.
_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def response_object(chat: Mapping[str, Any]) -> dict[str, Any]:
    """The Responses object for a chat.completion body (choice 0); finish "length" is
    `status: "incomplete"` for `max_output_tokens`, "content_filter" for `content_filter`."""
    rid = str(chat.get("id", "demo")).removeprefix("chatcmpl-") or "demo"
    choice = (chat.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    body: dict[str, Any] = {
        "id": f"resp_{rid}",
        "object": "response",
        "created_at": chat.get("created", 0),
        "model": chat.get("model", ""),
        "output": _items(message, rid),
        "status": "completed",
        "error": None,
        "incomplete_details": None,
    }
    reason = _INCOMPLETE.get(choice.get("finish_reason"))
    if reason is not None:
        body["status"] = "incomplete"
        body["incomplete_details"] = {"reason": reason}
    usage = _usage(chat.get("usage"))
    if usage is not None:
        body["usage"] = usage
    if isinstance(chat.get("timings"), dict):  # a llama.cpp server's own numbers, as given
        body["timings"] = chat["timings"]
    return body


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def response_events(chat: Mapping[str, Any], *, piece_chars: int = 16) -> list[dict[str, Any]]:
    """The Responses events a server streams for a chat.completion body: created, each
    item added, its deltas (reasoning_text, output_text in its content part,
    function_call_arguments) and done, then `response.completed` (or
    `response.incomplete`) with the whole object."""
    whole = response_object(chat)
    head = {k: v for k, v in whole.items() if k != "output" and k != "usage"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**head, "status": "in_progress", "output": []}}
    ]
    for index, item in enumerate(whole["output"]):
        base = {"output_index": index, "item_id": item["id"]}
        kind = item["type"]
        if kind == "function_call":
            added = {**item, "arguments": "", "status": "in_progress"}
        else:
            added = {**item, "content": [], "status": "in_progress"}
        events.append({"type": "response.output_item.added", "output_index": index, "item": added})
        if kind == "reasoning":
            text = item["content"][0]["text"]
            events += [
                {"type": "response.reasoning_text.delta", **base, "content_index": 0, "delta": p}
                for p in _pieces(text, piece_chars)
            ]
        elif kind == "message":
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            events.append(
                {"type": "response.content_part.added", **base, "content_index": 0, "part": part}
            )
            events += [
                {"type": "response.output_text.delta", **base, "content_index": 0, "delta": p}
                for p in _pieces(text, piece_chars)
            ]
            events.append(
                {"type": "response.output_text.done", **base, "content_index": 0, "text": text}
            )
            events.append(
                {
                    "type": "response.content_part.done",
                    **base,
                    "content_index": 0,
                    "part": {**part, "text": text},
                }
            )
        else:
            args = item["arguments"]
            parts = _pieces(args, piece_chars) if isinstance(args, str) else [args]
            events += [
                {"type": "response.function_call_arguments.delta", **base, "delta": p}
                for p in parts
            ]
            events.append(
                {"type": "response.function_call_arguments.done", **base, "arguments": args}
            )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    end = "response.incomplete" if whole["status"] == "incomplete" else "response.completed"
    events.append({"type": end, "response": whole})
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events
