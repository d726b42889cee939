"""The Responses wire (`/responses`): a chat-shaped body as a Responses request, and a
Responses reply or event stream as the same `Reply` the chat wire gives.

The loop builds chat bodies (`chat.chat_body`) and reads `Reply`; this module is the
whole translation, so the loop, the trace and every ending are the same over both
wires. Requests: `input` items (`message`, `function_call`, `function_call_output`,
and `reasoning` items with `reasoning_text` content for replayed reasoning),
`instructions` for the first system prompt, `store: false`, `max_output_tokens`, flat
function tools. Replies: `output` items (`message`, `reasoning`, `function_call`);
`status: "incomplete"` for the output budget is finish "length". A stream is read
into the chat `StreamAssembler` the loop handed over, so what arrived before a
failure is kept where the loop looks for it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import BackendError
from .chat import REASONING_FIELDS, Reply, clean, server_timings, text_of, with_timings
from .sse import DONE, json_events
from .stream import StreamAssembler

__all__ = [
    "NO_OUTPUT",
    "RESPONSES_FIELDS",
    "parse_response",
    "parse_response_body",
    "read_response_stream",
    "response_usage",
    "responses_body",
]

NO_OUTPUT = "ai backend: reply has no output"
# What goes to the SDK's `responses.create` by name; the rest goes as extra_body, as built:
# the SDK's transform of typed `input` items costs more than the whole round (measured).
RESPONSES_FIELDS = frozenset({"model", "max_output_tokens", "store", "temperature"})
# Reasoning an echoed assistant turn may carry, in the order the replay writes them.
_REPLAY_FIELDS = (*REASONING_FIELDS, "reasoning_text", "summary_text")
_CHAT_ONLY = frozenset({"messages", "max_tokens", "max_completion_tokens", "stream_options"})
_KNOWN_ITEMS = frozenset({"message", "reasoning", "function_call"})
_TERMINAL = {"response.completed", "response.incomplete"}


def _message_text(message: Mapping[str, Any]) -> str:
    return text_of(message.get("content"))


def _reasoning_item(text: str) -> dict[str, Any]:
    # llama-server requires `summary` (a list) and non-empty `content` on an input reasoning item.
    return {
        "type": "reasoning",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": text}],
    }


def _input_items(messages: Iterable[Mapping[str, Any]]) -> tuple[str | None, list[Any]]:
    """(instructions, input items) for chat messages; the first system message is the
    instructions, later ones stay messages."""
    instructions: str | None = None
    items: list[Any] = []
    for m in messages:
        role = m.get("role")
        if role == "system" and instructions is None and not items:
            instructions = _message_text(m)
        elif role == "assistant":
            for name in _REPLAY_FIELDS:
                reasoning = text_of(m.get(name))
                if reasoning:
                    items.append(_reasoning_item(reasoning))
                    break
            content = _message_text(m)
            if content:
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": content}],
                    }
                )
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.get("id", ""),
                        "name": fn.get("name", ""),
                        "arguments": fn.get("arguments", ""),
                    }
                )
        elif role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": m.get("tool_call_id", ""),
                    "output": _message_text(m),
                }
            )
        else:
            items.append({"type": "message", "role": role, "content": _message_text(m)})
    return instructions, items


def _tool(spec: Mapping[str, Any]) -> Any:
    fn = spec.get("function")
    if spec.get("type") != "function" or not isinstance(fn, Mapping):
        return dict(spec)
    return {"type": "function", **fn}


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        return {"type": "function", "name": choice["function"].get("name")}
    return choice


def _text_format(response_format: Mapping[str, Any]) -> dict[str, Any]:
    """Chat's `response_format` as the Responses API's `text.format` (json_schema flattened)."""
    schema = response_format.get("json_schema")
    if response_format.get("type") == "json_schema" and isinstance(schema, Mapping):
        return {"type": "json_schema", **schema}
    return dict(response_format)


def responses_body(chat: Mapping[str, Any]) -> dict[str, Any]:
    """The Responses request for a chat-shaped request body (extra fields passed as they are;
    `reasoning_effort` becomes `reasoning.effort` unless the body sets `reasoning`).

    `response_format` goes out as the API's `text.format` too, unless the body sets `text`:
    vLLM applies the one, llama-server's /v1/responses (which hands the body on to its chat
    route) the other.
    """
    instructions, items = _input_items(chat.get("messages") or [])
    body: dict[str, Any] = {"model": chat.get("model"), "input": items, "store": False}
    if instructions is not None:
        body["instructions"] = instructions
    budget = chat.get("max_tokens", chat.get("max_completion_tokens"))
    if budget is not None:
        body["max_output_tokens"] = budget
    if "tools" in chat:
        body["tools"] = [_tool(t) for t in chat["tools"]]
    if "tool_choice" in chat:
        body["tool_choice"] = _tool_choice(chat["tool_choice"])
    for key, value in chat.items():
        if key in _CHAT_ONLY or key in body or key in ("tools", "tool_choice"):
            continue
        if key == "reasoning_effort" and "reasoning" not in chat:
            body["reasoning"] = {"effort": value}
            continue
        if key == "response_format" and "text" not in chat and isinstance(value, Mapping):
            body["text"] = {"format": _text_format(value)}
        body[key] = value
    return body


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def response_usage(raw: Any) -> dict[str, int]:
    """Responses usage in the chat names the trace keeps (ints only)."""
    usage: dict[str, int] = {}
    if not isinstance(raw, dict):
        return usage
    for ours, theirs in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")):
        value = _int(raw.get(theirs))
        if value is not None:
            usage[ours] = value
    for holder, key in (
        ("output_tokens_details", "reasoning_tokens"),
        ("input_tokens_details", "cached_tokens"),
        ("prompt_tokens_details", "cached_tokens"),
    ):
        details = raw.get(holder)
        value = _int(details.get(key)) if isinstance(details, dict) else None
        if value is not None and key not in usage:
            usage[key] = value
    cached = _int(raw.get("cache_read_input_tokens"))
    if cached is not None and "cached_tokens" not in usage:
        usage["cached_tokens"] = cached
    return usage


def _error_text(error: Any) -> str:
    detail = error.get("message") if isinstance(error, dict) else error
    return detail if isinstance(detail, str) else ""


def _short(value: Any) -> str:
    return clean(value)[:40] if isinstance(value, str) else type(value).__name__


def _finish(response: Mapping[str, Any], calls: bool) -> str:
    """The chat finish_reason for a Responses status; BackendError for failed or unfinished."""
    status = response.get("status", "completed")
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        if reason == "max_output_tokens" or not isinstance(reason, str) or not reason:
            return "length"
        return clean(reason)
    if status == "failed":
        raise BackendError(
            f"ai backend: response failed: {_error_text(response.get('error'))}", kind="reply"
        )
    if status not in ("completed", None):
        raise BackendError(
            f"ai backend: response not finished (status {_short(status)})", kind="reply"
        )
    return "tool_calls" if calls else "stop"


def _call(item: Mapping[str, Any]) -> dict[str, Any]:
    call_id = item.get("call_id")
    if not isinstance(call_id, str):
        raise BackendError("ai backend: reply has a function_call without call_id", kind="reply")
    fn: dict[str, Any] = {"arguments": item.get("arguments")}
    if isinstance(item.get("name"), str):
        fn["name"] = item["name"]
    return {"id": call_id, "type": "function", "function": fn}


def _reasoning_of(item: Mapping[str, Any]) -> tuple[str, str]:
    text = text_of(item.get("content"))
    if text:
        return text, "reasoning_text"
    text = text_of(item.get("summary"))
    return (text, "summary_text") if text else ("", "")


def _unknown_item(kind: Any) -> BackendError:
    return BackendError(
        f"ai backend: reply has an output item of unknown type {_short(kind)!r}", kind="reply"
    )


def parse_response(body: Any) -> Reply:
    """A Responses object as the Reply the loop reads (minimal objects are fine)."""
    if not isinstance(body, dict):
        raise BackendError("ai backend: reply is not a JSON object", kind="reply")
    output = body.get("output")
    if body.get("status") == "failed":
        _finish(body, False)
    if body.get("error") and not output:
        raise BackendError(
            f"ai backend: error in reply: {_error_text(body['error'])}", kind="reply"
        )
    if not isinstance(output, list):
        raise BackendError(NO_OUTPUT, kind="reply")
    content: list[str] = []
    reasoning: list[str] = []
    field = ""
    calls: list[Any] = []
    for item in output:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind not in _KNOWN_ITEMS or not isinstance(item, dict):
            raise _unknown_item(kind)
        if kind == "message":
            content.append(_output_text(item))
        elif kind == "reasoning":
            text, name = _reasoning_of(item)
            if text:
                reasoning.append(text)
                field = field or name
        else:
            calls.append(_call(item))
    fingerprint = body.get("system_fingerprint")
    return Reply(
        content="".join(content),
        reasoning="".join(reasoning),
        reasoning_field=field,
        finish_reason=_finish(body, bool(calls)),
        tool_calls=calls,
        usage=with_timings(response_usage(body.get("usage")), server_timings(body)),
        server_timings=server_timings(body),
        top_level=frozenset(k for k in body if isinstance(k, str)),
        system_fingerprint=fingerprint if isinstance(fingerprint, str) else "",
    )


def _output_text(item: Mapping[str, Any]) -> str:
    parts = item.get("content")
    if isinstance(parts, str):
        return clean(parts)
    if not isinstance(parts, list):
        return ""
    return text_of([p for p in parts if isinstance(p, dict) and p.get("type") != "refusal"])


def parse_response_body(content: bytes) -> Reply:
    """A Responses object as received; BackendError (reply) when it is not JSON."""
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):
        raise BackendError("ai backend: reply is not valid JSON", kind="reply") from None
    return parse_response(data)


def _delta(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


class _ResponsesReader:
    """Feeds the events of one Responses stream to a chat StreamAssembler, as chat deltas."""

    def __init__(self, assembler: StreamAssembler) -> None:
        self.assembler = assembler
        self.calls: dict[Any, int] = {}  # item id or output_index -> call index
        self.call_ids: dict[int, bool] = {}  # call index -> has a call_id
        self.args_seen: set[int] = set()
        self.deltas: set[str] = set()  # "message", "reasoning": text that arrived in deltas
        self.ended = False

    def _feed(self, chunk: dict[str, Any]) -> bool:
        return self.assembler.feed(chunk)

    def _reasoning(self, text: Any, field: str) -> bool:
        if not isinstance(text, str) or not text:
            return False
        # The chat assembler keeps the first field name it is given: name ours first.
        self.assembler.reasoning_field = self.assembler.reasoning_field or field
        return self._feed(_delta({"reasoning_content": text}))

    def _call_index(self, event: Mapping[str, Any], item: Mapping[str, Any] | None) -> int:
        keys = [k for k in (event.get("item_id"), event.get("output_index")) if k is not None]
        if item is not None and item.get("id") is not None:
            keys.insert(0, item.get("id"))
        for key in keys:
            if isinstance(key, str | int) and key in self.calls:
                index = self.calls[key]
                break
        else:
            index = len(self.call_ids)
            self.call_ids[index] = False
        for key in keys:
            if isinstance(key, str | int):
                self.calls[key] = index
        return index

    def _call_fragment(self, index: int, item: Mapping[str, Any], args: Any) -> None:
        fragment: dict[str, Any] = {"index": index, "type": "function"}
        call_id = item.get("call_id")
        if isinstance(call_id, str):
            fragment["id"] = call_id
            self.call_ids[index] = True
        fn: dict[str, Any] = {}
        if isinstance(item.get("name"), str):
            fn["name"] = item["name"]
        if args is not None:
            fn["arguments"] = args
            self.args_seen.add(index)
        fragment["function"] = fn
        self._feed(_delta({"tool_calls": [fragment]}))

    def _item(self, event: Mapping[str, Any], done: bool) -> bool:
        item = event.get("item")
        kind = item.get("type") if isinstance(item, dict) else None
        if kind not in _KNOWN_ITEMS or not isinstance(item, dict):
            raise _unknown_item(kind)
        if kind == "function_call":
            index = self._call_index(event, item)
            args = item.get("arguments")
            take = args if (done and index not in self.args_seen and args) else None
            self._call_fragment(index, item, take)
            return False
        if not done or kind in self.deltas:
            return False
        # A server that sent no deltas for this item: its text comes whole at the end.
        if kind == "message":
            text = _output_text(item)
            return self._feed(_delta({"content": text})) if text else False
        text, field = _reasoning_of(item)
        return self._reasoning(text, field)

    def feed(self, event: Any) -> bool:
        """Take one decoded event; True when it carried text."""
        if not isinstance(event, dict):
            raise BackendError("ai backend: stream event is not a JSON object", kind="protocol")
        kind = event.get("type")
        if kind == "error":
            detail = _error_text(event.get("error", event))
            raise BackendError(f"ai backend: error in stream: {detail}", kind="reply")
        if self.ended and isinstance(kind, str) and kind.startswith("response.output"):
            raise BackendError(
                "ai backend: the stream sent output after its response ended", kind="protocol"
            )
        if kind == "response.output_text.delta":
            self.deltas.add("message")
            delta = event.get("delta")
            return self._feed(_delta({"content": delta})) if isinstance(delta, str) else False
        if kind in ("response.reasoning_text.delta", "response.reasoning_summary_text.delta"):
            self.deltas.add("reasoning")
            name = "reasoning_text" if kind == "response.reasoning_text.delta" else "summary_text"
            return self._reasoning(event.get("delta"), name)
        if kind == "response.function_call_arguments.delta":
            index = self._call_index(event, None)
            delta = event.get("delta")
            if isinstance(delta, str):
                self._call_fragment(index, {}, delta)
            return False
        if kind == "response.function_call_arguments.done":
            index = self._call_index(event, None)
            if index not in self.args_seen and isinstance(event.get("arguments"), str):
                self._call_fragment(index, {}, event["arguments"])
            return False
        if kind in ("response.output_item.added", "response.output_item.done"):
            return self._item(event, kind.endswith("done"))
        if kind in _TERMINAL or kind == "response.failed":
            return self._end(event)
        return False

    def _end(self, event: Mapping[str, Any]) -> bool:
        response = event.get("response")
        if not isinstance(response, dict):
            response = {}
        if event["type"] == "response.failed":
            response = {**response, "status": "failed"}
        elif event["type"] == "response.incomplete":
            response = {**response, "status": "incomplete"}
        a = self.assembler
        grew = False
        if not (a.content or a.reasoning or self.call_ids) and isinstance(
            response.get("output"), list
        ):
            # A server that streamed nothing but the finished response: read its output.
            whole = parse_response({**response, "status": "completed"})
            if whole.content:
                grew = self._feed(_delta({"content": whole.content}))
            if whole.reasoning:
                grew = self._reasoning(whole.reasoning, whole.reasoning_field) or grew
            for index, call in enumerate(whole.tool_calls):
                self.call_ids[index] = True
                self._feed(_delta({"tool_calls": [{"index": index, **call}]}))
        finish = _finish(response, bool(self.call_ids))
        if not all(self.call_ids.values()):
            raise BackendError(
                "ai backend: reply has a function_call without call_id", kind="reply"
            )
        final = _delta({}, finish)
        skip = ("choices", "usage", "error", "type")
        final.update({k: None for k in (*event, *response) if isinstance(k, str) and k not in skip})
        self._feed(final)
        a.usage = response_usage(response.get("usage"))
        a.timings = server_timings(response)
        self.ended = True
        return grew


def read_response_stream(
    chunks: Iterable[bytes],
    assembler: StreamAssembler,
    on_event: Callable[[bool], None] | None = None,
) -> Reply:
    """Feed each event of a Responses stream to `assembler` (as chat deltas) until the
    stream ends; `on_event(grew)` after each. The finished reply, or BackendError: `protocol`
    for a stream that ends before `response.completed` (or `incomplete`) or sends output
    after it, `reply` for an `error` event, `response.failed`, an unknown output item or a
    function_call without call_id. The assembler keeps what arrived."""
    reader = _ResponsesReader(assembler)
    for event in json_events(chunks):
        if event is DONE:
            break
        grew = reader.feed(event)
        if on_event is not None:
            on_event(grew)
    if not reader.ended:
        raise BackendError(
            "ai backend: the stream ended without response.completed", kind="protocol"
        )
    assembler.done = True
    return assembler.finish()
