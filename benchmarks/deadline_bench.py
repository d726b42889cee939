"""The deadline: a dripping server and a silent one against `Client(deadline=D, timeout=10)`.

    .venv/bin/python benchmarks/deadline_bench.py [--samples N] [--quick]

For D = 0.5, 1 and 2 s, the wall time of one `Client.run` until it raises
`BackendError` (kind "deadline"), over D; goal <= 1.5x. The servers run in
child processes (benchmarks/server.py):
- drip: answers 200 at once, then one byte every 50 ms forever, so every read
  returns long before the 10 s read timeout; asked unstreamed (a JSON body of
  spaces) and streamed (`: keep-alive` comments, byte by byte);
- silent: accepts the connection and never reads or answers.
Any other ending (another error, a reply) is reported as a miss. Threads and
open file descriptors of this process are counted before the first request,
after the last (the Clients still open), and after closing the Clients: a cut
request must leave neither behind.
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from typing import Any

from common import API_KEY, MODEL, Figure, bench_servers, run_alone

DEADLINES = (0.5, 1.0, 2.0)
TIMEOUT = 10.0
GOAL = 1.5
CASES = {
    "drip, unstreamed": ("drip", False),
    "drip, streamed (keep-alive bytes)": ("drip", True),
    "silent (accepts, never answers)": ("silent", False),
}


def _open_fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return -1


def _cut(client: Any, request: Any) -> tuple[float, str]:
    """Wall seconds until the run ended, and how it ended ("deadline" when as expected)."""
    from rig_nb import BackendError

    t0 = time.perf_counter()
    try:
        client.run(request)
        how = "a reply (no error)"
    except BackendError as exc:
        how = exc.kind if exc.kind == "deadline" else f"BackendError kind {exc.kind}: {exc}"
    except Exception as exc:  # reported, not fatal: the figure says what happened
        how = f"{type(exc).__name__}: {exc}"
    return time.perf_counter() - t0, how


def measure(samples: int, quick: bool = False) -> tuple[str, list[Figure]]:
    from rig_nb import Client, RunRequest

    samples = 1 if quick else min(samples, 3)
    with bench_servers(kind="drip") as (drip,), bench_servers(kind="silent") as (silent,):
        urls = {"drip": drip, "silent": silent}
        clients = {
            (case, d): Client(urls[kind], API_KEY, deadline=d, timeout=TIMEOUT)
            for case, (kind, _) in CASES.items()
            for d in DEADLINES
        }
        requests = {
            case: RunRequest(model=MODEL, max_tokens=64, prompt="Hi", stream=stream)
            for case, (_, stream) in CASES.items()
        }
        threads0, fds0 = threading.active_count(), _open_fds()
        walls: dict[tuple[str, float], list[float]] = {key: [] for key in clients}
        endings: dict[tuple[str, float], set[str]] = {key: set() for key in clients}
        for _ in range(samples):
            for (case, d), client in clients.items():
                wall, how = _cut(client, requests[case])
                walls[(case, d)].append(wall)
                endings[(case, d)].add(how)
        time.sleep(0.2)  # let any thread that ends on its own end
        threads1, fds1 = threading.active_count(), _open_fds()
        for client in clients.values():
            client.close()
        threads2, fds2 = threading.active_count(), _open_fds()
    lines = [
        f"\n`Client(deadline=D, timeout={TIMEOUT:g})` against servers that never finish; "
        f"median of {samples} per cell\n",
        "| server | " + " | ".join(f"D = {d:g} s" for d in DEADLINES) + " | ended as |",
        "|---|" + "---|" * len(DEADLINES) + "---|",
    ]
    figures: list[Figure] = []
    for case in CASES:
        cells = []
        ratios = []
        how = set().union(*(endings[(case, d)] for d in DEADLINES))
        for d in DEADLINES:
            med = statistics.median(walls[(case, d)])
            ratios.append(med / d)
            cells.append(f"{med:.3f} s ({med / d:.2f}x)")
        lines.append(f"| {case} | " + " | ".join(cells) + f" | {', '.join(sorted(how))} |")
        worst = max(ratios)
        figures.append(
            Figure(
                f"deadline, {case}: wall / D, D = 0.5, 1, 2 s",
                " / ".join(f"{r:.2f}x" for r in ratios)
                + ("" if how == {"deadline"} else f"; ended as: {', '.join(sorted(how))}"),
                f"<= {GOAL}x, BackendError kind deadline",
                worst <= GOAL and how == {"deadline"},
            )
        )
    cut = len(clients) * samples
    lines.append(
        f"\nthis process, before the first request / after the last ({cut} requests cut, "
        f"Clients open) / after closing the Clients: threads {threads0} / {threads1} / "
        f"{threads2}; open file descriptors {fds0} / {fds1} / {fds2}"
    )
    figures.append(
        Figure(
            f"threads and sockets left behind by {cut} requests cut at their deadline",
            f"threads {threads1 - threads0:+d}, file descriptors {fds1 - fds0:+d} "
            f"(after closing the Clients: {threads2 - threads0:+d}, {fds2 - fds0:+d})",
            "none",
            threads1 <= threads0 and fds1 <= fds0,
        )
    )
    return "\n".join(lines), figures


if __name__ == "__main__":
    sys.exit(run_alone(measure, __doc__ or "", samples=3))
