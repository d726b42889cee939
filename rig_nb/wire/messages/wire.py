"""The Anthropic Messages wire (`/messages`): the `Wire` for `api="messages"`.

Requests and replies are `shapes.py`'s, streams are read into content blocks by
`stream.py`; sent through the guarded httpx client (no Anthropic SDK at run
time), with `x-api-key` when a key is given and `anthropic-version` on every request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import Wire
from ..thinking import check_thinking
from .shapes import (
    ANTHROPIC_VERSION,
    held_thinking,
    messages_body,
    messages_thinking,
    parse_message_body,
)
from .stream import MessagesReader, read_message_stream

if TYPE_CHECKING:
    from ...servers import Server

__all__ = ["MESSAGES", "MessagesWire"]


class MessagesWire(Wire):
    """The Anthropic Messages API (`/messages`); server-sent events."""

    name = "messages"
    # Anthropic's usage names no reasoning tokens.
    usage_keys = frozenset({"prompt_tokens", "completion_tokens", "cached_tokens"})
    route = "/messages"
    framing = "sse"
    switch_keys = frozenset({"thinking"})
    not_found = (
        "this endpoint may have no Anthropic Messages API: /messages answered 404; "
        'api="chat" uses /chat/completions'
    )

    def headers(self, api_key: str) -> dict[str, str]:
        # The key goes in x-api-key only: never in Authorization on this wire.
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    render = staticmethod(messages_body)
    parse_body = staticmethod(parse_message_body)
    reader_type = MessagesReader
    read_events = staticmethod(read_message_stream)

    def thinking_fields(
        self, thinking: bool | str | int | None, server: Server | str
    ) -> dict[str, Any]:
        check_thinking(thinking)
        return messages_thinking(thinking)

    def held(self, fields: dict[str, Any], max_tokens: int) -> dict[str, Any]:
        # The trace records the budget as sent: held to max_tokens - 1.
        return held_thinking(fields, max_tokens)

    def replay_field(self, server: Server | str) -> str:
        return "thinking"


MESSAGES = MessagesWire()
