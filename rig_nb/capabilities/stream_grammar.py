"""The doctor's `stream_grammar` check: did the streamed replies keep their wire's grammar?

Judged on the streamed requests the doctor already sends (no request of its own),
from each streamed iteration's `stream_faults`: what the stream did that its
grammar does not allow and the reader forgave.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..trace import Trace

__all__ = ["stream_grammar"]


def stream_grammar(traces: Iterable[Trace]) -> tuple[str, str, Trace | None]:
    """(verdict, evidence, trace): `conforms`, `faults: ...` naming each fault once (the
    trace of the first reply that had one), or `n/a` when no reply was streamed."""
    traces = list(traces)
    streamed = [(t, it) for t in traces for it in t.iterations if it.streamed and it.chunks]
    if not streamed:
        return "n/a", "no streamed reply to judge", traces[0] if traces else None
    faults = list(dict.fromkeys(f for _, it in streamed for f in it.stream_faults))
    faulty = [t for t, it in streamed if it.stream_faults]
    replies = f"of {len(streamed)} streamed {'reply' if len(streamed) == 1 else 'replies'}"
    if not faults:
        return "conforms", f"no fault in any {replies}", streamed[0][0]
    return "faults: " + "; ".join(faults), f"{len(faulty)} {replies} had faults", faulty[0]
