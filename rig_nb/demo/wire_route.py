"""What every wire's demo route shares: a request body read into the chat turn a persona
answers, and the persona's reply as the chat completion it adds up to.

Personas speak chat completions. A wire's route (`responses_route.py`, `messages_route.py`,
`ollama_route.py`) converts its request with its wire's server side (`wire/*_serve.py`),
asks the persona through `asked`, and sends the completion back in its own shape.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..testing import Response
from ..wire import StreamAssembler
from .kit import Heard, Persona, Stream

__all__ = ["Asked", "Pace", "assembled", "asked", "completion_of", "openai_error"]


def assembled(events: Iterable[Mapping[str, Any] | str]) -> dict[str, Any]:
    """A recorded chat stream as the chat.completion body it adds up to."""
    assembler = StreamAssembler()
    for event in events:
        if isinstance(event, Mapping):
            assembler.feed(dict(event))
    reply = assembler.reply()
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    body: dict[str, Any] = {
        "id": "chatcmpl-recorded",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
    }
    if reply.usage:
        body["usage"] = {
            "prompt_tokens": reply.usage.get("prompt_tokens", 0),
            "completion_tokens": reply.usage.get("completion_tokens", 0),
        }
    return body


def openai_error(status: int, message: str, kind: str = "invalid_request_error") -> Response:
    """An error answer in the OpenAI shape (the chat and Responses routes')."""
    error = {"message": message, "type": kind, "param": None, "code": None}
    return Response({"error": error}, status)


@dataclass(frozen=True)
class Pace:
    """How the demo streams and what it says for an unknown model, for every wire's route."""

    not_found: Callable[[str], Response]
    piece_chars: int
    interval: float
    first_delay: float


@dataclass
class Asked:
    """A request a persona can answer: the wire's body, the chat body it reads, its turn."""

    body: dict[str, Any]
    chat: dict[str, Any]
    turn: Heard
    persona: Persona | None  # None: no persona of that name


def asked(
    raw: bytes,
    personas: Mapping[str, Persona],
    to_chat: Callable[[dict[str, Any]], dict[str, Any]],
    error: Callable[[int, str], Response],
    check: Callable[[dict[str, Any]], str] | None = None,
) -> Asked | Response:
    """`raw` read as the wire's request and converted with `to_chat`; a 400 in the wire's
    own error shape (`error`) for a body that is not a JSON object, fails `check` (the
    wire's own refusals: a message, "" to pass) or cannot be converted."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return error(400, "request body is not valid JSON")
    if not isinstance(body, dict):
        return error(400, "request body must be a JSON object")
    refused = check(body) if check is not None else ""
    if refused:
        return error(400, refused)
    try:
        chat = to_chat(body)
        turn = Heard.parse(chat)
    except ValueError as exc:
        return error(400, str(exc))
    return Asked(body, chat, turn, personas.get(turn.model))


def completion_of(reply: Any) -> Mapping[str, Any] | None:
    """The chat completion a persona's reply adds up to (a recorded stream assembled);
    None for an error or anything else that is not one."""
    if isinstance(reply, Stream):
        return assembled(reply.events)
    completion = reply.body if isinstance(reply, Response) and reply.status == 200 else reply
    if isinstance(completion, Mapping) and isinstance(completion.get("choices"), list):
        return completion
    return None
