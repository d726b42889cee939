"""Loop overhead on loopback: rig_nb vs the raw openai SDK vs the peer agent loops.

Besides today's rig_nb with its defaults (a 600 s deadline on every request),
two rows isolate what the deadline costs: the same Client with `deadline=None`,
and rig_nb as of BEFORE_COMMIT (the code the previous RESULTS.md measured,
before the deadline existed), extracted from git and timed in the same samples.

    .venv/bin/python benchmarks/loop_overhead.py [--samples N] [--quick]
"""

from __future__ import annotations

import statistics
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from common import Figure, bench_servers, ms, run_alone, sample_wall_cpu, within_sample_ratio
from contenders import (
    BEFORE_COMMIT,
    BEFORE_SERVERS,
    PEERS,
    Contender,
    RawAsync,
    RawSync,
    RigNb,
    before_package,
)

GOALS = {"one": 1.10, "tool": 1.15}
# Today's rig_nb against itself before the deadline: within this, the cost is noise.
SAME_GOAL = 1.05
RIG, BEFORE, NO_DEADLINE = "rig", "rig-before", "rig-no-deadline"
# rig_nb at the end of round 4, before every server kind became a plug-in: today's loop
# against it, in the same samples.
RELEASE, RELEASE_COMMIT = "rig-round-4", BEFORE_SERVERS
RELEASE_GOAL = 1.02
# Replies that carry reasoning, sent back on the tool turn, thinking=False mapped: the
# replay case of DESIGN's "Reasoning across turns".
REPLAY = "rig-replay"
JOB_TITLES = {"one": "one-round run", "tool": "two-round tool run"}


@dataclass
class Row:
    label: str
    per_job: float | None
    per_round: float | None
    ratio: float | None
    overhead: float | None  # wall seconds per round above the raw sync SDK
    cpu_round: float | None  # client process CPU seconds per round
    cpu_ratio: float | None
    note: str


def _build(
    makers: dict[str, Callable[[], Contender]],
) -> tuple[dict[str, Contender], dict[str, str]]:
    built: dict[str, Contender] = {}
    failed: dict[str, str] = {}
    for key, make in makers.items():
        try:
            built[key] = make()
        except Exception as exc:  # a peer that cannot be set up is reported, not fatal
            failed[key] = f"cannot be set up: {type(exc).__name__}: {exc}"
    return built, failed


def measure(
    n: int, samples: int, verbose: bool = False
) -> tuple[dict[str, list[Row]], list[Figure]]:
    tables: dict[str, list[Row]] = {}
    figures: list[Figure] = []
    with bench_servers() as (url,):
        makers: dict[str, Callable[[], Contender]] = {
            "raw": lambda: RawSync(url),
            RIG: lambda: RigNb(url),
            "rig-shared": lambda: RigNb(url, shared_http=True),
            NO_DEADLINE: lambda: RigNb(
                url, deadline=None, label="rig_nb Client.run (deadline=None)"
            ),
            BEFORE: lambda: RigNb(
                url,
                package=before_package(),
                label=f"rig_nb at {BEFORE_COMMIT} (before the deadline)",
            ),
            RELEASE: lambda: RigNb(
                url,
                package=before_package(RELEASE_COMMIT),
                label=f"rig_nb at {RELEASE_COMMIT} (round 4, before the server profiles)",
            ),
            REPLAY: lambda: RigNb(
                url,
                replay=True,
                server="llama.cpp",
                label="rig_nb Client.run (reasoning replayed, thinking=False)",
            ),
            "raw-async": lambda: RawAsync(url),
        }
        makers.update({name: (lambda m=make: m(url)) for name, make in PEERS.items()})
        built, failed = _build(makers)
        for job in ("one", "tool"):
            runnable: dict[str, Callable[[], None]] = {}
            job_failed = dict(failed)
            for key, c in built.items():
                try:
                    c.batch(job, 2)()  # proves it does the same work before it is timed
                    runnable[key] = c.batch(job, n)
                except Exception as exc:
                    if verbose:
                        traceback.print_exc()
                    job_failed[key] = f"cannot do this job: {type(exc).__name__}: {str(exc)[:160]}"
            wall, cpu = sample_wall_cpu(runnable, samples)
            rows = _rows(job, n, built, wall, cpu, job_failed)
            tables[job] = rows
            figures += _figures(job, rows, job_failed)
            figures += _deadline_figures(job, n, wall, cpu)
            figures += _replay_figures(job, wall, cpu)
        for c in built.values():
            c.close()
    return tables, figures


def _rows(
    job: str,
    n: int,
    built: dict[str, Contender],
    wall: dict[str, list[float]],
    cpu: dict[str, list[float]],
    failed: dict[str, str],
) -> list[Row]:
    """Per-contender medians; ratios and overheads are medians of within-sample comparisons."""
    rows: list[Row] = []
    raw, raw_cpu = wall.get("raw"), cpu.get("raw")
    rounds = Contender.rounds_per_job[job]
    med = statistics.median
    for key, c in built.items():
        if key in failed:
            rows.append(Row(c.label, None, None, None, None, None, None, failed[key]))
            continue
        per_job = med(wall[key]) / n
        per_round = per_job / rounds
        ratio = overhead = cpu_ratio = None
        if raw and raw_cpu:
            ratio = med(w / r for w, r in zip(wall[key], raw, strict=True))
            overhead = med(w - r for w, r in zip(wall[key], raw, strict=True)) / n / rounds
            cpu_ratio = med(w / r for w, r in zip(cpu[key], raw_cpu, strict=True))
        cpu_round = med(cpu[key]) / n / rounds
        rows.append(Row(c.label, per_job, per_round, ratio, overhead, cpu_round, cpu_ratio, c.note))
    for key, why in failed.items():
        if key not in built:
            rows.append(Row(key, None, None, None, None, None, None, why))
    return rows


def _figures(job: str, rows: list[Row], failed: dict[str, str]) -> list[Figure]:
    title = JOB_TITLES[job]
    goal = GOALS[job]
    figures: list[Figure] = []
    rig = next((r for r in rows if r.label == "rig_nb Client.run"), None)
    if rig is None or rig.ratio is None:
        why = failed.get("rig", "rig_nb not measurable")
        figures.append(Figure(f"{title}: rig_nb / raw SDK", why, f"<= {goal:.2f}x", None))
        return figures
    figures.append(
        Figure(
            f"{title}: rig_nb / raw SDK, wall",
            f"{rig.ratio:.3f}x (overhead {(rig.overhead or 0) * 1e6:+.0f} us per round)",
            f"<= {goal:.2f}x",
            rig.ratio <= goal,
        )
    )
    if rig.cpu_ratio is not None:
        figures.append(
            Figure(
                f"{title}: rig_nb / raw SDK, client CPU",
                f"{rig.cpu_ratio:.3f}x ({ms(rig.cpu_round or 0)} per round)",
                f"<= {goal:.2f}x",
                rig.cpu_ratio <= goal,
            )
        )
    for key in PEERS:
        peer = next((r for r in rows if r.label.startswith(key)), None)
        name = f"{title}: rig_nb overhead/round vs {key}"
        if peer is None or peer.overhead is None or rig.overhead is None:
            note = peer.note if peer else "not measured"
            figures.append(Figure(name, f"peer not comparable: {note}", "lower than peer", None))
            continue
        value = f"wall {rig.overhead * 1e6:+.0f} us vs {peer.overhead * 1e6:+.0f} us"
        if rig.cpu_round is not None and peer.cpu_round is not None:
            value += f"; CPU {ms(rig.cpu_round)} vs {ms(peer.cpu_round)} per round"
        figures.append(Figure(name, value, "lower than peer", rig.overhead < peer.overhead))
    return figures


def _replay_figures(
    job: str, wall: dict[str, list[float]], cpu: dict[str, list[float]]
) -> list[Figure]:
    """The replay case against the raw SDK (the same goals) and against rig_nb without it."""
    if REPLAY not in wall or "raw" not in wall:
        return []
    title, goal = JOB_TITLES[job], GOALS[job]
    w = within_sample_ratio(wall, REPLAY, "raw")
    c = within_sample_ratio(cpu, REPLAY, "raw")
    figures = [
        Figure(
            f"{title}: rig_nb with reasoning replayed / raw SDK, wall",
            f"{w:.3f}x (client CPU {c:.3f}x)",
            f"<= {goal:.2f}x",
            w <= goal,
        )
    ]
    if RIG in cpu:
        same = within_sample_ratio(cpu, REPLAY, RIG)
        figures.append(
            Figure(
                f"{title}: rig_nb with reasoning replayed / without, client CPU",
                f"{same:.3f}x (wall {within_sample_ratio(wall, REPLAY, RIG):.3f}x)",
                "informational: replies carry reasoning here, not there",
                None,
            )
        )
    return figures


def _deadline_figures(
    job: str, n: int, wall: dict[str, list[float]], cpu: dict[str, list[float]]
) -> list[Figure]:
    """Today's rig_nb over itself without the deadline, and over the code before it."""
    rounds = Contender.rounds_per_job[job]
    figures: list[Figure] = []
    if RIG in cpu and NO_DEADLINE in cpu:
        c = within_sample_ratio(cpu, RIG, NO_DEADLINE)
        w = within_sample_ratio(wall, RIG, NO_DEADLINE)
        figures.append(
            Figure(
                f"{JOB_TITLES[job]}: rig_nb deadline=600 (default) / deadline=None, client CPU",
                f"{c:.3f}x (wall {w:.3f}x)",
                f"<= {SAME_GOAL:.2f}x (no measurable cost)",
                c <= SAME_GOAL,
            )
        )
    if RIG in cpu and RELEASE in cpu:
        c = within_sample_ratio(cpu, RIG, RELEASE)
        w = within_sample_ratio(wall, RIG, RELEASE)
        figures.append(
            Figure(
                f"{JOB_TITLES[job]}: rig_nb today / rig_nb at {RELEASE_COMMIT} "
                "(round 4, before the server profiles), client CPU",
                f"{c:.3f}x (wall {w:.3f}x)",
                f"<= {RELEASE_GOAL:.2f}x (server kinds as plug-ins cost nothing measurable)",
                c <= RELEASE_GOAL,
            )
        )
    if RIG in cpu and BEFORE in cpu:
        c = within_sample_ratio(cpu, RIG, BEFORE)
        w = within_sample_ratio(wall, RIG, BEFORE)
        us = (statistics.median(cpu[RIG]) - statistics.median(cpu[BEFORE])) / n / rounds
        figures.append(
            Figure(
                f"{JOB_TITLES[job]}: rig_nb today / rig_nb at {BEFORE_COMMIT}, client CPU",
                f"{c:.3f}x ({us * 1e6:+.0f} us per round; wall {w:.3f}x)",
                "informational: every change since, deadline included",
                None,
            )
        )
    return figures


def measure_alone(samples: int, quick: bool = False) -> tuple[str, list[Figure]]:
    n = 10 if quick else 20
    tables, figures = measure(n, samples)
    return render(tables, n, samples), figures


def deadline_bookkeeping() -> str:
    """What the deadline's own code costs per request, timed alone (benchmark code).

    It calls rig_nb._transport's private helpers the way one request does: a
    scope, the clamped timeouts, eight clamped socket waits, two checks.
    """
    import timeit

    try:
        from rig_nb import _transport as t

        ext = {"timeout": {"connect": 120.0, "read": 120.0, "write": 120.0, "pool": 120.0}}

        def one(deadline: float | None) -> None:
            with t.deadline_scope(deadline):
                t._clamped_timeouts(ext)
                for _ in range(8):
                    t._clamp(120.0)
                t.remaining()
                t.remaining()

        per = {
            d: min(timeit.repeat(lambda d=d: one(d), number=20_000, repeat=5)) / 20_000
            for d in (600.0, None)
        }
    except (ImportError, AttributeError, TypeError) as exc:
        return f"\n(deadline bookkeeping not timed: {type(exc).__name__}: {exc})"
    return (
        "\nthe deadline's own code per request, timed alone (scope, clamped timeouts, 8 "
        f"clamped socket waits, 2 checks): {per[600.0] * 1e6:.1f} us with a deadline, "
        f"{per[None] * 1e6:.1f} us with deadline=None"
    )


def render(tables: dict[str, list[Row]], n: int, samples: int) -> str:
    out: list[str] = []
    for job, rows in tables.items():
        out.append(
            f"\n{JOB_TITLES[job]}: batches of {n} runs, {samples} samples; ratio and "
            "overhead are medians of each sample's comparison with the raw SDK batch run "
            "in the same sample\n"
        )
        out.append(
            "| contender | wall per run | wall per round | ratio to raw SDK | overhead/round "
            "| client CPU per round | CPU ratio | note |"
        )
        out.append("|---|---|---|---|---|---|---|---|")
        for r in rows:
            if r.per_job is None:
                out.append(f"| {r.label} | - | - | - | - | - | - | {r.note} |")
                continue
            ratio = f"{r.ratio:.3f}x" if r.ratio is not None else "-"
            over = f"{r.overhead * 1e6:+.0f} us" if r.overhead is not None else "-"
            cpu_ratio = f"{r.cpu_ratio:.2f}x" if r.cpu_ratio is not None else "-"
            out.append(
                f"| {r.label} | {ms(r.per_job)} | {ms(r.per_round or 0)} | {ratio} | {over} "
                f"| {ms(r.cpu_round or 0)} | {cpu_ratio} | {r.note} |"
            )
    out.append(deadline_bookkeeping())
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(run_alone(measure_alone, __doc__ or "", samples=25))
