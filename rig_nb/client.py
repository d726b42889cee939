"""Client: the HTTP backend with the loop's entry points, what people use.

`Client(base_url, api_key, ..., api="chat")` is `rig_nb.http_backend.HttpBackend`
(transport, wire, retries, server detection) plus `run`, `run_trace`,
`probe_tool_calling` and `probe_trace`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .http_backend import HttpBackend, Models, check_timing

if TYPE_CHECKING:
    from .loop import RunRequest, RunResult
    from .trace import Trace

__all__ = ["Client", "Models", "check_timing"]


class Client(HttpBackend):
    """An OpenAI-compatible (or Anthropic Messages, or Ollama) endpoint, with nothing
    ambient reaching the wire."""

    def __enter__(self) -> Client:
        return self

    def over(self, api: str) -> Client:
        """This endpoint over another wire: the same credentials, limits and connection
        pool. Close the original, not the copy."""
        twin = super().over(api)
        assert isinstance(twin, Client)
        return twin

    def probe_tool_calling(
        self,
        model: str,
        *,
        tool_choice: str | Mapping[str, Any] | None = "auto",
        stream: bool = False,
        trace: Trace | None = None,
    ) -> None:
        """One trivial single-tool request; None only if the reply holds a usable tool call.

        See `rig_nb.probe`: exactly one request, no retries, no reply text in a
        raised error (which carries `.trace`).
        """
        from .probe import probe

        probe(self, model, tool_choice=tool_choice, stream=stream, trace=trace)

    def probe_trace(
        self,
        model: str,
        *,
        tool_choice: str | Mapping[str, Any] | None = "auto",
        stream: bool = False,
        trace: Trace | None = None,
    ) -> Trace:
        """The probe's finished trace (outcome "ok" or the error class); never a RigError."""
        from .probe import probe_trace

        return probe_trace(self, model, tool_choice=tool_choice, stream=stream, trace=trace)

    def run(self, request: RunRequest, *, trace: Trace | None = None) -> RunResult:
        """Run the tool loop; see `rig_nb.loop.run`."""
        from .loop import run

        return run(self, request, trace=trace)

    def run_trace(self, request: RunRequest, *, trace: Trace | None = None) -> Trace:
        """Run the tool loop and return its finished trace, never raising a RigError."""
        from .loop import run_trace

        return run_trace(self, request, trace=trace)
