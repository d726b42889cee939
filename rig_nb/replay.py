"""Replay a recorded real session (`rig_nb.testing.RecordingProxy`) as a demo persona.

    persona = ReplayPersona("smollm2-recorded", "smollm2.jsonl")
    with DemoServer(extra_personas=[persona]) as demo: ...

The packaged recordings in `rig_nb/recordings/` come from SmolLM2-135M-Instruct
on a llama.cpp server; `recorded_personas()` serves each file as
"<stem>-recorded". A reply is chosen from the request alone, so concurrent
runs (`compare`) replay correctly:

1. a recorded request with the same body (the model name aside) gets its reply;
2. otherwise the request's conversation (system and user messages, tools,
   tool_choice, budget) picks the closest recorded conversation, and the
   request's position in it (the tool rounds already echoed back) picks the
   exchange; past the recorded end, the last exchange is served again.

A recorded error (llama.cpp's HTTP 500 on tool_choice "required") is replayed
with its status. Replies carry the persona's name as their model.
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

from ._persona_kit import Persona, Turn
from .testing import Reply

__all__ = ["Exchange", "ReplayPersona", "load_recording", "recorded_personas"]

_CHAT_PATH = "chat/completions"


@dataclass(frozen=True)
class Exchange:
    """One recorded chat completions request and the reply the real server gave."""

    request: Mapping[str, Any]
    status: int
    body: Any
    exact: str
    conversation: str
    position: int


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _exact_key(request: Mapping[str, Any]) -> str:
    return _canonical({k: v for k, v in request.items() if k != "model"})


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
            )
        )
    return notes, exchanges


class ReplayPersona(Persona):
    """A demo persona that answers with what a real model answered to the closest request."""

    def __init__(self, name: str, source: str | os.PathLike[str] | Traversable) -> None:
        self.name = name
        notes, self.exchanges = _parse(_read(source))
        if not self.exchanges:
            raise ValueError(f"recording for {name!r} holds no chat completions exchanges")
        # The demo's model list describes a persona by its docstring's first line.
        self.__doc__ = notes[0] if notes else f"Replays {len(self.exchanges)} recorded exchanges."
        self._exact: dict[str, Exchange] = {}
        self._conversations: dict[str, list[Exchange]] = {}
        for ex in self.exchanges:
            self._exact.setdefault(ex.exact, ex)
            self._conversations.setdefault(ex.conversation, []).append(ex)

    def match(self, request: Mapping[str, Any]) -> Exchange:
        """The recorded exchange served for `request` (see the module docstring)."""
        exact = self._exact.get(_exact_key(request))
        if exact is not None:
            return exact
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
            return min(group, key=lambda ex: ex.position)
        return max(at_or_before, key=lambda ex: ex.position)

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Reply:
        turn = Turn.parse(request)  # a malformed request is refused as by every persona
        ex = self.match(request)
        body = copy.deepcopy(ex.body)
        if isinstance(body, dict) and "model" in body:
            body["model"] = turn.model
        return Reply(body, status=ex.status)


def recorded_personas() -> list[ReplayPersona]:
    """One persona per packaged recording, named "<file stem>-recorded", sorted by name."""
    folder = resources.files("rig_nb") / "recordings"
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".jsonl")), key=lambda f: f.name)
    return [ReplayPersona(f.name.removesuffix(".jsonl") + "-recorded", f) for f in files]
