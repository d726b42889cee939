"""Replay a recorded real session (`rig_nb.demo.recording.RecordingProxy`) as a demo persona.

    persona = ReplayPersona("smollm2-recorded", "smollm2.jsonl")
    with DemoServer(extra_personas=[persona]) as demo: ...

The packaged recordings in `rig_nb/demo/recordings/` come from
SmolLM2-135M-Instruct on a llama.cpp server; `recorded_personas()` serves each
file as "<stem>-recorded". A reply is chosen from the request alone, so
concurrent runs (`compare`) replay correctly:

1. a recorded request with the same body (the model name and the stream
   switches aside) gets its reply;
2. otherwise the request's conversation (system and user messages, tools,
   tool_choice, budget) picks the closest recorded conversation, and the
   request's position in it (the tool rounds already echoed back) picks the
   exchange; past the recorded end, the last exchange is served again.

Among equal candidates, one recorded the way the request asks (streamed or
not) wins. A recorded stream is replayed as a stream, event by event; to a
request that does not stream, it is answered with the chat.completion its
events add up to. A recorded body is streamed by the demo server when the
request asks. A recorded error (llama.cpp's HTTP 500 on tool_choice
"required") is replayed with its status, never streamed. Replies carry the
persona's name as their model.
"""

from __future__ import annotations

import copy
import json
import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    from importlib.resources.abc import Traversable
else:
    from importlib.abc import Traversable

from ..errors import BackendError
from ..testing import Response
from ..wire import REASONING_FIELDS, StreamAssembler
from .kit import Heard, Persona, Stream

__all__ = ["Exchange", "ReplayPersona", "load_recording", "recorded_personas"]

_CHAT_PATH = "chat/completions"
# How a reply is delivered, not what is asked: left out when requests are matched.
_DELIVERY = frozenset({"model", "stream", "stream_options"})


@dataclass(frozen=True)
class Exchange:
    """One recorded chat completions request and the reply the real server gave.

    `events` holds the `data:` payloads of a streamed reply (JSON decoded, a
    string where not JSON, such as `[DONE]`), None when the reply was a body.
    """

    request: Mapping[str, Any]
    status: int
    body: Any
    exact: str
    conversation: str
    position: int
    events: tuple[Any, ...] | None = None

    @property
    def streamed(self) -> bool:
        return self.events is not None


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _exact_key(request: Mapping[str, Any]) -> str:
    return _canonical({k: v for k, v in request.items() if k not in _DELIVERY})


def _budget(request: Mapping[str, Any]) -> Any:
    return request.get("max_completion_tokens", request.get("max_tokens"))


def _opening(request: Mapping[str, Any]) -> list[Any]:
    """The messages up to and including the last user message: the same in every round."""
    messages = request.get("messages")
    if not isinstance(messages, list):
        return []
    last_user = max(
        (i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"),
        default=len(messages) - 1,
    )
    return messages[: last_user + 1]


def _conversation(request: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "opening": _opening(request),
        "tools": request.get("tools"),
        "tool_choice": request.get("tool_choice", "<unset>"),
        "budget": _budget(request),
    }


def _tool_names(request: Mapping[str, Any]) -> list[str]:
    tools = request.get("tools")
    if not isinstance(tools, list):
        return []
    names = []
    for t in tools:
        fn = t.get("function") if isinstance(t, dict) else None
        names.append(str(fn.get("name")) if isinstance(fn, dict) else "")
    return sorted(names)


def _similarity(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """How alike two conversations are; what decides behaviour weighs most."""
    score = 0.0
    if a.get("tool_choice", "<unset>") == b.get("tool_choice", "<unset>"):
        score += 8
    if bool(a.get("tools")) == bool(b.get("tools")):
        score += 8
    if _tool_names(a) == _tool_names(b):
        score += 2
    budget_a, budget_b = _budget(a), _budget(b)
    if isinstance(budget_a, int) and isinstance(budget_b, int) and budget_a > 0 and budget_b > 0:
        # A 16-token budget is like 32 and unlike 1024: compare on a log scale.
        score += max(0.0, 4 - abs(math.log2(budget_a / budget_b)))
    elif budget_a == budget_b:
        score += 4
    if _opening(a) == _opening(b):
        score += 2
    return score


def _rounds(request: Mapping[str, Any]) -> int:
    messages = request.get("messages")
    if not isinstance(messages, list):
        return 0
    opening = len(_opening(request))
    return sum(
        1
        for m in messages[opening:]
        if isinstance(m, dict) and m.get("role") == "assistant" and m.get("tool_calls")
    )


def _read(source: str | os.PathLike[str] | Traversable) -> str:
    if isinstance(source, Traversable):
        return source.read_text(encoding="utf-8")
    with open(source, encoding="utf-8") as f:
        return f.read()


def load_recording(source: str | os.PathLike[str] | Traversable) -> list[Exchange]:
    """The chat completions exchanges of a JSON Lines recording, in recorded order."""
    text = _read(source)
    return _parse(text)[1]


def _parse(text: str) -> tuple[list[str], list[Exchange]]:
    notes: list[str] = []
    exchanges = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if isinstance(record, dict) and "note" in record and "request" not in record:
                notes.append(str(record["note"]))
                continue
            request, response = record["request"], record["response"]
            path, body = str(request.get("path", "")), request.get("body")
            status = int(response["status"])
            events = response.get("events")
            if events is not None and not isinstance(events, list):
                raise ValueError("events is not a list")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"recording line {n} is not a recorded exchange") from exc
        if not path.rstrip("/").endswith(_CHAT_PATH) or not isinstance(body, dict):
            continue
        exchanges.append(
            Exchange(
                request=body,
                status=status,
                body=response.get("body"),
                exact=_exact_key(body),
                conversation=_canonical(_conversation(body)),
                position=_rounds(body),
                events=None if events is None else tuple(events),
            )
        )
    return notes, exchanges


def _prefer(candidates: list[Exchange], streaming: bool) -> Exchange:
    """The first candidate recorded the way the request asks, else the first."""
    return next((ex for ex in candidates if ex.streamed == streaming), candidates[0])


def _renamed(event: Any, model: str) -> Any:
    if isinstance(event, dict) and "model" in event:
        return {**event, "model": model}
    return event


def _body_of(events: tuple[Any, ...]) -> dict[str, Any]:
    """The chat.completion a recorded stream adds up to, for a request that does not stream."""
    assembler = StreamAssembler()
    head: dict[str, Any] = {}
    usage: Any = None
    for event in events:
        if not isinstance(event, dict):
            continue  # [DONE], or a line that was not JSON
        head.update({k: event[k] for k in ("id", "created", "model") if k in event})
        usage = event["usage"] if event.get("usage") is not None else usage
        try:
            assembler.feed(event)
        except BackendError:  # a recorded error event ends what the stream said
            break
    reply = assembler.reply()
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.reasoning:
        field = reply.reasoning_field or REASONING_FIELDS[0]
        text = reply.reasoning
        message[field] = (
            [{"type": "reasoning.text", "text": text}] if field == "reasoning_details" else text
        )
    if reply.tool_calls:
        message["tool_calls"] = [c.as_chat() for c in reply.tool_calls]
    choice = {"index": 0, "message": message, "finish_reason": reply.finish_reason or None}
    body = {**head, "object": "chat.completion", "choices": [choice]}
    if usage is not None:
        body["usage"] = usage
    return body


class ReplayPersona(Persona):
    """A demo persona that answers with what a real model answered to the closest request."""

    def __init__(self, name: str, source: str | os.PathLike[str] | Traversable) -> None:
        self.name = name
        notes, self.exchanges = _parse(_read(source))
        if not self.exchanges:
            raise ValueError(f"recording for {name!r} holds no chat completions exchanges")
        # The demo's model list describes a persona by its docstring's first line.
        self.__doc__ = notes[0] if notes else f"Replays {len(self.exchanges)} recorded exchanges."
        self._exact: dict[str, list[Exchange]] = {}
        self._conversations: dict[str, list[Exchange]] = {}
        for ex in self.exchanges:
            self._exact.setdefault(ex.exact, []).append(ex)
            self._conversations.setdefault(ex.conversation, []).append(ex)

    def match(self, request: Mapping[str, Any]) -> Exchange:
        """The recorded exchange served for `request` (see the module docstring)."""
        streaming = request.get("stream") is True
        exact = self._exact.get(_exact_key(request))
        if exact is not None:
            return _prefer(exact, streaming)
        wanted = _conversation(request)
        key = _canonical(wanted)
        group = self._conversations.get(key)
        if group is None:
            # max() keeps the first of equals: ties go to the earliest recording.
            group = max(
                self._conversations.values(), key=lambda g: _similarity(request, g[0].request)
            )
        position = _rounds(request)
        at_or_before = [ex for ex in group if ex.position <= position]
        if not at_or_before:
            first = min(ex.position for ex in group)
            return _prefer([ex for ex in group if ex.position == first], streaming)
        last = max(ex.position for ex in at_or_before)
        return _prefer([ex for ex in at_or_before if ex.position == last], streaming)

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        turn = Heard.parse(request)  # a malformed request is refused as by every persona
        ex = self.match(request)
        if ex.events is not None and ex.status == 200:
            if turn.streaming:
                return Stream([_renamed(e, turn.model) for e in ex.events])
            return Response(_body_of(tuple(_renamed(e, turn.model) for e in ex.events)))
        body = copy.deepcopy(ex.body)
        if isinstance(body, dict) and "model" in body:
            body["model"] = turn.model
        return Response(body, status=ex.status)


def recorded_personas() -> list[ReplayPersona]:
    """One persona per packaged recording, named "<file stem>-recorded", sorted by name."""
    folder = resources.files("rig_nb.demo") / "recordings"
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".jsonl")), key=lambda f: f.name)
    personas = [ReplayPersona(f.name.removesuffix(".jsonl") + "-recorded", f) for f in files]
    for persona in personas:
        # The server each recording came from, as its model list names it.
        if persona.name.startswith("llama-server"):
            persona.owned_by = "llamacpp"
        elif persona.name.startswith("smollm2"):
            persona.owned_by = "me"  # llama-cpp-python's server
    return personas
