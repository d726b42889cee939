"""The conversation as the loop keeps it, whatever the wire: turns, calls, tools, a request.

A `Turn` holds text, the reasoning an assistant turn sends back (with the field it goes
back in and an opaque signature, unchanged), the tool calls it made, or a tool's
result. A `Request` is one model request in these terms; a `rig_nb.wire.Wire` renders it
as its own body and reads its replies back into a `Reply`. The trace shows turns in one
shape for every wire (`Turn.as_message`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .text import clean

__all__ = ["Call", "Request", "ToolSpec", "Turn", "turns_of"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class Call:
    """A tool call as made: its id, the function's name, and its arguments as JSON text.

    A reply's calls are Calls on every wire: `id` "" when the server sent none, `name` ""
    when the call cannot be executed (no function name, a tool type that is not a function).
    """

    id: str
    name: str
    arguments: str

    @classmethod
    def made(cls, id: Any, name: Any, arguments: Any) -> Call:
        """A call from a server's fields as decoded: strings cleaned (lone surrogates as
        U+FFFD), anything else ""; arguments sent as an object are JSON-encoded."""
        if isinstance(arguments, str):
            text = clean(arguments)
        elif arguments is None:
            text = ""
        else:
            try:
                text = json.dumps(arguments)  # some servers send an object, not a string
            except (TypeError, ValueError, RecursionError):
                text = ""
        return cls(
            clean(id) if isinstance(id, str) else "",
            clean(name) if isinstance(name, str) else "",
            text,
        )

    def as_object(self) -> dict[str, Any]:
        """The arguments as the JSON object a wire that sends calls back as objects needs
        (Messages' tool_use `input`, Ollama's `arguments`): {} for arguments that are not an
        object (that call ran as a tool error, fed back already)."""
        try:
            value = json.loads(self.arguments) if self.arguments.strip() else {}
        except (ValueError, RecursionError):
            return {}
        return value if isinstance(value, dict) else {}

    def as_chat(self) -> dict[str, Any]:
        """The call in chat completions' shape (how the trace shows every wire's calls)."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True)
class Turn:
    """One turn: `system`, `user`, `assistant` (text, reasoning, calls) or `tool` (a result).

    `reasoning_field` says where an assistant turn's reasoning goes back ("" for the
    wire's own choice): `reasoning_content`, `reasoning`, `thinking`, or `content`
    (inline `<think>` before the text). `signature` and `redacted` are opaque and sent
    back unchanged (thinking blocks that carry them).
    """

    role: str
    text: str = ""
    reasoning: str = ""
    reasoning_field: str = ""
    signature: str = ""
    redacted: tuple[str, ...] = ()
    calls: tuple[Call, ...] = ()
    call_id: str = ""
    name: str = ""
    is_error: bool = False

    def inline_text(self) -> str:
        """The text with the reasoning before it, inline (`<think>REASONING</think>`), as
        templates that read reasoning from the content take it back."""
        inline = f"<think>{self.reasoning}</think>"
        return inline + (f"\n\n{self.text}" if self.text else "")

    def as_message(self) -> dict[str, Any]:
        """The turn as the trace shows it (chat's message shape, for every wire)."""
        if self.role == "tool":
            return {"role": "tool", "tool_call_id": self.call_id, "content": self.text}
        message: dict[str, Any] = {"role": self.role, "content": self.text}
        if self.role != "assistant":
            return message
        if self.calls:
            message["tool_calls"] = [c.as_chat() for c in self.calls]
        if self.reasoning and self.reasoning_field:
            if self.reasoning_field == "content":
                message["content"] = self.inline_text()
            else:
                message[self.reasoning_field] = self.reasoning
        if self.signature:
            message["reasoning_signature"] = self.signature
        return message


@dataclass(frozen=True)
class ToolSpec:
    """A declared tool: its name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class Request:
    """One model request, the same for every wire.

    `extra` is the caller's extra_body with the wire's thinking fields merged under it
    (what goes out beside the fields the wire renders); `options` are settings only
    some wires send (`context_window` is Ollama's `num_ctx`). `sent`, when set, is called
    with the body as it goes out and the request it was rendered from (`Wire.sent_body`),
    once per request: how the recorder sees the request as sent (`Iteration.prefix_break`).
    `shape`, when set, is applied to the body the wire rendered (`Wire.body`): how an agent
    client reshapes it (`rig_nb.clients`); the wire itself knows no client.

    `stop` (strings the answer ends before; () sends none) and `parallel_tool_calls` (None
    sends nothing; sent only with tools) go out in each wire's own field: chat's `stop`,
    Messages' `stop_sequences`, Ollama's `options.stop`; chat's and Responses'
    `parallel_tool_calls`, Messages' `tool_choice.disable_parallel_tool_use`. A wire
    without the field (`Wire.params`: Responses has no stop, Ollama no
    parallel_tool_calls) refuses the request with a ValueError before anything is sent,
    rather than drop a setting the caller relies on.
    """

    model: str
    turns: tuple[Turn, ...]
    max_tokens: int
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: Any = "auto"
    temperature: float = 0.0
    stream: bool = False
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    response_format: Mapping[str, Any] | None = None
    options: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    stop: tuple[str, ...] = ()
    parallel_tool_calls: bool | None = None
    sent: Callable[[Mapping[str, Any], Request], None] | None = field(
        default=None, compare=False, repr=False
    )
    shape: Callable[[dict[str, Any], Request], dict[str, Any]] | None = field(
        default=None, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        if isinstance(self.stop, str) or not all(isinstance(s, str) and s for s in self.stop):
            raise ValueError("stop must be a tuple of non-empty strings")
        object.__setattr__(self, "stop", tuple(self.stop))
        if self.parallel_tool_calls is not None and not isinstance(self.parallel_tool_calls, bool):
            raise ValueError("parallel_tool_calls must be True, False or None")

    def messages(self) -> list[dict[str, Any]]:
        """The turns as the trace records them."""
        return [t.as_message() for t in self.turns]


# Where `Turn.as_message` puts an assistant turn's reasoning, in the order they are read back.
_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")


def turns_of(messages: list[dict[str, Any]]) -> tuple[Turn, ...]:
    """The turns a trace's messages show (`Turn.as_message` read back), to send them again."""
    turns: list[Turn] = []
    for m in messages:
        role = str(m.get("role", "user"))
        content = m.get("content")
        text = content if isinstance(content, str) else ""
        if role == "tool":
            turns.append(Turn("tool", text, call_id=str(m.get("tool_call_id", ""))))
            continue
        calls = tuple(
            Call(str(c.get("id", "")), str(fn.get("name", "")), str(fn.get("arguments", "")))
            for c in m.get("tool_calls") or []
            if isinstance(c, dict) and isinstance(fn := c.get("function"), dict)
        )
        field = next((k for k in _REASONING_KEYS if isinstance(m.get(k), str) and m[k]), "")
        signature = m.get("reasoning_signature")
        turns.append(
            Turn(
                role,
                text,
                reasoning=m[field] if field else "",
                reasoning_field=field,
                signature=signature if isinstance(signature, str) else "",
                calls=calls,
            )
        )
    return tuple(turns)
