"""Loop overhead on loopback: rig_nb vs the raw openai SDK vs the peer agent loops."""

from __future__ import annotations

import statistics
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from common import Figure, bench_servers, ms, sample_wall_cpu
from contenders import PEERS, Contender, RawAsync, RawSync, RigNb

GOALS = {"one": 1.10, "tool": 1.15}
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
            wall, cpu = sample_wall_cpu(runnable, samples)
            rows = _rows(job, n, built, wall, cpu, job_failed)
            tables[job] = rows
            figures += _figures(job, rows, job_failed)
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
    cpu_note = f" (client CPU {rig.cpu_ratio:.2f}x)" if rig.cpu_ratio is not None else ""
    figures.append(
        Figure(
            f"{title}: rig_nb / raw SDK, wall",
            f"{rig.ratio:.3f}x{cpu_note}",
            f"<= {goal:.2f}x",
            rig.ratio <= goal,
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
    return "\n".join(out)
