"""Ollama's stream: NDJSON lines of `message` pieces, ended by the line with `done: true`.

Content and thinking pieces are appended (a UTF-16 pair split across two lines is one
character); tool calls come whole, one line each. The `done` line carries the finish,
the counts and the durations and ends the reply at once, whatever the connection does
after it. An `{"error": ...}` line is a BackendError; the reader keeps what arrived.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from ...errors import BackendError
from ..base import Reply
from ..counts import ollama_timings
from ..error_objects import raise_error_event
from ..ndjson import Lines, decode_line
from ..readers import DeltaReader
from ..turns import Call
from ..utf16 import TextDeltas, whole
from .shapes import finish_of, not_json, ollama_call, usage_of

__all__ = ["OllamaReader", "read_ollama_stream"]


class OllamaReader(DeltaReader):
    """Reads the lines of one `/api/chat` stream (a `rig_nb.wire.Reader`): the text so far
    grows as it comes, so a live view grows and a failed stream keeps what arrived."""

    def __init__(self) -> None:
        self._content = TextDeltas()
        self._reasoning = TextDeltas()
        self.calls: list[Call] = []
        self.done = False
        self.final: Reply | None = None
        self.faults: list[str] = []
        self._top_level: set[str] = set()

    def _call(self, raw: Any) -> None:
        call = ollama_call(raw)
        if call is None:
            self.fault("a tool call that is not an object with a function")
            return
        if call.name or not self.calls:
            self.calls.append(call)
            return
        # Ollama sends each call whole: a piece without a name continues the last call.
        self.fault("a tool call split across lines")
        last = self.calls[-1]
        self.calls[-1] = replace(last, arguments=last.arguments + call.arguments)

    def feed(self, event: Any) -> bool:
        """Take one decoded line; True when it carried text (content or thinking)."""
        if not isinstance(event, dict):
            raise BackendError("ai backend: stream line is not a JSON object", kind="protocol")
        if "error" in event or event.get("type") == "error":  # checked first: every event
            raise_error_event(event)
        if self.done:
            self.fault("a line after done: true")
            return False
        self._top_level.update(k for k in event if isinstance(k, str))
        message = event.get("message")
        grew = False
        if isinstance(message, Mapping):
            for name, text in (("content", self._content), ("thinking", self._reasoning)):
                piece = message.get(name)
                if isinstance(piece, str) and piece:
                    text.add(piece)
                    grew = True
            calls = message.get("tool_calls")
            if isinstance(calls, list):
                for raw in calls:
                    self._call(raw)
        if event.get("done") is True:
            self._end(event)
        return grew

    def _end(self, line: Mapping[str, Any]) -> None:
        self.done = True
        self.final = self._reply(finish_of(line, bool(self.calls)), line)

    def _reply(self, finish: str, line: Mapping[str, Any]) -> Reply:
        reasoning = self._reasoning.final
        calls = [replace(c, arguments=whole(c.arguments)) for c in self.calls]
        return Reply(
            content=self._content.final,
            reasoning=reasoning,
            reasoning_field="thinking" if reasoning else "",
            finish_reason=finish,
            tool_calls=calls,
            usage=usage_of(line),
            server_timings=ollama_timings(line),
            top_level=frozenset(self._top_level),
            stream_faults=list(self.faults),
        )

    def reply(self) -> Reply:
        """The finished reply, or what arrived so far (a failed stream)."""
        if self.final is not None:
            self.final.stream_faults = list(self.faults)
            return self.final
        return self._reply("", {})


def read_ollama_stream(
    chunks: Iterable[bytes],
    reader: OllamaReader,
    on_event: Callable[[bool], None] | None = None,
) -> Reply:
    """Feed each line of an `/api/chat` stream to `reader` until the line with `done:
    true`, which ends the reply at once (lines the server already sent after it are
    recorded as faults; nothing more is read); `on_event(grew)` after each line. The
    finished reply, or BackendError: `protocol` for a line that is not JSON or a stream
    that ends before `done`, `reply` for an `{"error": ...}` line."""
    lines = Lines(chunks)
    for line in lines:
        try:
            event = decode_line(line)
        except BackendError:
            if line.lstrip()[:1] == b"<":
                raise not_json(line) from None
            if lines.cut and not lines.ready():
                reader.fault("the stream ended inside a line")
                raise BackendError(
                    "ai backend: the stream ended inside a line", kind="protocol"
                ) from None
            raise
        grew = reader.feed(event)
        if on_event is not None:
            on_event(grew)
        if reader.done:
            for _ in lines.ready():
                reader.fault("a line after done: true")
            return reader.reply()
    why = "inside a line" if lines.cut else "without a line with done: true"
    reader.fault(f"the stream ended {why}")
    raise BackendError(f"ai backend: the stream ended {why}", kind="protocol")
