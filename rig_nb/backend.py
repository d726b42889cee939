"""The seam between the loop and an endpoint: what the loop, the probe and the doctor use.

`rig_nb.http_backend.HttpBackend` (and so `Client`) implements `Backend` over HTTP on one
wire; `rig_nb.testing.ScriptedBackend` implements it in process. The loop hands a backend
wire-neutral `Request`s and gets back a parsed `Reply`; it never sees HTTP, the SDK, the
wire's shapes or the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from .redact import Redactor
from .servers import Models
from .wire import Reader, Reply, Request, Wire

__all__ = ["Backend", "Models"]


class Backend(Protocol):
    """An endpoint the loop can run on."""

    # A label for traces (host and port for HTTP); never the key or the path.
    endpoint: str
    # Removes what identifies the endpoint (key, base URL) from text shown to people.
    redact: Redactor
    # The wire requests go over; the trace records its name.
    wire: Wire

    @property
    def api(self) -> str:
        """The wire's name."""
        ...

    @property
    def server_kind(self) -> str:
        """The server kind (`llama.cpp`, `vllm`, ... or `unknown`), found once and cached;
        the loop maps `thinking` and picks the replay field by it."""
        ...

    def chat(self, request: Request, *, retries: bool = True) -> Reply:
        """One request, not streamed: the reply, or a RigError (BackendError for transport)."""
        ...

    def reader(self) -> Reader:
        """A fresh stream reader for this backend's wire."""
        ...

    def stream(
        self,
        request: Request,
        reader: Reader,
        *,
        on_event: Callable[[bool], None] | None = None,
        retries: bool = True,
    ) -> Reply:
        """One streamed request fed event by event to `reader` (which keeps what arrived
        when it fails); `on_event(grew)` after each event."""
        ...

    def list_models(self) -> Models:
        """The model list, once, without retries."""
        ...

    def over(self, api: str) -> Backend:
        """The same endpoint over another wire (ValueError for an unknown name)."""
        ...

    def server_route(self, path: str, body: Mapping[str, Any] | None = None) -> bytes:
        """A route of the server itself (`/props`, `/apply-template`): POST `body`, or GET
        when None; the 2xx body, else a BackendError. One request, no retries."""
        ...
