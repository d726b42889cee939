"""The doctor's `stream_grammar` check: did the streamed replies keep their wire's grammar?

Judged on the streamed requests the doctor already sends (no request of its own),
from each streamed iteration's `stream_faults`: what the stream did that its
grammar does not allow and the reader forgave, and a stream that ended before its
terminal event. A stream that failed with no fault recorded (a deadline, a broken
connection) is not judged: it never said whether it would have conformed.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..trace import Trace

__all__ = ["stream_grammar"]


def _replies(n: int) -> str:
    return f"{n} streamed {'reply' if n == 1 else 'replies'}"


def stream_grammar(traces: Iterable[Trace]) -> tuple[str, str, Trace | None]:
    """(verdict, evidence, trace): `conforms`, `faults: ...` naming each fault once (the
    trace of the first reply that had one), or `n/a` when no streamed reply finished."""
    traces = list(traces)
    streamed = [(t, it) for t in traces for it in t.iterations if it.streamed and it.chunks]
    faults = list(dict.fromkeys(f for _, it in streamed for f in it.stream_faults))
    faulty = [t for t, it in streamed if it.stream_faults]
    judged = [(t, it) for t, it in streamed if it.stream_faults or it.ending != "error"]
    unjudged = len(streamed) - len(judged)
    unfinished = f"; {_replies(unjudged)} ended before its terminal event" if unjudged else ""
    if faults:
        why = f"{len(faulty)} of {_replies(len(streamed))} had faults"
        return "faults: " + "; ".join(faults), why, faulty[0]
    if not judged:
        why = f"no streamed reply to judge{unfinished}"
        return "n/a", why, streamed[0][0] if streamed else (traces[0] if traces else None)
    return "conforms", f"no fault in any of {_replies(len(judged))}{unfinished}", judged[0][0]
