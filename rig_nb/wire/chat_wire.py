"""The chat completions wire (`/chat/completions`): the `Wire` for `api="chat"`.

Requests are chat bodies (`chat.py`), replies are read by `chat.parse_reply_body` and
streams of server-sent events by `stream.StreamAssembler`; the openai SDK sends both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from .base import Reader, Reply, Sender, Wire
from .chat import parse_reply_body, request_body, sdk_arguments
from .stream import StreamAssembler, read_stream
from .thinking import input_field, thinking_fields
from .turns import Request

__all__ = ["CHAT", "ChatWire"]


class ChatWire(Wire):
    """Chat completions (`/chat/completions`), sent by the openai SDK; server-sent events."""

    name = "chat"
    route = "/chat/completions"
    framing = "sse"

    def body(self, request: Request) -> dict[str, Any]:
        return request_body(request)

    def parse(self, content: bytes) -> Reply:
        return parse_reply_body(content)

    def reader(self) -> Reader:
        return StreamAssembler()

    def read_stream(
        self,
        chunks: Iterable[bytes],
        reader: Reader,
        on_event: Callable[[bool], None] | None = None,
    ) -> Reply:
        assert isinstance(reader, StreamAssembler)
        return read_stream(chunks, reader, on_event)

    def thinking_fields(self, thinking: bool | str | int | None, kind: str) -> dict[str, Any]:
        return thinking_fields(thinking, kind)

    def replay_field(self, kind: str) -> str:
        return input_field(kind)

    @contextmanager
    def send(self, sender: Sender, body: Mapping[str, Any], stream: bool) -> Iterator[Any]:
        params, extra = sdk_arguments(body)
        completions = sender.sdk.chat.completions
        if not stream:
            yield completions.with_raw_response.create(**params, extra_body=extra).http_response
            return
        with completions.with_streaming_response.create(
            **params, stream=True, extra_body=extra
        ) as raw:
            yield raw.http_response

    def models(self, sender: Sender) -> Any:
        return sender.sdk.models.with_raw_response.list().http_response


CHAT = ChatWire()
