"""compare(load=16) over an instant loopback server vs raw thread pools making the same chat calls.

Requests per second of the same number of one-request chat runs, in one run of
this script, interleaved: compare at load 16 (groups of 16 copies that start
together, the next group when the last copy has answered), today's plain
compare(concurrency=16), a raw openai SDK thread pool of 16 (free-running, and
making the same groups of 16 one after another), and a raw httpx thread pool of 16.
Then memory (tracemalloc) of compare at load 4 and load 16 over the same rows and
over four times the rows: what it keeps grows with the rows, not with the load.

    .venv/bin/python benchmarks/load_bench.py [--samples N] [--quick]
"""

from __future__ import annotations

import gc
import statistics
import sys
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from common import (
    API_KEY,
    MAX_TOKENS,
    MODEL,
    PROMPT,
    Figure,
    bench_servers,
    run_alone,
    sample_wall_cpu,
    within_sample_ratio,
)

LOAD = 16
GOAL = 0.9


def _memory_kb(fn: Callable[[], object]) -> tuple[float, float]:
    """(retained, peak) KiB traced over `fn()`: what its result keeps after a collection,
    and the most held at once while it ran."""
    gc.collect()
    tracemalloc.start()
    try:
        kept = fn()
        gc.collect()
        current, peak = tracemalloc.get_traced_memory()
        del kept
        return current / 1024, peak / 1024
    finally:
        tracemalloc.stop()


def measure(samples: int, quick: bool = False) -> tuple[str, list[Figure]]:
    import httpx
    import openai

    from rig_nb.compare import Endpoint, Scenario, compare

    groups = 8 if quick else 25
    requests = LOAD * groups
    scenario = Scenario("chat", prompt=PROMPT, max_tokens=MAX_TOKENS)
    with bench_servers(1, 0.0) as urls:
        url = urls[0]
        endpoint = Endpoint("bench", url, MODEL, API_KEY)
        sdk = openai.OpenAI(base_url=url, api_key=API_KEY, max_retries=0)
        raw = httpx.Client(headers={"Authorization": f"Bearer {API_KEY}"})
        body = {
            "model": MODEL,
            "messages": [{"role": "user", "content": PROMPT}],
            "max_tokens": MAX_TOKENS,
        }

        def sdk_call(_: int) -> object:
            return sdk.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": PROMPT}], max_tokens=MAX_TOKENS
            )

        def httpx_call(_: int) -> object:
            reply = raw.post(f"{url}/chat/completions", json=body)
            reply.raise_for_status()
            return reply.json()

        def pool(call: Callable[[int], object]) -> Callable[[], object]:
            def run() -> None:
                with ThreadPoolExecutor(LOAD) as ex:
                    list(ex.map(call, range(requests)))

            return run

        def grouped(call: Callable[[int], object]) -> Callable[[], object]:
            # The sweep's pattern without rig_nb: 16 calls at once, the next 16 when all
            # have answered.
            def run() -> None:
                with ThreadPoolExecutor(LOAD) as ex:
                    for _ in range(groups):
                        list(ex.map(call, range(LOAD)))

            return run

        def swept() -> None:
            df = compare(
                [endpoint], scenarios=[scenario], load=LOAD, repeats=groups, progress=False
            )
            assert len(df) == requests and set(df["outcome"]) == {"ok"}, set(df["outcome"])

        def plain() -> None:
            df = compare(
                [endpoint], scenarios=[scenario], concurrency=LOAD, repeats=requests, progress=False
            )
            assert len(df) == requests and set(df["outcome"]) == {"ok"}

        contenders = {
            f"compare(load={LOAD})": swept,
            f"compare(concurrency={LOAD}), no load": plain,
            f"openai SDK, thread pool of {LOAD}": pool(sdk_call),
            f"openai SDK, {LOAD} at once, group after group": grouped(sdk_call),
            f"httpx, thread pool of {LOAD}": pool(httpx_call),
        }
        # Interleaved, each sample in another order, after a warm-up (imports, first
        # connections): drift and the garbage one contender leaves (collected after each
        # call, untimed) hit all alike.
        wall, _ = sample_wall_cpu(contenders, samples, cleanup=lambda _: gc.collect())
        rates = {name: [requests / t for t in ts] for name, ts in wall.items()}
        medians = {name: statistics.median(r) for name, r in rates.items()}
        base_name = f"openai SDK, thread pool of {LOAD}"
        # Ratios are medians of ratios within one sample: 16 threads on one GIL swing the
        # rate of every contender alike from sample to sample.
        ratios = {name: within_sample_ratio(rates, name, base_name) for name in rates}
        rows = 64

        def memory(load: int, count: int) -> tuple[float, float]:
            return _memory_kb(
                lambda: compare(
                    [endpoint], scenarios=[scenario], load=load, repeats=count // load,
                    progress=False,
                )
            )  # fmt: skip

        memory(4, rows)  # warm-up: first allocations of caches
        sizes = (rows, 4 * rows)
        kib = {(load, n): memory(load, n) for load in (4, LOAD) for n in sizes}
        sdk.close()
        raw.close()
    # What each row adds, retained (the DataFrame and its traces) and at the peak (the copies
    # in flight are the rest of the peak): the same at every load.
    extra = sizes[1] - sizes[0]
    slope = {
        (load, k): (kib[(load, sizes[1])][k] - kib[(load, sizes[0])][k]) / extra
        for load in (4, LOAD)
        for k in (0, 1)
    }
    growth = slope[(LOAD, 0)] / slope[(4, 0)]
    ratio = ratios[f"compare(load={LOAD})"]
    same = within_sample_ratio(
        rates, f"compare(load={LOAD})", f"openai SDK, {LOAD} at once, group after group"
    )
    lines = [
        f"\n{requests} one-request chat runs ({groups} groups of {LOAD}), instant loopback server, "
        f"{samples} interleaved samples: the median rate, and the median of the ratios "
        "within one sample\n",
        "| contender | requests/s | ratio to the openai SDK pool |",
        "|---|---|---|",
        *(f"| {n} | {r:.0f} | {ratios[n]:.2f}x |" for n, r in medians.items()),
        "\nmemory of one compare, tracemalloc (KiB): retained with the DataFrame after a "
        "collection / peak while it ran\n",
        "| load | " + " | ".join(f"{n} rows" for n in sizes) + " | per row, retained / peak |",
        "|---|---|---|---|",
        *(
            f"| {load} | "
            + " | ".join(f"{kib[(load, n)][0]:.0f} / {kib[(load, n)][1]:.0f}" for n in sizes)
            + f" | {slope[(load, 0)]:.2f} / {slope[(load, 1)]:.2f} |"
            for load in (4, LOAD)
        ),
    ]
    figures = [
        Figure(
            f"compare(load={LOAD}) / openai SDK making the same groups of {LOAD}, requests/s",
            f"{same:.2f}x",
            f">= {GOAL}x",
            same >= GOAL,
        ),
        Figure(
            f"compare(load={LOAD}) / openai SDK thread pool, requests per second",
            f"{ratio:.2f}x",
            f">= {GOAL}x",
            ratio >= GOAL,
        ),
        Figure(
            f"memory retained per row, load {LOAD} / load 4",
            f"{growth:.2f}x ({slope[(LOAD, 0)]:.2f} vs {slope[(4, 0)]:.2f} KiB)",
            "<= 1.1x (grows with rows, not load)",
            growth <= 1.1,
        ),
    ]
    return "\n".join(lines), figures


if __name__ == "__main__":
    sys.exit(run_alone(measure, __doc__ or "", samples=9))
