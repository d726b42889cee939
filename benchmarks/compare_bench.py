"""compare() of 8 endpoints, each answering after a fixed 0.2 s, vs the slowest endpoint alone."""

from __future__ import annotations

import statistics
import time
from typing import Any

from common import MODEL, Figure, bench_servers

COUNT = 8
DELAY = 0.2
GOAL = 1.3


def _timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


def measure(samples: int) -> tuple[str, list[Figure]]:
    from rig_nb.compare import Endpoint, compare

    with bench_servers(COUNT, DELAY) as urls:
        endpoints = [Endpoint(f"e{i}", url, MODEL) for i, url in enumerate(urls)]
        compare(endpoints[:1])  # warm-up: pandas import, first connections
        singles: list[list[float]] = [[] for _ in endpoints]
        alls: list[float] = []
        wides: list[float] = []
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
    slowest = max(statistics.median(s) for s in singles)
    all8 = statistics.median(alls)
    wide = statistics.median(wides)
    ratio = all8 / slowest
    lines = [
        f"\ncompare(), {COUNT} endpoints x {pairs // COUNT} default scenarios, "
        f"server delay {DELAY} s, median of {samples}\n",
        "| run | wall time | ratio to slowest endpoint alone |",
        "|---|---|---|",
        f"| slowest single endpoint alone (default concurrency) | {slowest:.3f} s | 1.00x |",
        f"| {COUNT} endpoints, default concurrency | {all8:.3f} s | {ratio:.2f}x |",
        f"| {COUNT} endpoints, concurrency={pairs} | {wide:.3f} s | {wide / slowest:.2f}x |",
        f"\noutcomes seen: {', '.join(sorted(outcomes))}",
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
