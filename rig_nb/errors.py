"""Errors raised by rig_nb.

The tree, drawn once::

    RigError                      base; .trace holds the partial trace of a run
    +-- NoToolCallingError        the endpoint answered without a tool call
    +-- OutputLimitError          finish_reason "length": the reply was truncated
    +-- IterationLimitError       the tool loop hit a cap (rounds, or calls in one reply)
    +-- ResponseTooLargeError     the decompressed response body exceeded the cap
    +-- NotJSONError              no '{' in the reply
    +-- InvalidJSONError          '{' present, but no candidate parsed as an object
    +-- BackendError              transport or API failure ("ai backend: ..."); .kind says which
    +-- SkillError                broken or duplicate skill files
    +-- Cancelled                 the caller cancelled the work (a notebook's Cancel button)

Foreign exceptions (openai, httpx) are mapped to these in one place,
`rig_nb._backend_errors.backend_error`; a BackendError never carries the base URL or
the key in its message, repr or chained causes.

`BackendError.kind` names the failure for people and tools (`KINDS`):

    http       the endpoint answered with an HTTP error status (status_code is set)
    timeout    no data for longer than the Client's timeout (connect or read)
    deadline   the request as a whole ran past the Client's deadline
    connect    nothing answered at the address (refused, name not resolved)
    tls        the TLS handshake failed (for example https against an http port)
    protocol   not HTTP, or a broken stream (connection dropped, malformed events)
    reply      a 2xx whose body is not a chat completion
    context    a 4xx saying the prompt does not fit the server's context window
               (context_window and prompt_tokens hold the server's numbers, when given)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from .trace import Trace

__all__ = [
    "KINDS",
    "Kind",
    "BackendError",
    "Cancelled",
    "IterationLimitError",
    "InvalidJSONError",
    "NoToolCallingError",
    "NotJSONError",
    "OutputLimitError",
    "ResponseTooLargeError",
    "RigError",
    "SkillError",
]


class RigError(Exception):
    """Base class of every error rig_nb raises on purpose."""

    default_message = "rig error"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(self.default_message if message is None else message)
        self.trace: Trace | None = None

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class NoToolCallingError(RigError):
    """The endpoint answered a tool-calling request without a tool call."""

    default_message = "backend did not return a tool call"


class OutputLimitError(RigError):
    """The reply hit the output token limit (finish_reason "length")."""

    default_message = "reply hit the output token limit"


class IterationLimitError(RigError):
    """The tool loop hit the iteration cap or the per-reply tool call cap."""

    default_message = "tool loop hit the iteration limit"


class ResponseTooLargeError(RigError):
    """The decompressed response body exceeds the configured cap."""

    default_message = "response body exceeds the configured cap"


class NotJSONError(RigError):
    """The reply holds no '{' at all."""

    default_message = "reply is not JSON"


class InvalidJSONError(RigError):
    """The reply holds '{' but no candidate decodes to a JSON object."""

    default_message = "reply is not valid JSON"


Kind = Literal["http", "timeout", "deadline", "connect", "tls", "protocol", "reply", "context"]
KINDS: tuple[Kind, ...] = get_args(Kind)


class BackendError(RigError):
    """A transport or API failure; message starts with "ai backend: "; `kind` is one of KINDS."""

    default_message = "ai backend: request failed"

    def __init__(
        self,
        message: str | None = None,
        *,
        status_code: int | None = None,
        kind: Kind | None = None,
        context_window: int | None = None,
        prompt_tokens: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        # kind "context": the window and the prompt size, when the server's error gave them.
        self.context_window = context_window
        self.prompt_tokens = prompt_tokens
        if kind is None:
            kind = "http" if status_code is not None else "reply"
        if kind not in KINDS:
            raise ValueError(f"unknown BackendError kind {kind!r}")
        self.kind: Kind = kind


class SkillError(RigError):
    """One or more skill files are broken or duplicated; the message names each."""

    default_message = "broken skill files"


class Cancelled(RigError):
    """The caller cancelled the work: no request was sent after it, the one in flight was cut."""

    default_message = "cancelled"
