"""What every wire's stream reader shares: the faults a stream's grammar does not allow
(kept, forgiven), and content and reasoning read whole while text deltas arrive."""

from __future__ import annotations

from .utf16 import TextDeltas

__all__ = ["MAX_FAULTS", "DeltaReader", "FaultLog"]

MAX_FAULTS = 20


class FaultLog:
    """What a stream did that its grammar does not allow (`Reply.stream_faults`): each line
    once, the first MAX_FAULTS of them. A reader sets `faults` to a new list."""

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
