"""A request as sent, in the three parts a server's prefix cache keys on: the system
prompt, the tools, and the turns after them, whichever wire rendered it.

`Sent.of(body, request)` reads the system prompt and the tools from the body as it went
out (after any agent client reshaped it: a nonce in the system prompt is only there) and
the turns from the wire-neutral request, whose `Turn`s the loop shares between requests:
an unchanged earlier turn is the same object, so comparing two requests' turns costs one
identity test per turn (`rig_nb.prefix`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .turns import Request, Turn

__all__ = ["Sent", "text_of_content"]

# Where each wire puts the system prompt apart from the turns (Messages `system`, Responses
# `instructions`), and where it puts the turns (chat, Messages, Ollama `messages`;
# Responses `input`).
_SYSTEM_FIELDS = ("system", "instructions")
_TURN_FIELDS = ("messages", "input")
# Roles of the turns that lead a conversation as its system prompt.
_SYSTEM_ROLES = ("system", "developer")


def text_of_content(value: Any) -> str:
    """A system prompt's content as one text: a string as is; a list of parts, each part's
    `text` (any other part, an image, as its JSON); anything else as its JSON ("" for
    None)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, list):
        return "\n".join(
            part["text"]
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
            else _json(part)
            for part in value
        )
    return _json(value)


def _json(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _tool_name(tool: Any, at: int) -> str:
    """A rendered tool's name (flat `name`, or chat's `function.name`); `#N` for none."""
    # dict, not Mapping: a rendered body is plain JSON data, and an ABC test costs per tool.
    if isinstance(tool, dict):
        name = tool.get("name")
        function = tool.get("function")
        if not isinstance(name, str) and isinstance(function, dict):
            name = function.get("name")
        if isinstance(name, str) and name:
            return name
    return f"#{at + 1}"


@dataclass(frozen=True)
class Sent:
    """One request as sent: its system prompt as one text, its tools as (name, definition)
    pairs in order, and the turns after the system prompt (the neutral turns)."""

    system: str
    tools: tuple[tuple[str, Any], ...]
    turns: tuple[Turn, ...]

    @classmethod
    def of(cls, body: Mapping[str, Any] | None, request: Request) -> Sent:
        """`request` as sent in `body` (the wire's body, reshaped as sent); from `request`
        alone when no body was seen (a backend that renders none)."""
        lead = 0
        while lead < len(request.turns) and request.turns[lead].role == "system":
            lead += 1
        turns = request.turns[lead:]
        if body is None:
            system = "\n".join(t.text for t in request.turns[:lead])
            tools = tuple((t.name, t) for t in request.tools)
            return cls(system, tools, turns)
        parts = [text_of_content(body[k]) for k in _SYSTEM_FIELDS if body.get(k) is not None]
        listed: list[Any] = next(
            (body[k] for k in _TURN_FIELDS if isinstance(body.get(k), list)), []
        )
        for item in listed:
            if not (isinstance(item, dict) and item.get("role") in _SYSTEM_ROLES):
                break
            parts.append(text_of_content(item.get("content")))
        given = body.get("tools")
        tools = (
            tuple((_tool_name(t, i), t) for i, t in enumerate(given))
            if isinstance(given, list)
            else ()
        )
        return cls("\n".join(parts), tools, turns)
