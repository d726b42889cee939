"""The Responses wire's stream: events read into output items by `output_index`.

Calls are told apart by output_index (two items with one id stay two calls); the whole
arguments of `function_call_arguments.done` or `output_item.done` replace the deltas; a
reasoning item gives its `content` before its `summary`; a UTF-16 pair split across
deltas is one character; the terminal event ends the reply at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..base import Reply
from ..counts import server_timings, with_timings
from ..error_objects import event_type
from ..readers import FaultLog
from ..sse import read_to_final
from ..text import text_of
from ..turns import Call
from ..utf16 import whole
from .shapes import (
    _KNOWN_ITEMS,
    _TERMINAL,
    _call,
    _finish,
    _output_text,
    _reasoning_of,
    _unknown_item,
    parse_response,
    response_usage,
)

__all__ = ["ResponsesReader", "read_response_stream"]


# Events that carry part of one output item: the item's type, and the name faults use.
_PARTS = {
    "response.output_text.delta": ("message", "output_text.delta"),
    "response.reasoning_text.delta": ("reasoning", "reasoning_text.delta"),
    "response.reasoning_summary_text.delta": ("reasoning", "reasoning_summary_text.delta"),
    "response.function_call_arguments.delta": ("function_call", "function_call_arguments.delta"),
    "response.function_call_arguments.done": ("function_call", "function_call_arguments.done"),
}


def _int(value: Any) -> int | None:
    """An output_index as sent: an int (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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

    def call(self) -> Call:
        arguments: Any = self.final
        if arguments is None:
            arguments = _joined(self.arguments) or (self.added_item or {}).get("arguments") or ""
        if isinstance(arguments, str):
            arguments = whole(arguments)
        return _call({"call_id": self.call_id, "name": self.name, "arguments": arguments})


class ResponsesReader(FaultLog):
    """Reads the events of one Responses stream into output items by output_index (a
    `rig_nb.wire.Reader`). The text shown so far grows as it comes (`content`,
    `reasoning`), so a live view grows and a failed stream keeps what arrived; what the
    grammar does not allow and the reader forgives is recorded with `fault`."""

    def __init__(self) -> None:
        self.items: dict[int, _Item] = {}
        self.ids: dict[str, int] = {}  # item id -> output_index (the last item of that id)
        self.anonymous: dict[str, int] = {}  # item type -> index, for events naming neither
        self.top = -1  # the highest output_index so far
        self.final: Reply | None = None  # set by the terminal event
        self.done = False
        self.faults: list[str] = []
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._field = ""

    @property
    def content(self) -> str:
        if len(self._content) > 1:
            self._content = ["".join(self._content)]
        return self._content[0] if self._content else ""

    @property
    def reasoning(self) -> str:
        if len(self._reasoning) > 1:
            self._reasoning = ["".join(self._reasoning)]
        return self._reasoning[0] if self._reasoning else ""

    def reply(self) -> Reply:
        """The finished reply, or what arrived so far (a failed stream)."""
        if self.final is not None:
            return self.final
        reasoning = self.reasoning
        return Reply(
            content=self.content,
            reasoning=reasoning,
            reasoning_field=self._field if reasoning else "",
            stream_faults=list(self.faults),
        )

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
            self.fault(f"{what} for output_index {index}, never added")
            self._new(index, kind)
            if isinstance(item_id, str):
                self.ids.setdefault(item_id, index)
            else:
                self.anonymous[kind] = index
        item = self.items[index]
        if item.kind != kind:
            self.fault(f"{what} for output_index {index}, a {item.kind} item")
            return None
        if item.done:
            self.fault(f"{what} after output_index {index} was done")
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
            self._content.append(text)
        else:
            self._reasoning.append(text)
            self._field = self._field or where
        return True

    def _item_event(self, event: Mapping[str, Any], done: bool) -> bool:
        item = event.get("item")
        kind = item.get("type") if isinstance(item, dict) else None
        if kind not in _KNOWN_ITEMS or not isinstance(item, dict):
            raise _unknown_item(kind)
        what = "output_item.done" if done else "output_item.added"
        item_id = item.get("id")
        index = _int(event.get("output_index"))
        if index is None:
            self.fault(f"{what} without output_index")
            known = self.ids.get(item_id) if done and isinstance(item_id, str) else None
            index = self.top + 1 if known is None else known
        slot = self.items.get(index)
        if slot is None:
            if done:
                self.fault(f"{what} for output_index {index}, never added")
            elif index < self.top:
                self.fault(f"output_index {index} out of order")
            slot = self._new(index, kind)
        elif slot.done or (slot.added and not done):
            self.fault(f"{what} for output_index {index} again")
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
        kind = event_type(event)
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
                self.fault(
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
        skip = ("choices", "usage", "error", "type")
        timings = server_timings(response)
        self.done = True
        self.final = Reply(
            content=content,
            reasoning=reasoning,
            reasoning_field=source if reasoning else "",
            finish_reason=finish,
            tool_calls=calls,
            usage=with_timings(response_usage(response.get("usage")), timings),
            server_timings=timings,
            top_level=frozenset(
                k for k in (*event, *response) if isinstance(k, str) and k not in skip
            ),
            stream_faults=list(self.faults),
        )
        return grew


def read_response_stream(
    chunks: Iterable[bytes],
    reader: ResponsesReader,
    on_event: Callable[[bool], None] | None = None,
) -> Reply:
    """Feed each event of a Responses stream to `reader` until its terminal event
    (`response.completed`, `incomplete` or `failed`), which ends the reply at once whatever
    the connection does after it; `on_event(grew)` after each. The finished reply, or
    BackendError: `protocol` for a stream that ends before a terminal event, `reply` for
    an `error` event, `response.failed`, an unknown output item or a function_call without
    call_id. The reader keeps what arrived."""
    return read_to_final(chunks, reader, on_event, "response.completed")
