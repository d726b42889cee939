"""compare() of 8 endpoints, each answering after a fixed 0.2 s, vs the slowest endpoint alone.

Besides the figure, two what-if rows that are benchmark code, not rig_nb code:
every pair in flight at once (`concurrency=` the pair count), and that again
with one SSL context shared by every httpx.HTTPTransport (each new Client
otherwise loads the CA bundle, tens of ms of CPU under the GIL). Run alone:

    .venv/bin/python benchmarks/compare_bench.py [--samples N]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from common import MODEL, Figure, bench_servers, run_alone

COUNT = 8
DELAY = 0.2
GOAL = 1.3


def _timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


@contextmanager
def shared_ssl_context() -> Iterator[None]:
    """What-if: every HTTPTransport built meanwhile gets one SSL context made once."""
    import httpx

    ctx = httpx.create_ssl_context()
    original = httpx.HTTPTransport.__init__

    def init(self: httpx.HTTPTransport, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("verify", ctx)
        original(self, *args, **kwargs)

    httpx.HTTPTransport.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        httpx.HTTPTransport.__init__ = original  # type: ignore[method-assign]


def measure(samples: int, quick: bool = False) -> tuple[str, list[Figure]]:
    from rig_nb import Client
    from rig_nb.compare import Endpoint, compare

    with bench_servers(COUNT, DELAY) as urls:
        endpoints = [Endpoint(f"e{i}", url, MODEL) for i, url in enumerate(urls)]
        compare(endpoints[:1])  # warm-up: pandas import, first connections
        singles: list[list[float]] = [[] for _ in endpoints]
        alls: list[float] = []
        wides: list[float] = []
        shared: list[float] = []
        pairs = 0
        outcomes: set[str] = set()
        for _ in range(samples):
            for i, e in enumerate(endpoints):
                singles[i].append(_timed(compare, [e])[0])
            t, df = _timed(compare, endpoints)
            alls.append(t)
            pairs = len(df)
            outcomes |= set(df["outcome"])
            wides.append(_timed(compare, endpoints, concurrency=pairs)[0])
            with shared_ssl_context():
                shared.append(_timed(compare, endpoints, concurrency=pairs)[0])
        ctor = statistics.median(_timed(lambda: Client(urls[0]).close())[0] for _ in range(10))
    slowest = max(statistics.median(s) for s in singles)
    all8 = statistics.median(alls)
    wide = statistics.median(wides)
    best = statistics.median(shared)
    ratio = all8 / slowest
    lines = [
        f"\ncompare(), {COUNT} endpoints x {pairs // COUNT} default scenarios, "
        f"server delay {DELAY} s, median of {samples}\n",
        "| run | wall time | ratio to slowest endpoint alone |",
        "|---|---|---|",
        f"| slowest single endpoint alone (default concurrency) | {slowest:.3f} s | 1.00x |",
        f"| {COUNT} endpoints, default concurrency | {all8:.3f} s | {ratio:.2f}x |",
        f"| what-if: {COUNT} endpoints, concurrency={pairs} | {wide:.3f} s "
        f"| {wide / slowest:.2f}x |",
        f"| what-if: {COUNT} endpoints, concurrency={pairs}, one shared SSL context "
        f"| {best:.3f} s | {best / slowest:.2f}x |",
        f"\noutcomes seen: {', '.join(sorted(outcomes))}",
        f"\n`Client(url)` + `close()` (compare builds one per pair): {ctor * 1000:.1f} ms median",
    ]
    figures = [
        Figure(
            f"compare of {COUNT} endpoints / slowest alone (default concurrency)",
            f"{ratio:.2f}x ({all8:.2f} s vs {slowest:.2f} s)",
            f"<= {GOAL}x",
            ratio <= GOAL,
        )
    ]
    return "\n".join(lines), figures


if __name__ == "__main__":
    sys.exit(run_alone(measure, __doc__ or "", samples=3))
