"""`POST /v1/responses` on the demo endpoint: every persona, over the Responses wire.

Personas speak chat completions. The request is converted to the chat body a persona
reads (as llama-server converts one), the persona answers as it would on
`/chat/completions`, and its reply (or recorded stream, assembled first) goes back as a
Responses object or event stream, in this one place for every persona. Errors are the
persona's own, sent as JSON and never streamed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..testing import Response, sse_body
from ..wire.responses.serve import chat_request, response_events, response_object
from .kit import Persona, Stream
from .wire_route import Pace, asked, completion_of, openai_error

__all__ = ["answer_responses"]

_SSE_HEADERS = {"content-type": "text/event-stream", "cache-control": "no-cache"}


def answer_responses(
    raw: bytes, personas: Mapping[str, Persona], pace: Pace
) -> Response | Mapping[str, Any]:
    """The demo's answer to one `/v1/responses` request body."""
    ask = asked(raw, personas, chat_request, openai_error)
    if isinstance(ask, Response):
        return ask
    if ask.persona is None:
        return pace.not_found(ask.turn.model)
    reply = ask.persona.reply(ask.chat)
    completion = completion_of(reply)
    if completion is None:
        assert not isinstance(reply, Stream)  # a stream always adds up to a completion
        return reply  # an error: sent as is
    turn = ask.turn
    if not turn.streaming:
        return response_object(completion)
    events = response_events(completion, piece_chars=pace.piece_chars)
    stream = sse_body(events, done=False, interval=pace.interval, first_delay=pace.first_delay)
    return Response(stream, headers=_SSE_HEADERS)
