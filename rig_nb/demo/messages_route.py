"""`POST /v1/messages` on the demo endpoint: every persona, over the Anthropic Messages wire.

Personas speak chat completions. The request is converted to the chat body a persona
reads (as llama-server converts one), the persona answers as it would on
`/chat/completions`, and its reply (or recorded stream, assembled first) goes back as a
Messages reply or event stream, in this one place for every persona. Errors are the
persona's own, in Anthropic's error shape, never streamed. A replayed thinking block
whose signature does not match its text is refused, as Anthropic refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..testing import Response, sse_body
from ..wire.messages.serve import (
    bad_signature,
    chat_request,
    error_body,
    message_events,
    message_object,
    sse_event,
)
from .kit import Persona, Stream
from .wire_route import Pace, asked, completion_of

__all__ = ["answer_messages"]

_SSE_HEADERS = {"content-type": "text/event-stream", "cache-control": "no-cache"}


def _error(status: int, message: str, kind: str = "invalid_request_error") -> Response:
    return Response({"type": "error", "error": {"type": kind, "message": message}}, status)


def _refused(body: dict[str, Any]) -> str:
    """What the Messages API refuses before a model sees the request ("" for nothing)."""
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens: field required"
    return bad_signature(body)


def answer_messages(
    raw: bytes, personas: Mapping[str, Persona], pace: Pace
) -> Response | Mapping[str, Any]:
    """The demo's answer to one `/v1/messages` request body."""
    ask = asked(raw, personas, chat_request, _error, _refused)
    if isinstance(ask, Response):
        return ask
    if ask.persona is None:
        missing = pace.not_found(ask.turn.model)
        return Response(error_body(missing.body, missing.status), missing.status)
    reply = ask.persona.reply(ask.chat)
    completion = completion_of(reply)
    if completion is None:
        assert not isinstance(reply, Stream)  # a stream always adds up to a completion
        if isinstance(reply, Response) and isinstance(reply.body, Mapping):
            return Response(error_body(reply.body, reply.status), reply.status, reply.headers)
        return reply  # not JSON (a page, a stream of bytes): sent as is
    turn = ask.turn
    if not turn.streaming:
        return message_object(completion)
    events = [sse_event(e) for e in message_events(completion, piece_chars=pace.piece_chars)]
    stream = sse_body(events, done=False, interval=pace.interval, first_delay=pace.first_delay)
    return Response(stream, headers=_SSE_HEADERS)
