"""Newline-delimited JSON (Ollama's stream framing): one JSON value a line, in linear time.

Lines end in LF (a CR before it is dropped) and may be cut anywhere across chunks: a
line that arrives in many chunks is joined once, when its end arrives. Blank lines are
skipped. A line that is not JSON is a BackendError (protocol); so is a stream that ends
inside a line that is not JSON. The size of a line is bounded by the transport's cap on
the whole body (ResponseTooLargeError), never here.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from ..errors import BackendError

__all__ = ["Lines", "decode_line"]


def decode_line(line: bytes) -> Any:
    """One line as JSON; BackendError (protocol) when it is not JSON."""
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        raise BackendError("ai backend: stream line is not valid JSON", kind="protocol") from None


class Lines:
    """The non-blank lines of a byte stream, each without its line end.

    Iterating reads chunks as needed; `ready()` hands over the lines already complete
    in what was read, without reading more (what a server sent after its last line).
    `cut` is True when the stream ended inside a line (that last piece is yielded too).
    """

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._ready: deque[bytes] = deque()
        self._pending: list[bytes] = []
        self._ended = False
        self.cut = False

    def _take(self, chunk: bytes) -> None:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            piece = chunk[start:end]
            start = end + 1
            if self._pending:
                self._pending.append(piece)
                piece = b"".join(self._pending)
                self._pending.clear()
            if piece.endswith(b"\r"):
                piece = piece[:-1]
            if piece.strip():
                self._ready.append(piece)
        if start < len(chunk):
            self._pending.append(chunk[start:])

    def __iter__(self) -> Iterator[bytes]:
        while True:
            while not self._ready and not self._ended:
                chunk = next(self._chunks, None)
                if chunk is None:
                    self._ended = True
                    rest = b"".join(self._pending)
                    self._pending.clear()
                    if rest.strip():
                        self.cut = True
                        self._ready.append(rest)
                elif chunk:
                    self._take(chunk)
            if not self._ready:
                return
            yield self._ready.popleft()

    def ready(self) -> list[bytes]:
        """The complete lines already read and not yet handed out (nothing more is read)."""
        out = list(self._ready)
        self._ready.clear()
        return out
