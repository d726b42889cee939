"""Trace.prefix_reuse is linear: per-iteration cost on a 10,000-iteration trace vs 1,000.

The goal is a ratio against the smaller trace measured in the same run (at most 2x per
iteration; the fastest of the samples of each, taken in turn, so that a busy machine's
noise falls on both), never a wall-clock figure. Run alone:

    .venv/bin/python benchmarks/prefix_reuse_bench.py [--samples N]
"""

from __future__ import annotations

import sys
import time

from rig_nb import Trace
from rig_nb.trace import Iteration

GOAL = 2.0


def trace_of(n: int) -> Trace:
    """A run whose prompt grows every turn and whose server reports a cached prefix."""
    return Trace(
        iterations=[
            Iteration(index=i, usage={"prompt_tokens": 100 * (i + 1), "cached_tokens": 100 * i})
            for i in range(n)
        ]
    )


def per_iteration_s(sizes: tuple[int, ...], samples: int) -> list[float]:
    """The fastest time per iteration of each size, the sizes sampled in turn."""
    traces = [trace_of(n) for n in sizes]
    best = [float("inf")] * len(sizes)
    for _ in range(samples):
        for k, trace in enumerate(traces):
            start = time.perf_counter()
            shares = trace.prefix_reuse
            best[k] = min(best[k], time.perf_counter() - start)
            assert len(shares) == sizes[k] and shares[-1] == 1.0
    return [t / n for t, n in zip(best, sizes, strict=True)]


def main() -> int:
    samples = int(sys.argv[sys.argv.index("--samples") + 1]) if "--samples" in sys.argv else 7
    small, large = per_iteration_s((1_000, 10_000), samples)
    ratio = large / small
    print(f"prefix_reuse: {small * 1e9:.0f} ns/iteration at 1,000, {large * 1e9:.0f} at 10,000")
    print(f"ratio {ratio:.2f} (goal <= {GOAL}): {'ok' if ratio <= GOAL else 'MISSED'}")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
