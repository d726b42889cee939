"""Streamed chat completions: a Reply built from `data:` events, and the events for a reply.

`StreamAssembler` is what the loop reads a stream with; `stream_chunks` is its
inverse, what the test server and the demo endpoint stream for a reply. Both
follow `rig_nb.wire`'s field names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import BackendError
from .chat import (
    NO_CHOICES,
    REASONING_FIELDS,
    Reply,
    error_detail,
    first_choice,
    parse_usage,
    server_timings,
    text_of,
    with_timings,
)
from .sse import DONE, json_events

__all__ = ["MAX_FAULTS", "StreamAssembler", "read_stream", "stream_chunks"]

MAX_FAULTS = 20


class StreamAssembler:
    """Builds a Reply from the `data:` events of a streamed chat completion, event by event.

    Content and reasoning deltas are appended; tool call fragments are merged by
    `index` (id, type and name from the first fragment that has them, arguments
    concatenated). `content` and `reasoning` read the text so far at any time,
    so a failed stream still shows what arrived.
    """

    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self.reasoning_field = ""
        self.finish_reason = ""
        self.usage: dict[str, int] = {}
        self.timings: dict[str, float] = {}
        self.events = 0
        self.choices = 0  # events that carried choice 0
        self.done = False
        self._calls: dict[int, dict[str, Any]] = {}
        self._indexed_calls = False
        self._top_level: set[str] = set()
        self._fingerprint = ""
        self._content_len = 0
        self._reasoning_len = 0
        self._joined: tuple[int, int, str, str] = (0, 0, "", "")
        # What the stream did that its grammar does not allow and the reader forgave.
        self.faults: list[str] = []

    def fault(self, line: str) -> None:
        """Record one stream fault (a short line); the first MAX_FAULTS are kept."""
        if len(self.faults) < MAX_FAULTS:
            self.faults.append(line)

    @property
    def content(self) -> str:
        self._join()
        return self._joined[2]

    @property
    def reasoning(self) -> str:
        self._join()
        return self._joined[3]

    def _join(self) -> None:
        # Joined lazily and cached: a listener reading the text per delta stays linear overall.
        n, m = len(self._content), len(self._reasoning)
        if (n, m) != self._joined[:2]:
            content = "".join(self._content)
            reasoning = "".join(self._reasoning)
            self._content = [content] if content else []
            self._reasoning = [reasoning] if reasoning else []
            self._joined = (len(self._content), len(self._reasoning), content, reasoning)

    def feed(self, event: Any) -> bool:
        """Take one decoded `data:` event; True when it carried text (content or reasoning)."""
        if not isinstance(event, dict):
            raise BackendError("ai backend: stream event is not a JSON object", kind="protocol")
        if "error" in event and not event.get("choices"):
            raise BackendError(f"ai backend: error in stream: {error_detail(event)}", kind="reply")
        self.events += 1
        self._top_level.update(k for k in event if isinstance(k, str))
        fingerprint = event.get("system_fingerprint")
        if isinstance(fingerprint, str) and fingerprint:
            self._fingerprint = fingerprint
        if event.get("usage") is not None:
            self.usage = parse_usage(event.get("usage"))
        if "timings" in event:  # llama.cpp: on the last chunk
            self.timings = server_timings(event) or self.timings
        # Only choice 0 is read: with n > 1 a server interleaves other choices' deltas.
        choice = first_choice(event.get("choices"))
        if choice is None:
            return False
        self.choices += 1
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            self.finish_reason = finish
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return False
        grew = False
        text = text_of(delta.get("content"))
        if text:
            self._content.append(text)
            grew = True
        for name in REASONING_FIELDS:
            piece = text_of(delta.get(name))
            if piece:
                self._reasoning.append(piece)
                self.reasoning_field = self.reasoning_field or name
                grew = True
                break
        calls = delta.get("tool_calls")
        if isinstance(calls, list) and calls:
            self._indexed_calls = True
            for fragment in calls:
                self._merge(fragment)
        elif isinstance(delta.get("function_call"), dict) and not self._indexed_calls:
            # The legacy single call, as parse_reply reads it when tool_calls is absent.
            self._merge({"index": 0, "function": delta["function_call"]})
        return grew

    def _merge(self, fragment: Any) -> None:
        if not isinstance(fragment, dict):
            return
        index = fragment.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            # No index: a new call when the fragment names a new id, else the last call.
            fid = fragment.get("id")
            last = max(self._calls) if self._calls else -1
            new = last < 0 or (isinstance(fid, str) and fid and fid != self._calls[last]["id"])
            index = last + 1 if new else last
        call = self._calls.setdefault(
            index, {"id": "", "type": "function", "name": None, "arguments": []}
        )
        fid = fragment.get("id")
        if isinstance(fid, str) and fid and not call["id"]:
            call["id"] = fid
        ftype = fragment.get("type")
        if isinstance(ftype, str) and ftype:
            call["type"] = ftype
        fn = fragment.get("function")
        if isinstance(fn, dict):
            name = fn.get("name")
            if isinstance(name, str) and name and call["name"] is None:
                call["name"] = name
            args = fn.get("arguments")
            if args is not None:
                call["arguments"].append(args)

    def _tool_calls(self) -> list[dict[str, Any]]:
        out = []
        for index in sorted(self._calls):
            c = self._calls[index]
            parts = c["arguments"]
            arguments: Any = "".join(p for p in parts if isinstance(p, str))
            if parts and not any(isinstance(p, str) for p in parts):
                arguments = parts[-1]  # a server that sends an object, not a string
            fn: dict[str, Any] = {"arguments": arguments}
            if c["name"] is not None:
                fn["name"] = c["name"]
            out.append({"id": c["id"], "type": c["type"], "function": fn})
        return out

    def reply(self) -> Reply:
        """The reply so far, as parse_reply would give it for the same message."""
        return Reply(
            content=self.content,
            reasoning=self.reasoning,
            reasoning_field=self.reasoning_field if self.reasoning else "",
            finish_reason=self.finish_reason,
            tool_calls=self._tool_calls(),
            usage=with_timings(dict(self.usage), self.timings),
            server_timings=dict(self.timings),
            top_level=frozenset(self._top_level),
            system_fingerprint=self._fingerprint,
            stream_faults=list(self.faults),
        )

    def finish(self) -> Reply:
        """The complete reply; BackendError (protocol) when the stream ended too early."""
        if not self.finish_reason and not self.done:
            raise BackendError(
                "ai backend: the stream ended without a finish_reason or [DONE]",
                kind="protocol",
            )
        if not self.choices:  # the same error as an unstreamed reply without choices
            raise BackendError(NO_CHOICES, kind="reply")
        return self.reply()


def read_stream(
    chunks: Iterable[bytes],
    assembler: StreamAssembler,
    on_event: Callable[[bool], None] | None = None,
) -> Reply:
    """Feed each `data:` event of a byte stream to `assembler` until `[DONE]` or the end;
    `on_event(grew)` after each. The finished reply, or BackendError (protocol)."""
    for event in json_events(chunks):
        if event is DONE:
            assembler.done = True
            break
        grew = assembler.feed(event)
        if on_event is not None:
            on_event(grew)
    return assembler.finish()


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def stream_chunks(body: Mapping[str, Any], *, piece_chars: int = 16) -> list[dict[str, Any]]:
    """A chat.completion body as the chat.completion.chunk events a server streams for it.

    Reasoning deltas (under the body's own field name) come first, then content,
    then tool call fragments (id, type and name first, arguments in pieces),
    then the finish_reason, then usage with no choices. StreamAssembler rebuilds
    the same Reply from them. The inverse of what the loop reads: servers built
    for tests and the demo use it.
    """
    head = {k: body[k] for k in ("id", "created", "model") if k in body}
    head["object"] = "chat.completion.chunk"
    choice = (body.get("choices") or [{}])[0]
    message = choice.get("message") or {}

    def event(delta: dict[str, Any], finish: Any = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [event({"role": "assistant", "content": ""})]
    for name in REASONING_FIELDS:
        value = message.get(name)
        if isinstance(value, str) and value:
            events += [event({name: p}) for p in _pieces(value, piece_chars)]
            break
        if isinstance(value, list) and text_of(value):
            # A list of parts (reasoning_details): each part's text streams in pieces.
            for part in value:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    kind = part.get("type", "reasoning.text")
                    events += [
                        event({name: [{"type": kind, "text": p}]})
                        for p in _pieces(part["text"], piece_chars)
                    ]
            break
    if isinstance(message.get("content"), str):
        events += [event({"content": p}) for p in _pieces(message["content"], piece_chars)]
    for index, call in enumerate(message.get("tool_calls") or []):
        fn = call.get("function") or {}
        first = {"index": index, "id": call.get("id"), "type": call.get("type", "function")}
        events.append(event({"tool_calls": [{**first, "function": {"name": fn.get("name")}}]}))
        args = fn.get("arguments")
        parts = _pieces(args, piece_chars) if isinstance(args, str) else [args]
        for p in parts if args is not None else []:
            events.append(event({"tool_calls": [{"index": index, "function": {"arguments": p}}]}))
    events.append(event({}, choice.get("finish_reason")))
    if isinstance(body.get("timings"), dict):  # llama.cpp sends them on the finishing chunk
        events[-1]["timings"] = body["timings"]
    if body.get("usage") is not None:
        events.append({**head, "choices": [], "usage": body["usage"]})
    return events
