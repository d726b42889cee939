"""compare's load sweep: levels, copies, crossed streams, and the load summary.

`load_levels` reads compare's `load` argument (a bare int L is `(L,)`); `plan`
lays out every copy and each endpoint's groups (a level's copies of one
(endpoint, scenario, repeat), started together); each copy's prompt ends with
its own `nonce`, and `mark_crossed` gives outcome `crossed_stream` to a copy
whose reply carries another copy's nonce: a server whose tool-call parser keeps
state per server instead of per request mixes two streams this way (vLLM
#48089, mlx-lm #965). `load_summary` is `summarize` for a sweep.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, cast

from ._html import table_html
from .scenarios import Endpoint, Scenario, ScenarioResult
from .trace import Trace

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CROSSED_STREAM",
    "LOAD_SUMMARY_COLUMNS",
    "Group",
    "Job",
    "Walls",
    "crossed_copy",
    "is_sweep",
    "load_levels",
    "load_summary",
    "load_table_html",
    "mark_crossed",
    "nonce",
    "plan",
    "walls",
    "with_nonce",
]

# The outcome of a copy whose reply carried another copy's nonce.
CROSSED_STREAM = "crossed_stream"
LOAD_SUMMARY_COLUMNS = [
    "endpoint",
    "scenario",
    "load",
    "ok",
    "runs",
    "p50_latency_s",
    "p95_latency_s",
    "p50_ttft_s",
    "output_tokens_per_s",
]
# A sweep's wall time per (endpoint, scenario, load): first start to last end of each
# group of copies, summed over repeats (the tokens per second of `load_summary`).
Walls = dict[tuple[str, str, int], float]


def load_levels(load: object) -> tuple[int, ...]:
    """`load` as a tuple of levels; ValueError unless it is an int >= 1 or a non-empty
    tuple or list of them (bools and strings are not ints here)."""
    values = (load,) if isinstance(load, int) and not isinstance(load, bool) else load
    if not isinstance(values, (tuple, list)) or not values:
        raise ValueError(f"load must be an int >= 1 or a non-empty tuple of them, not {load!r}")
    for level in values:
        if isinstance(level, bool) or not isinstance(level, int) or level < 1:
            raise ValueError(f"each load level must be an int >= 1, not {level!r}")
    return tuple(values)


def is_sweep(levels: Sequence[int]) -> bool:
    """Several levels, or one above 1: copies run alone on their endpoint, level by level."""
    return len(levels) > 1 or levels[0] > 1


def nonce() -> str:
    """A fresh marker for one copy's prompt: 12 hex digits behind a fixed prefix."""
    return f"nonce-{secrets.token_hex(6)}"


def with_nonce(prompt: str, marker: str) -> str:
    """`prompt` ending with `marker` on a line of its own."""
    return f"{prompt}\n\n{marker}" if prompt else marker


def crossed_copy(trace: Trace | None, own: str, markers: Sequence[str]) -> int | None:
    """The index in `markers` of another copy's nonce found in `trace`'s replies, or None."""
    if trace is None:
        return None
    said = trace.received()
    for index, marker in enumerate(markers):
        if marker != own and marker in said:
            return index
    return None


@dataclass(frozen=True)
class Job:
    """One row to run: a copy of an (endpoint, scenario, repeat) at a load level."""

    index: int
    scenario: Scenario  # as sent: in a sweep, the copy's nonce ends its prompt
    named: Scenario  # as given
    repeat: int
    load: int
    copy: int
    nonce: str = ""


class Group:
    """Copies of one (endpoint, scenario, repeat, level): submitted together to idle
    workers (compare's pool holds a worker for every copy that may run at once), and
    judged together (crossed streams); one job alone outside a sweep."""

    def __init__(self, jobs: list[int]) -> None:
        self.jobs = jobs
        self.left = len(jobs)
        self.start = float("inf")
        self.end = 0.0


def plan(
    eps: list[Endpoint], scs: list[Scenario], repeats: int, levels: tuple[int, ...], sweep: bool
) -> tuple[list[Job], list[list[Group]]]:
    """Every copy in row order (endpoint, level, scenario, repeat, copy), and each
    endpoint's groups in the order they run."""
    jobs: list[Job] = []
    groups: list[list[Group]] = []
    for index in range(len(eps)):
        mine: list[Group] = []
        for level in levels:
            for scenario in scs:
                for repeat in range(repeats):
                    first = len(jobs)
                    for copy in range(level):
                        # A probe sends its own fixed prompt: no nonce to carry.
                        marker = nonce() if sweep and scenario.kind != "probe" else ""
                        sent = scenario
                        if marker:
                            sent = replace(scenario, prompt=with_nonce(scenario.prompt, marker))
                        jobs.append(Job(index, sent, scenario, repeat, level, copy, marker))
                    mine.append(Group(list(range(first, len(jobs)))))
        groups.append(mine)
    return jobs, groups


def mark_crossed(jobs: list[Job], group: Group, results: list[ScenarioResult | None]) -> None:
    """Mark the copies of `group` whose replies carried another copy's nonce."""
    markers = [jobs[n].nonce for n in group.jobs]
    for n in group.jobs:
        result = results[n]
        if result is None or not jobs[n].nonce:
            continue
        other = crossed_copy(result.trace, jobs[n].nonce, markers)
        if other is not None:
            why = (
                f"the reply carried copy {other}'s nonce: the server mixed the streams "
                "of requests running at the same time"
            )
            # Judged across copies, after each run ended: the trace says so too.
            if result.trace is not None:
                result.trace.outcome = CROSSED_STREAM
                if result.trace.iterations:
                    result.trace.iterations[-1].error = why
            results[n] = replace(result, outcome=CROSSED_STREAM, error=why)


def walls(eps: list[Endpoint], jobs: list[Job], groups: list[Group]) -> Walls:
    """The wall time of each (endpoint, scenario, load) over its finished groups."""
    out: Walls = {}
    for group in groups:
        job = jobs[group.jobs[0]]
        key = (eps[job.index].name, job.named.name, job.load)
        span = group.end - group.start if group.end >= group.start else 0.0
        out[key] = out.get(key, 0.0) + span
    return out


def _quantile(values: pd.Series, q: float) -> float:
    """The q-quantile of the known values; NaN when none is known (some numpy versions
    warn "Mean of empty slice" on an all-NaN median)."""
    known = values.dropna()
    return float(known.quantile(q)) if len(known) else float("nan")


def _finite(values: Iterable[object]) -> list[float]:
    """Each value as a finite float, NaN for anything else: a count past float range or an
    infinite latency in a hand-built frame is no figure, not an OverflowError."""
    out = []
    for v in values:
        try:
            f = float(v)  # type: ignore[arg-type]
        except (TypeError, ValueError, OverflowError):
            f = math.nan
        out.append(f if math.isfinite(f) else math.nan)
    return out


def load_summary(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (endpoint, scenario, load) of a sweep's rows: `LOAD_SUMMARY_COLUMNS`.

    Percentiles are over every copy of the cell; tokens per second are the copies'
    completion tokens over the wall time of the cell's groups (`df.attrs["load_walls"]`;
    without it, each repeat's slowest copy stands for its group's wall time).
    """
    import pandas as pd

    # A bare copy of the columns used: derived frames of df would deep-copy df.attrs.
    frame = pd.DataFrame(
        {
            "endpoint": df["endpoint"].to_numpy(),
            "scenario": df["scenario"].to_numpy(),
            "load": df["load"].to_numpy(),
            "repeat": df["repeat"].to_numpy(),
            "ok": (df["outcome"] == "ok").to_numpy(),
            "latency_s": _finite(df["latency_s"]),
            "ttft_s": _finite(df["ttft_s"]),
            "tokens": _finite(df["completion_tokens"]),
        }
    )
    known: Walls = df.attrs.get("load_walls") or {}
    rows = []
    for (endpoint, scenario, level), cell in frame.groupby(
        ["endpoint", "scenario", "load"], sort=False
    ):
        wall = known.get((endpoint, scenario, int(level)))
        if wall is None:
            wall = float(cell.groupby("repeat")["latency_s"].max().sum())
        tokens = cell["tokens"].sum(min_count=1)
        rows.append(
            {
                "endpoint": endpoint,
                "scenario": scenario,
                "load": int(level),
                "ok": int(cell["ok"].sum()),
                "runs": len(cell),
                "p50_latency_s": _quantile(cell["latency_s"], 0.5),
                "p95_latency_s": _quantile(cell["latency_s"], 0.95),
                "p50_ttft_s": _quantile(cell["ttft_s"], 0.5),
                "output_tokens_per_s": tokens / wall if wall > 0 and tokens == tokens else None,
            }
        )
    out = pd.DataFrame(rows, columns=LOAD_SUMMARY_COLUMNS)
    for col in ("p50_latency_s", "p95_latency_s", "p50_ttft_s", "output_tokens_per_s"):
        out[col] = out[col].astype(float)
    return cast("pd.DataFrame", out)


def _number(value: object, digits: int) -> str:
    return "" if not isinstance(value, (int, float)) or value != value else f"{value:.{digits}f}"


def load_table_html(summary: pd.DataFrame) -> str:
    """`load_summary` as an escaped HTML table: "k/n ok" coloured by pass rate, seconds
    with two decimals and tokens per second with one; an unknown value is an empty cell."""
    header = [
        "endpoint",
        "scenario",
        "load",
        "ok",
        "p50 latency s",
        "p95 latency s",
        "p50 ttft s",
        "output tok/s",
    ]
    rows: list[list[object]] = []
    styles: list[list[str]] = []
    for r in summary.to_dict("records"):
        ok, runs = int(r["ok"]), int(r["runs"])
        rows.append(
            [
                r["endpoint"],
                r["scenario"],
                int(r["load"]),
                f"{ok}/{runs} ok",
                _number(r["p50_latency_s"], 2),
                _number(r["p95_latency_s"], 2),
                _number(r["p50_ttft_s"], 2),
                _number(r["output_tokens_per_s"], 1),
            ]
        )
        hue = round(120 * ok / runs) if runs else 0  # red (none ok) through amber to green
        rate = f"background:hsl({hue},65%,85%)" if runs else ""
        styles.append(["", "", "text-align:right", rate, *["text-align:right"] * 4])
    return table_html(header, rows, styles)
