"""The Responses wire (`/responses`): a chat-shaped body as a Responses request, and a
Responses reply or event stream as the same `Reply` the chat wire gives.

The loop builds chat bodies (`chat.chat_body`) and reads `Reply`; this module is the
whole translation, so the loop, the trace and every ending are the same over both
wires. Requests: `input` items (`message`, `function_call`, `function_call_output`,
and `reasoning` items with `reasoning_text` content for replayed reasoning),
`instructions` for the first system prompt, `store: false`, `max_output_tokens`, flat
function tools. Replies: `output` items (`message`, `reasoning`, `function_call`);
`status: "incomplete"` for the output budget is finish "length", for the content filter
finish "content_filter". A stream is read into output items told apart by
`output_index`, as the specification (and the openai SDK's own reader) does; its text
also goes to the chat `StreamAssembler` the loop handed over as it arrives, so a live
view grows and what arrived before a failure is kept where the loop looks for it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import BackendError
from .chat import REASONING_FIELDS, Reply, clean, text_of
from .sse import DONE, json_events
from .stream import StreamAssembler
from .utf16 import whole

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
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


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
    ):
        details = raw.get(holder)
        value = _int(details.get(key)) if isinstance(details, dict) else None
        if value is not None:
            usage[key] = value
    return usage


def _error_text(error: Any) -> str:
    detail = error.get("message") if isinstance(error, dict) else error
    return detail if isinstance(detail, str) else ""


def _short(value: Any) -> str:
    # Not cut here: the boundary redacts the key from the message first, then cuts it.
    return clean(value) if isinstance(value, str) else type(value).__name__


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
    source = ""
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
                source = source or name
        else:
            calls.append(_call(item))
    fingerprint = body.get("system_fingerprint")
    return Reply(
        content="".join(content),
        reasoning="".join(reasoning),
        reasoning_field=source,
        finish_reason=_finish(body, bool(calls)),
        tool_calls=calls,
        usage=response_usage(body.get("usage")),
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


# Events that carry part of one output item: the item's type, and the name faults use.
_PARTS = {
    "response.output_text.delta": ("message", "output_text.delta"),
    "response.reasoning_text.delta": ("reasoning", "reasoning_text.delta"),
    "response.reasoning_summary_text.delta": ("reasoning", "reasoning_summary_text.delta"),
    "response.function_call_arguments.delta": ("function_call", "function_call_arguments.delta"),
    "response.function_call_arguments.done": ("function_call", "function_call_arguments.done"),
}


def _joined(parts: list[str]) -> str:
    return whole("".join(parts))


@dataclass
class _Item:
    """One output item of a stream as its events built it; items are told apart by
    output_index, never by id."""

    index: int
    kind: str
    added: bool = False
    done: bool = False
    text: list[str] = field(default_factory=list)  # output_text or reasoning_text deltas
    summary: list[str] = field(default_factory=list)  # reasoning_summary_text deltas
    done_item: dict[str, Any] | None = None  # the item as output_item.done sent it
    added_item: dict[str, Any] | None = None  # the item as output_item.added sent it
    call_id: Any = None
    name: Any = None
    arguments: list[str] = field(default_factory=list)
    final: Any = None  # whole arguments from a `.done`: they replace the deltas
    arguments_done: bool = False
    held: str = ""  # a high surrogate kept from the live text until its low half comes

    def take(self, item: Mapping[str, Any]) -> None:
        for name in ("call_id", "name"):
            if isinstance(item.get(name), str) and item[name]:
                setattr(self, name, item[name])

    # The whole text of a done item wins, then the deltas, then what the added item held
    # (an item a stream never finished, as in `response.incomplete`).

    def message(self) -> str:
        done, added = self.done_item or {}, self.added_item or {}
        return _output_text(done) or _joined(self.text) or _output_text(added)

    def reasoning(self) -> tuple[str, str]:
        done, added = self.done_item or {}, self.added_item or {}
        parts = (
            ("content", self.text, "reasoning_text"),
            ("summary", self.summary, "summary_text"),
        )
        for name, deltas, source in parts:
            text = text_of(done.get(name)) or _joined(deltas) or text_of(added.get(name))
            if text:
                return text, source
        return "", ""

    def call(self) -> dict[str, Any]:
        arguments: Any = self.final
        if arguments is None:
            arguments = _joined(self.arguments) or (self.added_item or {}).get("arguments") or ""
        if isinstance(arguments, str):
            arguments = whole(arguments)
        return _call({"call_id": self.call_id, "name": self.name, "arguments": arguments})


class _ResponsesReader:
    """Reads the events of one Responses stream into output items by output_index; the
    text also goes to the chat StreamAssembler as it comes, so a live view grows and a
    failed stream keeps what arrived. What the grammar does not allow and the reader
    forgives is recorded with `assembler.fault`."""

    def __init__(self, assembler: StreamAssembler) -> None:
        self.assembler = assembler
        self.items: dict[int, _Item] = {}
        self.ids: dict[str, int] = {}  # item id -> output_index (the last item of that id)
        self.anonymous: dict[str, int] = {}  # item type -> index, for events naming neither
        self.top = -1  # the highest output_index so far
        self.reply: Reply | None = None  # set by the terminal event

    def _new(self, index: int, kind: str) -> _Item:
        item = self.items[index] = _Item(index, kind)
        self.top = max(self.top, index)
        return item

    def _part_of(self, event: Mapping[str, Any], kind: str, what: str) -> _Item | None:
        """The open item an event's part belongs to; None (a fault) when it cannot take it."""
        index = _int(event.get("output_index"))
        item_id = event.get("item_id")
        if index is None:
            index = self.ids.get(item_id) if isinstance(item_id, str) else self.anonymous.get(kind)
        if index is None or index not in self.items:
            index = self.top + 1 if index is None else index
            self.assembler.fault(f"{what} for output_index {index}, never added")
            self._new(index, kind)
            if isinstance(item_id, str):
                self.ids.setdefault(item_id, index)
            else:
                self.anonymous[kind] = index
        item = self.items[index]
        if item.kind != kind:
            self.assembler.fault(f"{what} for output_index {index}, a {item.kind} item")
            return None
        if item.done:
            self.assembler.fault(f"{what} after output_index {index} was done")
            return None
        return item

    def _live(self, item: _Item, delta: str, where: str) -> bool:
        text = item.held + delta
        item.held = ""
        if text and "\ud800" <= text[-1] <= "\udbff":
            item.held, text = text[-1], text[:-1]
        return self._show(whole(text), where)

    def _show(self, text: str, where: str) -> bool:
        """Show `text` live: as content (`where` "content") or as reasoning from that part."""
        if not text:
            return False
        if where == "content":
            return self.assembler.feed(_delta({"content": text}))
        # The chat assembler keeps the first field name it is given: name ours first.
        self.assembler.reasoning_field = self.assembler.reasoning_field or where
        return self.assembler.feed(_delta({"reasoning_content": text}))

    def _item_event(self, event: Mapping[str, Any], done: bool) -> bool:
        item = event.get("item")
        kind = item.get("type") if isinstance(item, dict) else None
        if kind not in _KNOWN_ITEMS or not isinstance(item, dict):
            raise _unknown_item(kind)
        what = "output_item.done" if done else "output_item.added"
        item_id = item.get("id")
        index = _int(event.get("output_index"))
        if index is None:
            self.assembler.fault(f"{what} without output_index")
            known = self.ids.get(item_id) if done and isinstance(item_id, str) else None
            index = self.top + 1 if known is None else known
        slot = self.items.get(index)
        if slot is None:
            if done:
                self.assembler.fault(f"{what} for output_index {index}, never added")
            elif index < self.top:
                self.assembler.fault(f"output_index {index} out of order")
            slot = self._new(index, kind)
        elif slot.done or (slot.added and not done):
            self.assembler.fault(f"{what} for output_index {index} again")
        slot.kind, slot.added = kind, True
        if isinstance(item_id, str):
            self.ids[item_id] = index
        slot.take(item)
        if not done:
            slot.added_item = item
            return False
        slot.done, slot.done_item = True, item
        if kind == "function_call":
            if item.get("arguments") not in (None, ""):
                slot.final = item["arguments"]
            return False
        if slot.text or slot.summary:
            return False
        # A server that sent no deltas for this item: its text comes whole at the end.
        if kind == "message":
            return self._show(_output_text(item), "content")
        return self._show(*_reasoning_of(item))

    def feed(self, event: Any) -> bool:
        """Take one decoded event; True when it carried text."""
        if not isinstance(event, dict):
            raise BackendError("ai backend: stream event is not a JSON object", kind="protocol")
        kind = event.get("type")
        if kind == "error":
            detail = _error_text(event.get("error", event))
            raise BackendError(f"ai backend: error in stream: {detail}", kind="reply")
        if kind in ("response.output_item.added", "response.output_item.done"):
            return self._item_event(event, kind.endswith("done"))
        if kind in _TERMINAL:
            return self._end(event)
        part = _PARTS.get(kind) if isinstance(kind, str) else None
        item = self._part_of(event, *part) if part is not None else None
        if item is None:
            return False
        if kind == "response.function_call_arguments.done":
            if event.get("arguments") not in (None, ""):
                item.final = event["arguments"]
            item.arguments_done = True
            return False
        delta = event.get("delta")
        if not isinstance(delta, str):
            return False
        if kind == "response.function_call_arguments.delta":
            if item.arguments_done:
                self.assembler.fault(
                    f"function_call_arguments.delta after its .done (output_index {item.index})"
                )
            else:
                item.arguments.append(delta)
            return False
        if kind == "response.reasoning_summary_text.delta":
            item.summary.append(delta)
            # A reasoning item's content wins over its summary: a summary beside it is not shown.
            return False if item.text else self._live(item, delta, "summary_text")
        item.text.append(delta)
        where = "content" if kind == "response.output_text.delta" else "reasoning_text"
        return self._live(item, delta, where)

    def _end(self, event: Mapping[str, Any]) -> bool:
        response = event.get("response")
        if not isinstance(response, dict):
            response = {}
        if event["type"] == "response.failed":
            response = {**response, "status": "failed"}
        elif event["type"] == "response.incomplete":
            response = {**response, "status": "incomplete"}
        grew = False
        if not self.items and isinstance(response.get("output"), list):
            # A server that streamed nothing but the finished response: read its output.
            out = parse_response({**response, "status": "completed"})
            grew = self._show(out.content, "content")
            grew = self._show(out.reasoning, out.reasoning_field) or grew
            content, reasoning, source, calls = (
                out.content,
                out.reasoning,
                out.reasoning_field,
                out.tool_calls,
            )
            finish = _finish(response, bool(calls))
        else:
            items = [self.items[i] for i in sorted(self.items)]
            content = "".join(i.message() for i in items if i.kind == "message")
            parts = [i.reasoning() for i in items if i.kind == "reasoning"]
            reasoning = "".join(text for text, _ in parts)
            source = next((name for text, name in parts if text), "")
            called = [i for i in items if i.kind == "function_call"]
            finish = _finish(response, bool(called))
            calls = [i.call() for i in called]
        final = _delta({}, finish)
        skip = ("choices", "usage", "error", "type")
        final.update({k: None for k in (*event, *response) if isinstance(k, str) and k not in skip})
        a = self.assembler
        a.feed(final)
        a.usage = response_usage(response.get("usage"))
        a.done = True
        self.reply = dataclasses.replace(
            a.finish(),
            content=content,
            reasoning=reasoning,
            reasoning_field=source,
            tool_calls=calls,
        )
        return grew


def read_response_stream(
    chunks: Iterable[bytes],
    assembler: StreamAssembler,
    on_event: Callable[[bool], None] | None = None,
) -> Reply:
    """Feed each event of a Responses stream to `assembler` (as chat deltas) until its
    terminal event (`response.completed`, `incomplete` or `failed`), which ends the reply
    at once whatever the connection does after it; `on_event(grew)` after each. The
    finished reply, or BackendError: `protocol` for a stream that ends before a terminal
    event, `reply` for an `error` event, `response.failed`, an unknown output item or a
    function_call without call_id. The assembler keeps what arrived."""
    reader = _ResponsesReader(assembler)
    for event in json_events(chunks):
        if event is DONE:
            break
        grew = reader.feed(event)
        if on_event is not None:
            on_event(grew)
        if reader.reply is not None:
            return reader.reply
    raise BackendError("ai backend: the stream ended without response.completed", kind="protocol")
