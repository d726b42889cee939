"""The Responses API wire (`/responses`): `shapes.py` (input items, output items, usage),
`stream.py` (events read natively into output items), `serve.py` (the server's side, for
the local servers), `wire.py` (the `Wire`)."""

from .shapes import NO_OUTPUT, parse_response, parse_response_body, response_usage, responses_body
from .stream import ResponsesReader, read_response_stream
from .wire import RESPONSES, ResponsesWire

__all__ = [
    "NO_OUTPUT",
    "RESPONSES",
    "ResponsesReader",
    "ResponsesWire",
    "parse_response",
    "parse_response_body",
    "read_response_stream",
    "response_usage",
    "responses_body",
]
