"""Agent client profiles: a profile-shaped run's client CPU vs the same run without one.

    .venv/bin/python benchmarks/clients_bench.py [--samples N] [--quick]

Against benchmarks/server.py in a child process, zero delay: for each profile of
`rig_nb.clients.CLIENTS`, a batch of the two-round `add(2, 2)` tool run over the
profile's wire with `client=NAME`, and the same batch without it (streamed as the profile
streams), interleaved in one sample. Goal: CPU (this process only) within 1.05x of the
run without a profile (DESIGN, Round 5).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

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
from contenders import ADD_SCHEMA

from rig_nb import Client, RunRequest, Tool
from rig_nb.clients import CLIENTS

GOAL = 1.05
RUNS = 40  # tool runs per batch: enough CPU per timing to be read above the noise


def _batch(client: Client, request: RunRequest, runs: int) -> Callable[[], None]:
    def run() -> None:
        for _ in range(runs):
            assert client.run(request).text.strip() == "4"

    return run


def measure(samples: int, quick: bool = False) -> tuple[str, list[Figure]]:
    runs = RUNS // 4 if quick else RUNS
    add = Tool("add", "Add two integers.", ADD_SCHEMA, lambda a: str(a["a"] + a["b"]))
    figures: list[Figure] = []
    lines = [
        f"\nAgent client profiles: batches of {runs} two-round tool runs, {samples} samples, "
        "interleaved; CPU of this process; ratios are medians of within-sample ratios\n",
        "| profile | wire | streamed | CPU without | CPU with | ratio |",
        "|---|---|---|---|---|---|",
    ]
    with bench_servers() as (url,):
        for name, profile in CLIENTS.items():
            with Client(url, API_KEY, api=profile.api) as client:
                plain = RunRequest(
                    MODEL, MAX_TOKENS, prompt=PROMPT, tools=(add,), stream=profile.stream
                )
                shaped = RunRequest(
                    MODEL,
                    MAX_TOKENS,
                    prompt=PROMPT,
                    tools=(add,),
                    stream=profile.stream,
                    client=name,
                )
                _, cpu = sample_wall_cpu(
                    {"plain": _batch(client, plain, runs), "shaped": _batch(client, shaped, runs)},
                    samples,
                )
            ratio = within_sample_ratio(cpu, "shaped", "plain")
            per = [sum(cpu[k]) / len(cpu[k]) / runs * 1000 for k in ("plain", "shaped")]
            lines.append(
                f"| {name} | {profile.api} | {profile.stream} | {per[0]:.2f} ms | "
                f"{per[1]:.2f} ms | {ratio:.3f} |"
            )
            figures.append(
                Figure(
                    f"{name} run CPU, with / without the profile",
                    f"{ratio:.3f}x",
                    f"<= {GOAL}x",
                    ratio <= GOAL,
                )
            )
    return "\n".join(lines), figures


if __name__ == "__main__":
    sys.exit(run_alone(measure, __doc__ or "", samples=7))
