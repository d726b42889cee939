"""Server-sent events: the `data:` payloads of a byte stream, in linear time.

Lines end in LF or CRLF; comment lines (`: keep-alive`) and fields other than
`data` are skipped; the `data` lines of one event are joined with LF, and an
event ends at a blank line (or at the end of the stream). A line that arrives
in many small chunks is joined once, when its end arrives.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..errors import BackendError

__all__ = ["iter_events"]


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
