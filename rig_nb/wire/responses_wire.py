"""The Responses wire (`/responses`): the `Wire` for `api="responses"`.

Requests and replies are `responses.py`'s, streams are read natively into output items
(`responses_stream.py`); the openai SDK sends both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from .base import Reader, Reply, Sender, Wire
from .responses import RESPONSES_FIELDS, parse_response_body, responses_body
from .responses_stream import ResponsesReader, read_response_stream
from .thinking import input_field, thinking_fields
from .turns import Request

__all__ = ["RESPONSES", "ResponsesWire"]


class ResponsesWire(Wire):
    """The Responses API (`/responses`), sent by the openai SDK; server-sent events."""

    name = "responses"
    route = "/responses"
    framing = "sse"
    not_found = (
        "this endpoint may have no Responses API: /responses answered 404; "
        'api="chat" uses /chat/completions'
    )

    def body(self, request: Request) -> dict[str, Any]:
        return responses_body(request)

    def parse(self, content: bytes) -> Reply:
        return parse_response_body(content)

    def reader(self) -> Reader:
        return ResponsesReader()

    def read_stream(
        self,
        chunks: Iterable[bytes],
        reader: Reader,
        on_event: Callable[[bool], None] | None = None,
    ) -> Reply:
        assert isinstance(reader, ResponsesReader)
        return read_response_stream(chunks, reader, on_event)

    def thinking_fields(self, thinking: bool | str | int | None, kind: str) -> dict[str, Any]:
        return thinking_fields(thinking, kind)

    def replay_field(self, kind: str) -> str:
        return input_field(kind)

    @contextmanager
    def send(self, sender: Sender, body: Mapping[str, Any], stream: bool) -> Iterator[Any]:
        params = {k: v for k, v in body.items() if k in RESPONSES_FIELDS}
        extra = {k: v for k, v in body.items() if k not in RESPONSES_FIELDS and k != "stream"}
        sdk = sender.sdk.responses
        if not stream:
            yield sdk.with_raw_response.create(**params, extra_body=extra).http_response
            return
        with sdk.with_streaming_response.create(**params, stream=True, extra_body=extra) as raw:
            yield raw.http_response

    def models(self, sender: Sender) -> Any:
        return sender.sdk.models.with_raw_response.list().http_response


RESPONSES = ResponsesWire()
