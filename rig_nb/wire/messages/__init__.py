"""The Anthropic Messages wire (`/messages`): `shapes.py` (content blocks, stop reasons,
usage), `stream.py` (events read into content blocks), `serve.py` (the server's side, for
the local servers), `wire.py` (the `Wire`)."""

from .shapes import ANTHROPIC_VERSION, THINKING_BUDGETS, messages_body, parse_message_body
from .stream import MessagesReader, read_message_stream
from .wire import MESSAGES, MessagesWire

__all__ = [
    "ANTHROPIC_VERSION",
    "MESSAGES",
    "THINKING_BUDGETS",
    "MessagesReader",
    "MessagesWire",
    "messages_body",
    "parse_message_body",
    "read_message_stream",
]
