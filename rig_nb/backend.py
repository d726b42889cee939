"""The seam between the loop and an endpoint: what the loop, the probe and the doctor use.

`Client` implements `Backend` over HTTP (chat completions today); anything else that
answers the same three calls (an in-process script in tests, another wire) runs the
same loop. The loop hands a backend chat-shaped request bodies built by `rig_nb.wire`
and gets back a parsed `Reply`; it never sees HTTP, the SDK or the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .redact import Redactor
from .wire import Reply, StreamAssembler

__all__ = ["Backend", "Models"]


@dataclass
class Models:
    """The endpoint's model list (`GET /models`) and the response headers that name the server."""

    items: list[dict[str, Any]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)


class Backend(Protocol):
    """An endpoint the loop can run on."""

    # A label for traces (host and port for HTTP); never the key or the path.
    endpoint: str
    # Removes what identifies the endpoint (key, base URL) from text shown to people.
    redact: Redactor
    # The wire: "chat" (/chat/completions) or "responses" (/responses); the trace records it.
    api: str

    @property
    def server_kind(self) -> str:
        """The server kind (`llama.cpp`, `vllm`, ... or `unknown`), found once and cached;
        the loop maps `thinking` and picks the replay field by it."""
        ...

    def chat(self, body: Mapping[str, Any], *, retries: bool = True) -> Reply:
        """One request, not streamed: the reply, or a RigError (BackendError for transport)."""
        ...

    def stream(
        self,
        body: Mapping[str, Any],
        assembler: StreamAssembler,
        *,
        on_event: Callable[[bool], None] | None = None,
        retries: bool = True,
    ) -> Reply:
        """One streamed request fed event by event to `assembler` (which keeps what arrived
        when it fails); `on_event(grew)` after each event."""
        ...

    def list_models(self) -> Models:
        """The model list, once, without retries."""
        ...
