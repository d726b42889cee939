"""The wires: every field name rig_nb sends or reads lives in this package.

`WIRES` maps each wire's name to its `Wire` (`base.py`): route, headers, framing, how a
wire-neutral `Request` (`turns.py`) becomes a body, how a reply or a stream becomes a
`Reply`, the thinking switch and the replay field, the model list.

`chat` builds chat-completion messages, tools and request bodies and parses replies;
`stream` assembles a reply from stream deltas (and makes deltas from a reply, for the
local servers); `sse` frames server-sent events; `responses` carries the same bodies and
replies over the Responses API (`/responses`), and `responses_serve` is its server side;
`messages`, `messages_stream` and `messages_wire` are the Anthropic Messages wire.
Everything else works on `Reply` and on the messages these functions build.
"""

from .base import HTTPStatusFailure, Reader, Reply, Sender, Wire
from .chat import (
    NO_CHOICES,
    REASONING_FIELDS,
    RESERVED_FIELDS,
    TOOL_CHOICES,
    assistant_message,
    call_arguments,
    call_name,
    chat_body,
    check_extra_body,
    check_response_format,
    clean,
    clean_deep,
    error_detail,
    first_choice,
    parse_models,
    parse_reply,
    parse_reply_body,
    parse_usage,
    system_message,
    text_of,
    tool_message,
    tool_spec,
    user_message,
    uses_max_completion_tokens,
)
from .chat_wire import CHAT
from .messages_wire import MESSAGES
from .ollama_wire import OLLAMA
from .responses_wire import RESPONSES
from .sse import iter_events
from .stream import StreamAssembler, read_stream, stream_chunks
from .turns import Call, Request, ToolSpec, Turn, turns_of

# Every wire by name, in the order people meet them.
WIRES: dict[str, Wire] = {wire.name: wire for wire in (CHAT, RESPONSES, MESSAGES, OLLAMA)}

__all__ = [
    "WIRES",
    "Call",
    "HTTPStatusFailure",
    "Reader",
    "Request",
    "Sender",
    "ToolSpec",
    "Turn",
    "Wire",
    "NO_CHOICES",
    "REASONING_FIELDS",
    "RESERVED_FIELDS",
    "TOOL_CHOICES",
    "Reply",
    "StreamAssembler",
    "assistant_message",
    "call_arguments",
    "call_name",
    "chat_body",
    "check_extra_body",
    "check_response_format",
    "clean",
    "clean_deep",
    "error_detail",
    "first_choice",
    "iter_events",
    "parse_models",
    "parse_reply",
    "parse_reply_body",
    "parse_usage",
    "read_stream",
    "stream_chunks",
    "system_message",
    "text_of",
    "tool_message",
    "tool_spec",
    "turns_of",
    "user_message",
    "uses_max_completion_tokens",
]
