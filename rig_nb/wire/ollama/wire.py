"""Ollama's native wire (`/api/chat`): the `Wire` for `api="ollama"`.

Its routes hang off the base URL without its trailing `/v1`: `POST /api/chat`, `GET
/api/tags` (the models), `POST /api/show`, `GET /api/version`. Requests and replies are
`shapes.py`'s, NDJSON streams `stream.py`'s; sent through the guarded httpx
client (no Ollama SDK at run time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import BackendError
from ..base import Reply, Wire
from ..thinking import check_thinking
from .shapes import ollama_body, parse_chat_body, parse_tags
from .stream import OllamaReader, read_ollama_stream

if TYPE_CHECKING:
    from ...servers import Server

__all__ = ["OLLAMA", "OllamaWire"]


class OllamaWire(Wire):
    """Ollama's `/api/chat`, NDJSON streams; `thinking` is its `think` switch."""

    name = "ollama"
    # prompt_eval_count and eval_count only.
    usage_keys = frozenset({"prompt_tokens", "completion_tokens"})
    route = "/api/chat"
    models_route = "/api/tags"
    framing = "ndjson"
    switch_keys = frozenset({"think"})
    options = frozenset({"context_window"})  # sent as options.num_ctx
    params = frozenset({"stop"})  # options.stop; /api/chat has no parallel_tool_calls
    not_found = (
        "this endpoint may not be Ollama: /api/chat answered 404 (Ollama serves it at the "
        'base URL without /v1); api="chat" uses /v1/chat/completions'
    )

    def root(self, base_url: str) -> str:
        return base_url.removesuffix("/v1")

    render = staticmethod(ollama_body)
    reader_type = OllamaReader
    read_events = staticmethod(read_ollama_stream)

    def parse(self, content: bytes) -> Reply:
        try:
            return parse_chat_body(content)
        except BackendError as exc:
            if b"\n" not in content.strip() or content.lstrip()[:1] != b"{":
                raise
            # NDJSON lines to `stream: false` (a proxy that streams whatever it is asked):
            # read as the stream they are, and say so.
            reader = OllamaReader()
            reader.fault("NDJSON lines in reply to stream: false")
            try:
                return read_ollama_stream([content], reader)
            except BackendError:
                raise exc from None

    def thinking_fields(
        self, thinking: bool | str | int | None, server: Server | str
    ) -> dict[str, Any]:
        """`think`: False, True, or the effort (gpt-oss takes one); a token budget sends
        True (Ollama takes no budget), 0 sends False. The same on every server kind."""
        check_thinking(thinking)
        if thinking is None:
            return {}
        if isinstance(thinking, bool | str):
            return {"think": thinking}
        return {"think": thinking > 0}

    def replay_field(self, server: Server | str) -> str:
        return "thinking"

    def parse_models(self, content: bytes) -> list[dict[str, Any]]:
        return parse_tags(content)


OLLAMA = OllamaWire()
