"""The chat completions wire (`/chat/completions`): `shapes.py` (messages, tools, request
bodies, replies), `stream.py` (a reply assembled from stream deltas, and deltas made from a
reply, for the local servers), `wire.py` (the `Wire`)."""

from .shapes import (
    NO_CHOICES,
    assistant_message,
    call_of,
    chat_body,
    first_choice,
    parse_models,
    parse_reply,
    parse_reply_body,
    parse_usage,
    request_body,
    system_message,
    tool_message,
    turn_message,
    user_message,
    uses_max_completion_tokens,
)
from .stream import StreamAssembler, read_stream, stream_chunks
from .wire import CHAT, ChatWire

__all__ = [
    "CHAT",
    "NO_CHOICES",
    "ChatWire",
    "StreamAssembler",
    "assistant_message",
    "call_of",
    "chat_body",
    "first_choice",
    "parse_models",
    "parse_reply",
    "parse_reply_body",
    "parse_usage",
    "read_stream",
    "request_body",
    "stream_chunks",
    "system_message",
    "tool_message",
    "turn_message",
    "user_message",
    "uses_max_completion_tokens",
]
