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
    """A token count as a server reported it and a trace keeps it: an int (not a bool) from
    0 to MAX_TOKENS_SAID, else None. Every count an endpoint sends is read through this (a
    count past float range, a negative or an absurd one is not reported), and whatever
    renders a trace reads its counts through it again, so a trace built by hand or read
    from a file renders too."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_TOKENS_SAID else None


# The name the trace's readers use: the same rule.
kept_count = count_of


def stated_count(value: Any) -> int | None:
    """A token count a server states (a window, a prompt's size): an int from 1 to
    MAX_TOKENS_SAID, else None (a string, a bool, 0, a negative or absurd number)."""
    count = count_of(value)
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
        """The counts of a usage mapping, each read with `count_of`."""
        return cls(
            count_of(usage.get("prompt_tokens")) or 0,
            count_of(usage.get("completion_tokens")) or 0,
            count_of(usage.get("reasoning_tokens")),
            count_of(usage.get("cached_tokens")),
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
