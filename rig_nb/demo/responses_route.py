"""`POST /v1/responses` on the demo endpoint: every persona, over the Responses wire.

Personas speak chat completions. The request is converted to the chat body a persona
reads (as llama-server converts one), the persona answers as it would on
`/chat/completions`, and its reply (or recorded stream, assembled first) goes back as a
Responses object or event stream, in this one place for every persona. Errors are the
persona's own, sent as JSON and never streamed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..testing import Response, sse_body
from ..wire import StreamAssembler
from ..wire.responses_serve import chat_request, response_events, response_object
from .kit import Persona, Stream, Turn

__all__ = ["answer_responses", "assembled"]

_SSE_HEADERS = {"content-type": "text/event-stream", "cache-control": "no-cache"}


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


def _error(status: int, message: str) -> Response:
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    return Response({"error": error}, status)


def answer_responses(
    raw: bytes,
    personas: Mapping[str, Persona],
    *,
    not_found: Callable[[str], Response],
    piece_chars: int,
    interval: float,
    first_delay: float,
) -> Response | Mapping[str, Any]:
    """The demo's answer to one `/v1/responses` request body."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return _error(400, "request body is not valid JSON")
    if not isinstance(body, dict):
        return _error(400, "request body must be a JSON object")
    try:
        chat = chat_request(body)
        turn = Turn.parse(chat)
    except ValueError as exc:
        return _error(400, str(exc))
    persona = personas.get(turn.model)
    if persona is None:
        return not_found(turn.model)
    reply = persona.reply(chat)
    if isinstance(reply, Stream):
        completion: Any = assembled(reply.events)
    else:
        completion = reply.body if isinstance(reply, Response) and reply.status == 200 else reply
        if not (isinstance(completion, Mapping) and isinstance(completion.get("choices"), list)):
            return reply  # an error: sent as is
    if not turn.streaming:
        return response_object(completion)
    events = response_events(completion, piece_chars=piece_chars)
    stream = sse_body(events, done=False, interval=interval, first_delay=first_delay)
    return Response(stream, headers=_SSE_HEADERS)
