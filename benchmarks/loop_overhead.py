"""Loop overhead on loopback: rig_nb vs the raw openai SDK vs the peer agent loops."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass

from common import Figure, bench_servers, median_times, ms
from contenders import PEERS, Contender, RawAsync, RawSync, RigNb

GOALS = {"one": 1.10, "tool": 1.15}
JOB_TITLES = {"one": "one-round run", "tool": "two-round tool run"}


@dataclass
class Row:
    label: str
    per_job: float | None
    per_round: float | None
    ratio: float | None
    overhead: float | None  # seconds per round above the raw sync SDK
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


def measure(n: int, samples: int, verbose: bool = False) -> tuple[dict[str, list[Row]], list[Figure]]:
    tables: dict[str, list[Row]] = {}
    figures: list[Figure] = []
    with bench_servers() as (url,):
        makers: dict[str, Callable[[], Contender]] = {
            "raw": lambda: RawSync(url),
            "rig": lambda: RigNb(url),
            "rig-shared": lambda: RigNb(url, shared_http=True),
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
            times = median_times(runnable, samples)
            rows = _rows(job, n, built, times, job_failed)
            tables[job] = rows
            figures += _figures(job, rows, times, job_failed)
        for c in built.values():
            c.close()
    return tables, figures


def _rows(
    job: str,
    n: int,
    built: dict[str, Contender],
    times: dict[str, float],
    failed: dict[str, str],
) -> list[Row]:
    rows: list[Row] = []
    raw = times.get("raw")
    rounds = Contender.rounds_per_job[job]
    for key, c in built.items():
        if key in failed:
            rows.append(Row(c.label, None, None, None, None, failed[key]))
            continue
        per_job = times[key] / n
        per_round = per_job / rounds
        ratio = times[key] / raw if raw else None
        overhead = per_round - raw / n / rounds if raw else None
        rows.append(Row(c.label, per_job, per_round, ratio, overhead, c.note))
    for key, why in failed.items():
        if key not in built:
            rows.append(Row(key, None, None, None, None, why))
    return rows


def _figures(
    job: str, rows: list[Row], times: dict[str, float], failed: dict[str, str]
) -> list[Figure]:
    title = JOB_TITLES[job]
    goal = GOALS[job]
    figures: list[Figure] = []
    rig = next((r for r in rows if r.label == "rig_nb Client.run"), None)
    if rig is None or rig.ratio is None:
        why = failed.get("rig", "rig_nb not measurable")
        figures.append(Figure(f"{title}: rig_nb / raw SDK", why, f"<= {goal:.2f}x", None))
        return figures
    figures.append(
        Figure(f"{title}: rig_nb / raw SDK", f"{rig.ratio:.3f}x", f"<= {goal:.2f}x", rig.ratio <= goal)
    )
    for key in PEERS:
        peer = next((r for r in rows if r.label.startswith(key)), None)
        name = f"{title}: rig_nb overhead/round vs {key}"
        if peer is None or peer.overhead is None or rig.overhead is None:
            note = peer.note if peer else "not measured"
            figures.append(Figure(name, f"peer not comparable: {note}", "lower than peer", None))
            continue
        value = f"{rig.overhead * 1e6:.0f} us vs {peer.overhead * 1e6:.0f} us"
        figures.append(Figure(name, value, "lower than peer", rig.overhead < peer.overhead))
    return figures


def render(tables: dict[str, list[Row]], n: int, samples: int) -> str:
    out: list[str] = []
    for job, rows in tables.items():
        out.append(f"\n{JOB_TITLES[job]} x {n}, median of {samples} batches\n")
        out.append("| contender | per run | per round | ratio to raw SDK | overhead/round | note |")
        out.append("|---|---|---|---|---|---|")
        for r in rows:
            if r.per_job is None:
                out.append(f"| {r.label} | - | - | - | - | {r.note} |")
                continue
            ratio = f"{r.ratio:.3f}x" if r.ratio is not None else "-"
            over = f"{r.overhead * 1e6:+.0f} us" if r.overhead is not None else "-"
            out.append(
                f"| {r.label} | {ms(r.per_job)} | {ms(r.per_round or 0)} | {ratio} | {over} | {r.note} |"
            )
    return "\n".join(out)
