"""`POST /v1/messages` on the demo endpoint: every persona, over the Anthropic Messages wire.

Personas speak chat completions. The request is converted to the chat body a persona
reads (as llama-server converts one), the persona answers as it would on
`/chat/completions`, and its reply (or recorded stream, assembled first) goes back as a
Messages reply or event stream, in this one place for every persona. Errors are the
persona's own, in Anthropic's error shape, never streamed. A replayed thinking block
whose signature does not match its text is refused, as Anthropic refuses it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ..testing import Response, sse_body
from ..wire.messages_serve import (
    bad_signature,
    chat_request,
    error_body,
    message_events,
    message_object,
    sse_event,
)
from .kit import Persona, Stream, Turn
from .responses_route import assembled

__all__ = ["answer_messages"]

_SSE_HEADERS = {"content-type": "text/event-stream", "cache-control": "no-cache"}


def _error(status: int, message: str, kind: str = "invalid_request_error") -> Response:
    return Response({"type": "error", "error": {"type": kind, "message": message}}, status)


def answer_messages(
    raw: bytes,
    personas: Mapping[str, Persona],
    *,
    not_found: Callable[[str], Response],
    piece_chars: int,
    interval: float,
    first_delay: float,
) -> Response | Mapping[str, Any]:
    """The demo's answer to one `/v1/messages` request body."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return _error(400, "request body is not valid JSON")
    if not isinstance(body, dict):
        return _error(400, "request body must be a JSON object")
    if not isinstance(body.get("max_tokens"), int):
        return _error(400, "max_tokens: field required")
    wrong = bad_signature(body)
    if wrong:
        return _error(400, wrong)
    try:
        chat = chat_request(body)
        turn = Turn.parse(chat)
    except ValueError as exc:
        return _error(400, str(exc))
    persona = personas.get(turn.model)
    if persona is None:
        missing = not_found(turn.model)
        return Response(error_body(missing.body, missing.status), missing.status)
    reply = persona.reply(chat)
    if isinstance(reply, Stream):
        completion: Any = assembled(reply.events)
    else:
        completion = reply.body if isinstance(reply, Response) and reply.status == 200 else reply
        if not (isinstance(completion, Mapping) and isinstance(completion.get("choices"), list)):
            if isinstance(reply, Response) and isinstance(reply.body, Mapping):
                return Response(error_body(reply.body, reply.status), reply.status, reply.headers)
            return reply  # not JSON (a page, a stream of bytes): sent as is
    if not turn.streaming:
        return message_object(completion)
    events = [sse_event(e) for e in message_events(completion, piece_chars=piece_chars)]
    stream = sse_body(events, done=False, interval=interval, first_delay=first_delay)
    return Response(stream, headers=_SSE_HEADERS)
