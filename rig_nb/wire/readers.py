"""What every wire's stream reader shares: the faults a stream's grammar does not allow
(kept, forgiven), and content and reasoning read whole while text deltas arrive."""

from __future__ import annotations

from typing import Any

from .text import clean
from .utf16 import TextDeltas

__all__ = ["MAX_FAULTS", "DeltaReader", "FaultLog", "quoted"]

MAX_FAULTS = 20
# A name a fault quotes from a stream is kept whole up to this (a bound on memory): it may
# hold a key, which the recording redacts before it cuts the line (a cut key is not found).
_QUOTED_CHARS = 1000


def quoted(value: Any) -> str:
    """A name a stream sent, as a fault line quotes it (the repr of its text; a value that is
    not a string by its type's name)."""
    return repr(clean(value)[:_QUOTED_CHARS]) if isinstance(value, str) else type(value).__name__


class FaultLog:
    """What a stream did that its grammar does not allow (`Reply.stream_faults`): each line
    once, the first MAX_FAULTS of them; a stream that ended before its terminal event is
    one too. A reader sets `faults` to a new list."""

    faults: list[str]

    def fault(self, line: str) -> None:
        """Record one stream fault (a short line), once; the first MAX_FAULTS are kept."""
        if len(self.faults) < MAX_FAULTS and line not in self.faults:
            self.faults.append(line)


class DeltaReader(FaultLog):
    """A reader whose content and reasoning arrive as text deltas (`TextDeltas`): what
    arrived so far reads whole at any time."""

    _content: TextDeltas
    _reasoning: TextDeltas

    @property
    def content(self) -> str:
        return self._content.live

    @property
    def reasoning(self) -> str:
        return self._reasoning.live
