"""The Messages wire's stream: events read into content blocks by `index`.

`message_start` opens the message (its usage: the prompt side), `content_block_start`
(a text or thinking block's starting text comes before its deltas), `content_block_delta`
(`text_delta`, `thinking_delta`, `signature_delta`, which replaces,
`input_json_delta`, concatenated and read at the end: empty is `{}`) and
`content_block_stop` build the blocks, `message_delta` gives the stop reason and the
output usage, `message_stop` ends the reply at once whatever the connection does after
it; `ping` is skipped and an `error` event is a BackendError. What the grammar does not
allow and the reader forgives is a stream fault: a delta for a block never started opens
it (its text kept), a delta after its block stopped is dropped, a block started out of
order or while another is open is read by its index.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..base import Reply
from ..error_objects import event_type
from ..readers import FaultLog, quoted
from ..sse import read_to_final
from ..text import clean
from ..turns import Call
from ..utf16 import whole
from .shapes import KNOWN_BLOCKS, call_of, finish_of, unknown_block, usage_of

__all__ = ["MessagesReader", "read_message_stream"]

# The block a delta type belongs to (a delta for a block never started opens one of these).
_DELTAS = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "signature_delta": "thinking",
    "input_json_delta": "tool_use",
}
# Deltas that carry nothing rig_nb reads (citations of a text block): skipped, no fault.
_SKIPPED_DELTAS = frozenset({"citations_delta"})


@dataclass
class _Block:
    """One content block as its events built it."""

    index: int
    kind: str
    start: dict[str, Any] = field(default_factory=dict)  # content_block as started
    parts: list[str] = field(default_factory=list)  # text, thinking or partial_json deltas
    signature: str = ""
    stopped: bool = False
    started: bool = False  # its content_block_start came (else a delta opened it)

    def text(self) -> str:
        """The text its start gave, then its deltas (as the Anthropic SDK accumulates)."""
        key = "thinking" if self.kind == "thinking" else "text"
        value = self.start.get(key)
        started = value if isinstance(value, str) else ""
        return whole(started + "".join(self.parts)) if self.parts else clean(started)

    def arguments(self) -> str:
        """The call's arguments as JSON text: the deltas joined; without deltas the started
        block's `input` when it holds anything; `{}` when empty."""
        if self.parts:
            joined = whole("".join(self.parts))
            return joined if joined.strip() else "{}"
        given = self.start.get("input")
        if isinstance(given, str):
            return given or "{}"
        return json.dumps(given, ensure_ascii=False) if given else "{}"


def _index(event: Mapping[str, Any]) -> int | None:
    value = event.get("index")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class MessagesReader(FaultLog):
    """Reads the events of one Messages stream into content blocks by index (a
    `rig_nb.wire.Reader`). The text shown so far grows as it comes (`content`,
    `reasoning`), so a live view grows and a failed stream keeps what arrived."""

    def __init__(self) -> None:
        self.blocks: dict[int, _Block] = {}
        self.top = -1  # the highest index started so far
        self.raw_usage: dict[str, Any] = {}
        self.stop_reason: Any = None
        self.top_level: set[str] = set()
        self.started = False  # message_start seen
        self.final: Reply | None = None
        self.done = False
        self.faults: list[str] = []
        self._content: list[str] = []
        self._reasoning: list[str] = []

    @property
    def content(self) -> str:
        if len(self._content) > 1:
            self._content = ["".join(self._content)]
        return whole(self._content[0]) if self._content else ""

    @property
    def reasoning(self) -> str:
        if len(self._reasoning) > 1:
            self._reasoning = ["".join(self._reasoning)]
        return whole(self._reasoning[0]) if self._reasoning else ""

    def _open(self, index: int, kind: str, start: dict[str, Any]) -> _Block:
        block = self.blocks[index] = _Block(index, kind, start)
        self.top = max(self.top, index)
        return block

    def _start(self, event: Mapping[str, Any]) -> bool:
        start = event.get("content_block")
        kind = start.get("type") if isinstance(start, dict) else None
        if kind not in KNOWN_BLOCKS or not isinstance(start, dict):
            raise unknown_block(kind)
        index = _index(event)
        if index is None:
            index = self.top + 1
            self.fault(f"content_block_start without an index (read as {index})")
        late = self.blocks.get(index)
        if late is not None and not late.started and late.kind == kind:
            # Its deltas came first (the fault is recorded): the start still names the block.
            self.fault(f"content_block_start for index {index} after its deltas")
            late.start, late.started = start, True
            if not late.signature and isinstance(start.get("signature"), str):
                late.signature = start["signature"]
            return False
        if late is not None:
            self.fault(f"content_block_start for index {index} again")
            return False
        if index != self.top + 1:
            self.fault(f"content_block_start for index {index} out of order (after {self.top})")
        open_ = [b.index for b in self.blocks.values() if not b.stopped]
        if open_:
            self.fault(f"content_block_start for index {index} while index {open_[0]} is open")
        block = self._open(index, kind, start)
        block.started = True
        # A block that arrives whole in its start (no deltas) is shown as it comes.
        if kind == "text":
            return self._show(block.text(), self._content)
        if kind == "thinking":
            if isinstance(start.get("signature"), str):
                block.signature = start["signature"]
            return self._show(block.text(), self._reasoning)
        return False

    def _show(self, text: str, where: list[str]) -> bool:
        if not text:
            return False
        where.append(text)
        return True

    def _delta(self, event: Mapping[str, Any]) -> bool:
        delta = event.get("delta")
        kind = delta.get("type") if isinstance(delta, dict) else None
        if not isinstance(delta, dict) or kind in _SKIPPED_DELTAS:
            return False
        wanted = _DELTAS.get(kind) if isinstance(kind, str) else None
        name = kind if isinstance(kind, str) else "content_block_delta"
        if wanted is None:
            self.fault(f"content_block_delta of unknown type {quoted(name)} dropped")
            return False
        index = _index(event)
        if index is None:
            index = self.top if self.top >= 0 else 0
            self.fault(f"{name} without an index (read as {index})")
        block = self.blocks.get(index)
        if block is None:
            self.fault(f"{name} for index {index}, never started")
            block = self._open(index, wanted, {})
        elif block.stopped:
            self.fault(f"{name} after index {index} stopped (dropped)")
            return False
        elif block.kind != wanted:
            self.fault(f"{name} for index {index}, a {block.kind} block (dropped)")
            return False
        if kind == "signature_delta":
            if isinstance(delta.get("signature"), str):
                block.signature = delta["signature"]
            return False
        key = {"text_delta": "text", "thinking_delta": "thinking"}.get(name, "partial_json")
        piece = delta.get(key)
        if not isinstance(piece, str):
            return False
        block.parts.append(piece)
        if kind == "text_delta":
            return self._show(piece, self._content)
        if kind == "thinking_delta":
            return self._show(piece, self._reasoning)
        return False

    def _stop(self, event: Mapping[str, Any]) -> None:
        index = _index(event)
        block = self.blocks.get(index) if index is not None else None
        if block is None:
            self.fault(f"content_block_stop for index {index}, never started")
        elif block.stopped:
            self.fault(f"content_block_stop for index {index} again")
        else:
            block.stopped = True

    def _usage(self, usage: Any) -> None:
        if isinstance(usage, Mapping):
            # message_delta's counts are cumulative: a later value replaces an earlier one.
            self.raw_usage.update({k: v for k, v in usage.items() if v is not None})

    def feed(self, event: Any) -> bool:
        """Take one decoded event; True when it carried text."""
        kind = event_type(event)
        if kind == "content_block_delta":
            return self._delta(event)
        if kind == "content_block_start":
            return self._start(event)
        if kind == "content_block_stop":
            self._stop(event)
        elif kind == "message_start":
            message = event.get("message")
            if self.started:
                self.fault("message_start again")
            self.started = True
            if isinstance(message, dict):
                self.top_level.update(k for k in message if isinstance(k, str))
                self._usage(message.get("usage"))
        elif kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, dict) and delta.get("stop_reason") is not None:
                self.stop_reason = delta["stop_reason"]
            self._usage(event.get("usage"))
        elif kind == "message_stop":
            self._end()
        return False

    def _redacted(self) -> list[str]:
        blocks = [self.blocks[i] for i in sorted(self.blocks)]
        data = [b.start.get("data") for b in blocks if b.kind == "redacted_thinking"]
        return [d for d in data if isinstance(d, str)]

    def _parts(self) -> tuple[str, str, str, list[Call]]:
        blocks = [self.blocks[i] for i in sorted(self.blocks)]
        content = "".join(b.text() for b in blocks if b.kind == "text")
        thinking = [b for b in blocks if b.kind == "thinking"]
        reasoning = "".join(b.text() for b in thinking)
        signature = thinking[-1].signature if thinking else ""
        calls: list[Call] = []
        for b in blocks:
            if b.kind != "tool_use":
                continue
            # Arguments that never form JSON go to the loop as they are: a tool error fed
            # back, as for chat's invalid arguments.
            calls.append(call_of(b.start, b.arguments()))
        return content, reasoning, signature, calls

    def _end(self) -> None:
        content, reasoning, signature, calls = self._parts()
        if not self.started:
            self.fault("message_stop without message_start")
        finish, cut = finish_of(self.stop_reason, bool(calls))
        self.done = True
        self.final = Reply(
            content=content,
            reasoning=reasoning,
            reasoning_field="thinking" if reasoning else "",
            finish_reason=finish,
            tool_calls=calls,
            usage=usage_of(self.raw_usage),
            context_cut=cut,
            top_level=frozenset(self.top_level),
            reasoning_signature=signature,
            reasoning_redacted=self._redacted(),
            stream_faults=list(self.faults),
        )

    def reply(self) -> Reply:
        """The finished reply, or what arrived so far (a failed stream)."""
        if self.final is not None:
            return self.final
        content, reasoning, signature, calls = self._parts()
        return Reply(
            content=content,
            reasoning=reasoning,
            reasoning_field="thinking" if reasoning else "",
            tool_calls=calls,
            usage=usage_of(self.raw_usage),
            reasoning_signature=signature,
            reasoning_redacted=self._redacted(),
            stream_faults=list(self.faults),
        )


def read_message_stream(
    chunks: Iterable[bytes],
    reader: MessagesReader,
    on_event: Callable[[bool], None] | None = None,
) -> Reply:
    """Feed each event of a Messages stream to `reader` until `message_stop`, which ends the
    reply at once whatever the connection does after it; `on_event(grew)` after each. The
    finished reply, or BackendError: `protocol` for a stream that ends before
    `message_stop`, `reply` for an `error` event, an unknown block type or `pause_turn`.
    The reader keeps what arrived."""
    return read_to_final(chunks, reader, on_event, "message_stop")
