"""The chat completions wire (`/chat/completions`): the `Wire` for `api="chat"`.

Requests are chat bodies (`shapes.py`), replies are read by `shapes.parse_reply_body` and
streams of server-sent events by `stream.StreamAssembler`; the openai SDK sends both.
"""

from __future__ import annotations

from ..base import SdkWire
from .shapes import parse_reply_body, request_body
from .stream import StreamAssembler, read_stream

__all__ = ["CHAT", "ChatWire"]


class ChatWire(SdkWire):
    """Chat completions (`/chat/completions`), sent by the openai SDK; server-sent events."""

    name = "chat"
    route = "/chat/completions"
    framing = "sse"
    render = staticmethod(request_body)
    parse_body = staticmethod(parse_reply_body)
    reader_type = StreamAssembler
    read_events = staticmethod(read_stream)


CHAT = ChatWire()
