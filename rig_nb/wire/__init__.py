"""The wires: every field name rig_nb sends or reads lives in this package.

`WIRES` maps each wire's name to its `Wire` (`base.py`): route, headers, framing, how a
wire-neutral `Request` (`turns.py`) becomes a body, how a reply or a stream becomes a
`Reply` (its calls as `Call`s), the thinking switch and the replay field, the model list.
Each wire is a subpackage (`chat/`, `responses/`, `messages/`, `ollama/`: its shapes, its
stream reader, its server side, its `Wire`). What several wires share lives in modules
named for it: `text.py` (lone surrogates, text fields, reasoning field names),
`request_fields.py` (the fields the loop owns, extra_body and response_format checks,
the function-tool object), `counts.py` (usage and server timings), `readers.py` (stream
faults, text deltas), `sse.py` and `ndjson.py` (framing), `utf16.py` (surrogate pairs
across deltas), `thinking.py` (the switch as sent, replay).
"""

from .base import HTTPStatusFailure, Reader, Reply, Sender, Wire
from .chat import CHAT, StreamAssembler, chat_body, parse_reply, read_stream, stream_chunks
from .messages import MESSAGES
from .ollama import OLLAMA
from .request_fields import (
    RESERVED_FIELDS,
    TOOL_CHOICES,
    check_extra_body,
    check_response_format,
    tool_spec,
)
from .responses import RESPONSES
from .sse import iter_events
from .text import REASONING_FIELDS, clean, clean_deep, text_of
from .turns import Call, Request, ToolSpec, Turn, turns_of

# Every wire by name, in the order people meet them.
WIRES: dict[str, Wire] = {wire.name: wire for wire in (CHAT, RESPONSES, MESSAGES, OLLAMA)}

__all__ = [
    "REASONING_FIELDS",
    "RESERVED_FIELDS",
    "TOOL_CHOICES",
    "WIRES",
    "Call",
    "HTTPStatusFailure",
    "Reader",
    "Reply",
    "Request",
    "Sender",
    "StreamAssembler",
    "ToolSpec",
    "Turn",
    "Wire",
    "chat_body",
    "check_extra_body",
    "check_response_format",
    "clean",
    "clean_deep",
    "iter_events",
    "parse_reply",
    "read_stream",
    "stream_chunks",
    "text_of",
    "tool_spec",
    "turns_of",
]
