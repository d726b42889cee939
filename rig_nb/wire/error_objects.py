"""An error object inside an answer the server began with 200 (a stream's event, or a whole
body), whichever wire's shape it has: the one place it becomes a BackendError.

The shapes: OpenAI's and vLLM's `{"error": {"message", "type", "code"}}` (on every route
llama-server and vLLM serve, streamed too), Ollama's `{"error": "..."}`, Anthropic's
`{"type": "error", "error": {"type", "message"}}`, the Responses API's `{"type": "error",
"code", "message"}`, and any event a server names `error` on its SSE `event:` line
(llama-server's /v1/messages sends `{"code", "message", "type": "server_error"}` so). An
error whose `code` is an HTTP status is that status and kind `http`, as the same refusal
is when it comes before the stream starts (vLLM answers a grammar it cannot compile,
streamed, with 200 and then `{"error": {..., "code": 400}}`); any other is kind `reply`.
The endpoint's words are kept; the boundary redacts them, then cuts them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import BackendError
from .text import clean

__all__ = ["error_object", "error_of", "event_type", "raise_error_event"]

# The endpoint's words kept here (a bound on memory; the boundary cuts them shorter).
_WORDS = 4000


def error_object(value: Any, *, named: bool = False) -> Any:
    """The error an event or a body carries (an object or a string), None when it carries
    none. `named`: the SSE event was named `error`, so whatever it holds is the error."""
    if not isinstance(value, dict):  # decoded JSON: every stream event is read here
        return value if named and isinstance(value, str) else None
    inner = value.get("error")
    kind = value.get("type")
    if named or kind == "error":
        return inner if isinstance(inner, dict | str) and inner else value
    if inner is None or inner == "" or isinstance(kind, str) or value.get("choices"):
        return None
    return inner


def _status(code: Any) -> int | None:
    if isinstance(code, str) and code.isascii() and code.isdigit() and len(code) == 3:
        code = int(code)
    if isinstance(code, int) and not isinstance(code, bool) and 400 <= code <= 599:
        return code
    return None


def error_of(error: Any, where: str) -> BackendError:
    """The BackendError for an error object `error_object` found, in a `where` ("stream" or
    "reply"): with an HTTP status for a `code` that is one (`HTTP 400: <message>`, as a
    refusal before any byte reads), else kind reply (`error in stream: <type>: <message>`)."""
    if isinstance(error, str):
        return BackendError(f"ai backend: error in {where}: {clean(error)[:_WORDS]}", kind="reply")
    if not isinstance(error, Mapping):
        return BackendError(f"ai backend: error in {where}", kind="reply")
    message, name = error.get("message"), error.get("type")
    words = clean(message)[:_WORDS] if isinstance(message, str) else ""
    status = _status(error.get("code"))
    if status is not None:
        text = f"ai backend: HTTP {status}" + (f": {words}" if words else "")
        return BackendError(text, status_code=status, kind="http")
    parts = [clean(name)[:100]] if isinstance(name, str) and name and name != "error" else []
    detail = ": ".join([*parts, words] if words else parts)
    return BackendError(f"ai backend: error in {where}: {detail}", kind="reply")


def raise_error_event(event: Any, *, named: bool = False) -> None:
    """Raise the BackendError of a stream event that is an error, in any wire's shape (a
    reader asks only of an event with an `error` key or of type `error`, unless named)."""
    error = error_object(event, named=named)
    if error is not None:
        raise error_of(error, "stream")


def event_type(event: Any) -> Any:
    """The `type` of a decoded stream event of a typed-event wire (Responses, Messages),
    after the checks every event gets first: a BackendError (kind protocol) for one that
    is not a JSON object, the endpoint's own error for one that carries an error."""
    if not isinstance(event, dict):
        raise BackendError("ai backend: stream event is not a JSON object", kind="protocol")
    if "error" in event or event.get("type") == "error":
        raise_error_event(event)
    return event.get("type")
