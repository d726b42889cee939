"""Server-sent events: the `data:` payloads of a byte stream, in linear time.

Lines end in LF, CRLF or a lone CR, as the SSE specification says: a CR ends its
line at once and an LF right after it (in the same chunk or the next) is
skipped, so a stream that ends in CR never waits for one more byte. Comment
lines (`: keep-alive`) and fields other than `data` and `event` are skipped; the
`data` lines of one event are joined with LF, and an event ends at a blank line
(or at the end of the stream). A line that arrives in many small chunks is
joined once, when its end arrives. An event named `error` is an error, whatever
its data holds (`error_objects`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..errors import BackendError
from .error_objects import raise_error_event

if TYPE_CHECKING:
    from .base import Reply

__all__ = ["DONE", "iter_events", "json_events", "read_to_final"]


def _decode(value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise BackendError("ai backend: stream event is not valid UTF-8", kind="protocol") from None


# The event line that says an event is an error (Anthropic's and llama-server's streams).
_NAMED_ERROR = frozenset({b"event: error", b"event:error"})


def _field(line: bytes, data: list[str]) -> None:
    name, _, value = line.partition(b":")
    if name == b"data":
        data.append(_decode(value[1:] if value.startswith(b" ") else value))


def named_events(chunks: Iterable[bytes]) -> Iterator[tuple[bool, str]]:
    """Yield each event as (whether it is named `error`, its data as text)."""
    pending: list[bytes] = []
    data: list[str] = []
    error = False
    after_cr = False  # the last line ended in CR: an LF starting the next chunk belongs to it
    for chunk in chunks:
        if not chunk:
            continue
        if after_cr and chunk[0] == 0x0A:
            chunk = chunk[1:]
            if not chunk:
                after_cr = False
                continue
        after_cr = chunk[-1] == 0x0D
        # bytes.splitlines ends lines at LF, CRLF and lone CR only, in C.
        for piece in chunk.splitlines(keepends=True):
            last = piece[-1]
            if last == 0x0A:
                line = piece[:-2] if piece.endswith(b"\r\n") else piece[:-1]
            elif last == 0x0D:
                line = piece[:-1]
            else:
                pending.append(piece)  # the chunk's last piece, its line not ended yet
                continue
            if pending:
                pending.append(line)
                line = b"".join(pending)
                pending.clear()
            if line:
                if line.startswith(b"event:"):
                    error = line in _NAMED_ERROR
                elif line[0] != 0x3A:  # ":" starts a comment
                    _field(line, data)
            else:
                if data:
                    yield error, "\n".join(data)
                    data.clear()
                error = False  # an event's name ends with it, data or not
    if pending:
        _field(b"".join(pending), data)
    if data:
        yield error, "\n".join(data)


def iter_events(chunks: Iterable[bytes]) -> Iterator[str]:
    """Yield the data of each event, as text."""
    for _, data in named_events(chunks):
        yield data


class _Done:
    """The `[DONE]` that ends an OpenAI-style event stream."""

    def __repr__(self) -> str:
        return "DONE"


DONE: Final = _Done()


def json_events(chunks: Iterable[bytes]) -> Iterator[Any]:
    """Each event's data decoded as JSON; `DONE` for `[DONE]`, after which nothing is read.
    An event that is not JSON is a BackendError (protocol); an event named `error` is the
    BackendError its data says (its text when it is not JSON)."""
    for named, data in named_events(chunks):
        if data == "[DONE]":
            yield DONE
            return
        try:
            event = json.loads(data)
        except (ValueError, RecursionError):
            if named:
                raise_error_event(data, named=True)
            raise BackendError(
                "ai backend: stream event is not valid JSON", kind="protocol"
            ) from None
        if named:
            raise_error_event(event, named=True)
        yield event


class _Ending(Protocol):
    """A reader whose stream ends at an event of its own (`final` is set by it)."""

    @property
    def final(self) -> Reply | None: ...

    def feed(self, event: Any) -> bool: ...

    def fault(self, line: str) -> None: ...


def read_to_final(
    chunks: Iterable[bytes],
    reader: _Ending,
    on_event: Callable[[bool], None] | None,
    terminal: str,
) -> Reply:
    """Feed each JSON event to `reader` until it holds its final reply, which ends the read
    at once whatever the connection does after it; `on_event(grew)` after each. A stream
    that ends first is a BackendError (protocol) naming the `terminal` event it lacked, and
    a fault of the reader's."""
    for event in json_events(chunks):
        if event is DONE:
            break
        grew = reader.feed(event)
        if on_event is not None:
            on_event(grew)
        if reader.final is not None:
            return reader.final
    reader.fault(f"the stream ended without {terminal}")
    raise BackendError(f"ai backend: the stream ended without {terminal}", kind="protocol")
