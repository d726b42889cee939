"""The wire: every field name rig_nb sends or reads lives in this package.

`chat` builds chat-completion messages, tools and request bodies and parses replies;
`stream` assembles a reply from stream deltas (and makes deltas from a reply, for the
local servers); `sse` frames server-sent events; `responses` carries the same bodies and
replies over the Responses API (`/responses`), and `responses_serve` is its server side.
Everything else works on `Reply` and on the messages these functions build.
"""

from .chat import (
    NO_CHOICES,
    REASONING_FIELDS,
    RESERVED_FIELDS,
    TOOL_CHOICES,
    Reply,
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
    sdk_arguments,
    system_message,
    text_of,
    tool_message,
    tool_spec,
    user_message,
    uses_max_completion_tokens,
)
from .sse import iter_events
from .stream import StreamAssembler, read_stream, stream_chunks

__all__ = [
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
    "sdk_arguments",
    "system_message",
    "text_of",
    "tool_message",
    "tool_spec",
    "user_message",
    "uses_max_completion_tokens",
]
