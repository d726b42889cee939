"""Doctor check `concurrency`: the endpoint under four requests at once.

One probe alone, then four probes together, each asking for a call with its own nonce as
the argument (the lone one too, so the five ask alike and the ratio compares replies of
one kind, not a short call with four long ones), none retried. R is the four's wall time
over the lone one's: `parallel (Rx)` when R < 2, `partly parallel (Rx)` when 2 <= R < 3,
`serialized (Rx)` when R >= 3 (R rounded to one decimal first), `errors under load: 429
x2` (each status, or the failure's kind, and its count), or `crossed` when a reply carried
another probe's nonce (a tool-call parser that keeps state across requests: vLLM #48089,
mlx-lm #965). A lone probe with no reply is its error verdict, and the four are not sent.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import Counter
from typing import TYPE_CHECKING

from .._boundary import current_scope, request_scope
from ..errors import BackendError, Cancelled
from ..probe import PROBE_MAX_TOKENS, PROBE_TOOL
from ..record import as_received, record_one
from ..trace import Trace
from ..wire import Reply, Request, Turn
from .advice import advice

if TYPE_CHECKING:
    from ..backend import Backend
    from ..servers import Server

__all__ = ["CONCURRENCY_CHECKS", "CONCURRENT_PROBES", "concurrency_check", "concurrency_verdict"]

CONCURRENCY_CHECKS = ("concurrency",)
CONCURRENT_PROBES = 4
# Below this, a latency is scheduling noise on a loaded machine, not the server's work: the
# lone probe counts as taking at least this long, so an instant server reads as parallel.
_MIN_LONE_S = 0.05


def _prompt(marker: str) -> str:
    return f"Call the ping tool now with message '{marker}'. Do not answer in text."


def concurrency_verdict(lone_s: float, wall_s: float, failures: list[str], crossed: bool) -> str:
    """The verdict from the lone probe's latency, the four's wall time, the four's
    failures (a status or a kind each) and whether a reply carried another's nonce."""
    if crossed:
        return "crossed"
    if failures:
        counts = Counter(failures)
        return "errors under load: " + ", ".join(f"{what} x{n}" for what, n in counts.items())
    ratio = round(wall_s / max(lone_s, _MIN_LONE_S), 1)
    if ratio < 2:
        return f"parallel ({ratio:.1f}x)"
    if ratio < 3:
        return f"partly parallel ({ratio:.1f}x)"
    return f"serialized ({ratio:.1f}x)"


def _failure(trace: Trace) -> str:
    exc = trace.exception
    if isinstance(exc, BackendError):
        return str(exc.status_code) if exc.status_code is not None else exc.kind
    return trace.outcome


def _tokens(trace: Trace) -> str:
    counted = [it.usage.get("completion_tokens") for it in trace.iterations]
    return "?" if None in counted or not counted else str(sum(n or 0 for n in counted))


def _probe(client: Backend, model: str, marker: str, copy: int) -> tuple[Trace, Reply | None]:
    """One concurrency probe, recorded (its calls as received, never run)."""
    body = Request(model, (Turn("user", _prompt(marker)),), PROBE_MAX_TOKENS, tools=(PROBE_TOOL,))
    settings = {"kind": "concurrency", "copy": copy, "max_tokens": PROBE_MAX_TOKENS}
    trace, reply = record_one(client, body, settings)
    if reply is not None:
        trace.iterations[0].tool_calls.extend(as_received(reply.tool_calls))
    return trace, reply


def concurrency_check(
    client: Backend, model: str, server: Server, lone: Trace | None = None
) -> tuple[str, str, str, Trace | None]:
    """(verdict, evidence, advice, trace) of four probes at once against a lone one: `lone`
    when given, else one sent first, asked as the four are (five requests in all)."""
    if lone is None:
        lone = _probe(client, model, f"nonce-{secrets.token_hex(6)}", -1)[0]
    first = lone.iterations[0] if lone.iterations else None
    if first is None or first.ending == "error":
        exc = lone.exception
        if isinstance(exc, Cancelled):
            return "cancelled", "", "", lone
        status = exc.status_code if isinstance(exc, BackendError) else None
        verdict = "error" if status is None else f"error {status}"
        return verdict, "the lone probe got no reply: nothing to compare with", "", lone
    markers = [f"nonce-{secrets.token_hex(6)}" for _ in range(CONCURRENT_PROBES)]
    traces: list[Trace | None] = [None] * CONCURRENT_PROBES
    spans: list[tuple[float, float]] = [(0.0, 0.0)] * CONCURRENT_PROBES
    outer = current_scope()
    cancelled = outer.cancelled if outer is not None else (lambda: False)
    if cancelled():
        if outer is not None:
            outer.stopped = True
        return "cancelled", "", "", None
    start = threading.Barrier(CONCURRENT_PROBES)
    sent = [0] * CONCURRENT_PROBES
    stopped = [False] * CONCURRENT_PROBES

    def one(i: int) -> None:
        # The calling thread's scope does not reach this one: its cancel is passed on, and
        # the calling thread counts what was sent.
        with request_scope(planned=1, cancel=cancelled) as scope:
            start.wait()
            began = time.perf_counter()
            trace = _probe(client, model, markers[i], i)[0]
            spans[i] = (began, time.perf_counter())
        traces[i] = trace
        sent[i], stopped[i] = scope.done, scope.stopped

    threads = [
        threading.Thread(target=one, args=(i,), daemon=True) for i in range(CONCURRENT_PROBES)
    ]
    for t in threads:
        t.start()
    for i, t in enumerate(threads):
        t.join()
        if outer is not None:
            for _ in range(sent[i]):
                outer.done += 1
                outer.model_requests += 1
                outer.report()
    done = [t for t in traces if t is not None]
    if any(stopped) or any(isinstance(t.exception, Cancelled) for t in done):
        if outer is not None:
            outer.stopped = True
        return "cancelled", "", "", done[0] if done else None
    wall = max(end for _, end in spans) - min(began for began, _ in spans)
    received = [t.received() for t in done]
    crossed = [
        (i, j)
        for i, said in enumerate(received)
        for j, marker in enumerate(markers)
        if j != i and marker in said
    ]
    failures = [_failure(t) for t in done if t.iterations and t.iterations[0].ending == "error"]
    verdict = concurrency_verdict(first.latency_s, wall, failures, bool(crossed))
    # Output tokens beside the times: a ratio over replies of other lengths says less.
    tokens = [_tokens(t) for t in done]
    evidence = (
        f"lone probe {first.latency_s:.2f} s ({_tokens(lone)} tokens out); "
        f"{CONCURRENT_PROBES} at once {wall:.2f} s ({', '.join(tokens)} tokens out)"
        f"; {len(failures)} failed"
    )
    if crossed:
        evidence += f"; probe {crossed[0][0]}'s reply carried probe {crossed[0][1]}'s nonce"
    shown = (
        done[crossed[0][0]]
        if crossed
        else next((t for t in done if t.iterations and t.iterations[0].ending == "error"), done[0])
    )
    return verdict, evidence, advice(server, "concurrency", verdict, auto=""), shown
