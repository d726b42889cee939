"""The Responses wire (`/responses`): the `Wire` for `api="responses"`.

Requests and replies are `shapes.py`'s, streams are read natively into output items
(`stream.py`); the openai SDK sends both.
"""

from __future__ import annotations

from ..base import SdkWire
from .shapes import parse_response_body, responses_body
from .stream import ResponsesReader, read_response_stream

__all__ = ["RESPONSES", "ResponsesWire"]


class ResponsesWire(SdkWire):
    """The Responses API (`/responses`), sent by the openai SDK; server-sent events."""

    name = "responses"
    route = "/responses"
    framing = "sse"
    not_found = (
        "this endpoint may have no Responses API: /responses answered 404; "
        'api="chat" uses /chat/completions'
    )

    params = frozenset({"parallel_tool_calls"})  # the Responses API has no stop

    render = staticmethod(responses_body)
    parse_body = staticmethod(parse_response_body)
    reader_type = ResponsesReader
    read_events = staticmethod(read_response_stream)


RESPONSES = ResponsesWire()
