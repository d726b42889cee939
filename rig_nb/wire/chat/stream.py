"""Streamed chat completions: a Reply built from `data:` events, and the events for a reply.

`StreamAssembler` is what the loop reads a stream with; `stream_chunks` is its
inverse, what the test server and the demo endpoint stream for a reply. Both
follow `rig_nb.wire`'s field names.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ...errors import BackendError
from ..base import Reply
from ..counts import server_timings, with_timings
from ..error_objects import raise_error_event
from ..readers import DeltaReader, quoted
from ..sse import DONE, json_events
from ..text import REASONING_FIELDS, text_of
from ..turns import Call
from ..utf16 import TextDeltas, whole
from .shapes import NO_CHOICES, call_of, first_choice, parse_usage

__all__ = [
    "StreamAssembler",
    "read_stream",
    "stream_chunks",
]


def _raw_text(value: Any) -> str:
    """A text field as decoded, surrogate halves kept: a string, or parts' `text` joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(
            p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def _whole_object(parts: list[Any]) -> bool:
    """True when a call's argument fragments so far make one JSON object."""
    try:
        return isinstance(json.loads("".join(p for p in parts if isinstance(p, str))), dict)
    except (ValueError, RecursionError):
        return False


class StreamAssembler(DeltaReader):
    """Builds a Reply from the `data:` events of a streamed chat completion, event by event.

    Content and reasoning deltas are appended; tool call fragments are merged by
    `index` (id, type and name from the first fragment that has them, arguments
    concatenated). A surrogate pair split across two deltas is one character;
    a half left alone is U+FFFD. `content` and `reasoning` read the text so
    far at any time, so a failed stream still shows what arrived. `ended` is
    True once the terminal event (a finish_reason with usage) arrived;
    `faults` lists what the stream did that the chat grammar does not allow
    and the reader forgave.
    """

    def __init__(self) -> None:
        self._content = TextDeltas()
        self._reasoning = TextDeltas()
        self.reasoning_field = ""
        self.finish_reason = ""
        self.usage: dict[str, int] = {}
        self.timings: dict[str, float] = {}
        self.events = 0
        self.choices = 0  # events that carried choice 0
        self.done = False
        self.ended = False
        self._calls: dict[int, dict[str, Any]] = {}
        self._alias: dict[int, int] = {}  # a tool call index used again -> its latest call
        self._last = -1  # the highest call slot so far
        self._indexed_calls = False
        self._top_level: set[str] = set()
        self._fingerprint = ""
        # What the stream did that its grammar does not allow and the reader forgave.
        self.faults: list[str] = []

    def feed(self, event: Any) -> bool:
        """Take one decoded `data:` event; True when it carried text (content or reasoning)."""
        if not isinstance(event, dict):
            raise BackendError("ai backend: stream event is not a JSON object", kind="protocol")
        if "error" in event or event.get("type") == "error":  # checked first: every event
            raise_error_event(event)
        self.events += 1
        self._top_level.update(k for k in event if isinstance(k, str))
        fingerprint = event.get("system_fingerprint")
        if isinstance(fingerprint, str) and fingerprint:
            self._fingerprint = fingerprint
        grew = self._choice(first_choice(event.get("choices")))
        if event.get("usage") is not None:
            self.usage = parse_usage(event.get("usage"))
            # include_usage's last chunk: nothing the reply needs comes after it.
            self.ended = bool(self.finish_reason)
        if "timings" in event:  # llama.cpp: on the last chunk
            self.timings = server_timings(event) or self.timings
        return grew

    def _choice(self, choice: dict[str, Any] | None) -> bool:
        # Only choice 0 is read: with n > 1 a server interleaves other choices' deltas.
        if choice is None:
            return False
        self.choices += 1
        finished = self.finish_reason
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            if finished and finish != finished:
                self.fault(f"a second finish_reason {quoted(finish)} after {quoted(finished)}")
            self.finish_reason = finish
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return False
        grew = False
        text = _raw_text(delta.get("content"))
        if text:
            self._content.add(text)
            grew = True
        for name in REASONING_FIELDS:
            piece = _raw_text(delta.get(name))
            if piece:
                self._reasoning.add(piece)
                self.reasoning_field = self.reasoning_field or name
                grew = True
                break
        calls = delta.get("tool_calls")
        if isinstance(calls, list) and calls:
            self._indexed_calls = True
            for fragment in calls:
                self._merge(fragment)
            grew_calls = True
        elif isinstance(delta.get("function_call"), dict) and not self._indexed_calls:
            # The legacy single call, as parse_reply reads it when tool_calls is absent.
            self._merge({"index": 0, "function": delta["function_call"]})
            grew_calls = True
        else:
            grew_calls = False
        if finished and (grew or grew_calls):
            self.fault("a delta after the finish_reason")
        return grew

    def _slot(self, fragment: dict[str, Any]) -> int:
        """Where a tool call fragment goes: its index, or the call it must belong to."""
        index = fragment.get("index")
        fid = fragment.get("id")
        fid = fid if isinstance(fid, str) else ""
        last = self._last
        if not isinstance(index, int) or isinstance(index, bool):
            self.fault("a tool call fragment without index")
            # No index: a new call when the fragment names a new id, else the last call.
            new = last < 0 or (fid and fid != self._calls[last]["id"])
            return last + 1 if new else last
        slot = self._alias.get(index, index)
        call = self._calls.get(slot)
        if call is None:
            if index > last + 1:
                self.fault(f"tool call index {index} before index {last + 1}")
            elif index < 0:
                self.fault(f"a negative tool call index {index}")
            return slot
        if fid and call["id"] and fid != call["id"]:
            whole_call = False
            # Parsed again only once the arguments doubled: a server that keeps changing
            # ids cannot make this quadratic.
            if call["size"] >= 2 * call["tried"]:
                whole_call = _whole_object(call["arguments"])
                call["tried"] = max(call["size"], 1)
            if whole_call:
                # One index for every call (seen with Ollama): a new id after a whole
                # call starts the next call; later fragments of this index go there too.
                self.fault(f"tool call index {index} used again for another call")
                self._alias[index] = last + 1
                return last + 1
            self.fault(f"tool call {index} got a second, different id")
        return slot

    def _merge(self, fragment: Any) -> None:
        if not isinstance(fragment, dict):
            self.fault("a tool call fragment that is not an object")
            return
        slot = self._slot(fragment)
        call = self._calls.get(slot)
        if call is None:
            # size: characters of string arguments; tried: the size at the last parse.
            call = {"id": "", "type": "function", "name": None, "arguments": [], "size": 0}
            call["tried"] = 0
            self._calls[slot] = call
            self._last = max(self._last, slot)
        fid = fragment.get("id")
        if isinstance(fid, str) and fid and not call["id"]:
            call["id"] = fid
        ftype = fragment.get("type")
        if isinstance(ftype, str) and ftype:
            call["type"] = ftype
        fn = fragment.get("function")
        if isinstance(fn, dict):
            name = fn.get("name")
            if isinstance(name, str) and name:
                if call["name"] is None:
                    call["name"] = name
                elif name != call["name"]:
                    self.fault(f"tool call {slot} got a second, different name")
            args = fn.get("arguments")
            if args is not None:
                call["arguments"].append(args)
                call["size"] += len(args) if isinstance(args, str) else 0

    def _tool_calls(self) -> list[Call]:
        out = []
        for index in sorted(self._calls):
            c = self._calls[index]
            parts = c["arguments"]
            # Joined before pairing: a surrogate pair may be split across two fragments.
            arguments: Any = whole("".join(p for p in parts if isinstance(p, str)))
            if parts and not any(isinstance(p, str) for p in parts):
                arguments = parts[-1]  # a server that sends an object, not a string
            fn: dict[str, Any] = {"arguments": arguments}
            if c["name"] is not None:
                fn["name"] = whole(c["name"])
            out.append(call_of({"id": whole(c["id"]), "type": c["type"], "function": fn}))
        return out

    def reply(self) -> Reply:
        """The reply so far, as parse_reply would give it for the same message."""
        reasoning = self._reasoning.final
        return Reply(
            content=self._content.final,
            reasoning=reasoning,
            reasoning_field=self.reasoning_field if reasoning else "",
            finish_reason=self.finish_reason,
            tool_calls=self._tool_calls(),
            usage=with_timings(dict(self.usage), self.timings),
            server_timings=dict(self.timings),
            top_level=frozenset(self._top_level),
            system_fingerprint=self._fingerprint,
            stream_faults=list(self.faults),
        )

    def finish(self) -> Reply:
        """The complete reply; BackendError (protocol) when the stream ended too early. A
        stream that ended after its finish_reason without [DONE] (or the usage that ends it)
        is read, with that fault."""
        if not self.finish_reason and not self.done:
            self.fault("the stream ended without a finish_reason or [DONE]")
            raise BackendError(
                "ai backend: the stream ended without a finish_reason or [DONE]",
                kind="protocol",
            )
        if not self.done and not self.ended:
            self.fault("the stream ended without [DONE]")
        if not self.choices:  # the same error as an unstreamed reply without choices
            raise BackendError(NO_CHOICES, kind="reply")
        return self.reply()


def read_stream(
    chunks: Iterable[bytes],
    assembler: StreamAssembler,
    on_event: Callable[[bool], None] | None = None,
) -> Reply:
    """Feed each `data:` event of a byte stream to `assembler` until the terminal event
    (`[DONE]`, or a finish_reason with usage) or the end; `on_event(grew)` after each.
    Nothing is read after the terminal event, so a server that keeps the connection
    open is not waited for. The finished reply, or BackendError (protocol)."""
    for event in json_events(chunks):
        if event is DONE:
            assembler.done = True
            break
        grew = assembler.feed(event)
        if on_event is not None:
            on_event(grew)
        if assembler.ended:
            break
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
            # A list of parts (reasoning_details): each part's text streams in pieces, each
            # piece with its part's `index` (OpenRouter's; the openai SDK merges by it) and
            # the part's other fields on its first piece only (strings are concatenated).
            for position, part in enumerate(value):
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    fields = {k: v for k, v in part.items() if k not in ("text", "index")}
                    fields.setdefault("type", "reasoning.text")
                    fields["index"] = part.get("index", position)
                    for n, piece in enumerate(_pieces(part["text"], piece_chars)):
                        kept = (
                            fields if n == 0 else {"type": fields["type"], "index": fields["index"]}
                        )
                        events.append(event({name: [{**kept, "text": piece}]}))
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
