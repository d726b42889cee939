"""Server-sent events: the `data:` payloads of a byte stream, in linear time.

Lines end in LF or CRLF; comment lines (`: keep-alive`) and fields other than
`data` are skipped; the `data` lines of one event are joined with LF, and an
event ends at a blank line (or at the end of the stream). A line that arrives
in many small chunks is joined once, when its end arrives.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, Final

from ..errors import BackendError

__all__ = ["DONE", "iter_events", "json_events"]


def _decode(value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise BackendError("ai backend: stream event is not valid UTF-8", kind="protocol") from None


def iter_events(chunks: Iterable[bytes]) -> Iterator[str]:
    """Yield the data of each event, as text."""
    pending: list[bytes] = []
    data: list[str] = []
    for chunk in chunks:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if start < len(chunk):
                    pending.append(chunk[start:])
                break
            line = chunk[start:end]
            start = end + 1
            if pending:
                pending.append(line)
                line = b"".join(pending)
                pending.clear()
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line:
                if data:
                    yield "\n".join(data)
                    data.clear()
                continue
            name, _, value = line.partition(b":")
            if name == b"data":
                data.append(_decode(value[1:] if value.startswith(b" ") else value))
    tail = b"".join(pending)
    if tail.startswith(b"data:"):
        value = tail[5:]
        data.append(_decode(value[1:] if value.startswith(b" ") else value))
    if data:
        yield "\n".join(data)


class _Done:
    """The `[DONE]` that ends an OpenAI-style event stream."""

    def __repr__(self) -> str:
        return "DONE"


DONE: Final = _Done()


def json_events(chunks: Iterable[bytes]) -> Iterator[Any]:
    """Each event's data decoded as JSON; `DONE` for `[DONE]`, after which nothing is read.
    An event that is not JSON is a BackendError (protocol)."""
    for data in iter_events(chunks):
        if data == "[DONE]":
            yield DONE
            return
        try:
            yield json.loads(data)
        except (ValueError, RecursionError):
            raise BackendError(
                "ai backend: stream event is not valid JSON", kind="protocol"
            ) from None
