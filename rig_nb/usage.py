"""Token counts: one reply's, or a run's summed (`Trace.usage()`); a module of its own so
that what renders a trace reads them without importing the trace."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_TOKENS_SAID", "Usage", "count_of", "kept_count", "stated_count"]


# Counts beyond this are not a window, a prompt or a reply any model has: a lie, not a number.
MAX_TOKENS_SAID = 1 << 30


def count_of(value: Any) -> int | None:
    """A token count as a server reported it, and as `Iteration.usage` keeps it: an int
    (not a bool), whatever its size or sign, else None (DESIGN: anything that is not an int
    is dropped)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def kept_count(value: Any) -> int | None:
    """A token count as what judges or renders a trace reads it: an int (not a bool) from 0
    to MAX_TOKENS_SAID, else None. A count past float range, a negative or an absurd one is
    kept in the trace as sent but means nothing here: it marks no context cut, no cache
    reuse, no rate, and no renderer or exporter computes with it."""
    count = count_of(value)
    return count if count is not None and 0 <= count <= MAX_TOKENS_SAID else None


def stated_count(value: Any) -> int | None:
    """A token count a server states (a window, a prompt's size): an int from 1 to
    MAX_TOKENS_SAID, else None (a string, a bool, 0, a negative or absurd number)."""
    count = kept_count(value)
    return count if count else None


@dataclass(frozen=True)
class Usage:
    """Token counts of one reply or a sum of them; None where the server did not report one."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None

    @classmethod
    def of(cls, usage: Mapping[str, Any]) -> Usage:
        """The counts of a usage mapping, each read with `kept_count`."""
        return cls(
            kept_count(usage.get("prompt_tokens")) or 0,
            kept_count(usage.get("completion_tokens")) or 0,
            kept_count(usage.get("reasoning_tokens")),
            kept_count(usage.get("cached_tokens")),
        )

    def __add__(self, other: Usage) -> Usage:
        def both(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            both(self.reasoning_tokens, other.reasoning_tokens),
            both(self.cached_tokens, other.cached_tokens),
        )
