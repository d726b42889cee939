"""Compare charts as inline SVG: latency per cell, and latency and throughput against load.

Drawn for CompareView and the HTML report with the marks of `rig_nb._svg` (no script;
each mark's numbers on hover in its `<title>`; every label escaped; at most 760 px wide).
`latency_svg` reads the rows of `compare()`; `load_svg` reads a `summarize(df)` that has a
`load` column (one row per endpoint, scenario and load level). Numbers a row holds are
drawn only when finite and non-negative, so any usage an endpoint sent draws a bounded
picture. Frames are read column by column; this module imports no pandas.
"""

from __future__ import annotations

import math
from typing import Any

from .._svg import WIDTH, axis, bar, esc, svg, ticks

__all__ = ["MAX_BARS", "MAX_SERIES", "charts_html", "latency_svg", "load_svg"]

MAX_BARS = 160  # cells drawn by latency_svg; a note says how many more there are
MAX_SERIES = 10  # lines drawn by load_svg
_LABEL, _BAR, _GAP, _HEAD = 210, 12, 3, 16
_NAME_CHARS = 34
# Distinct colours for the load lines (Tableau 10).
_PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)


def _finite(value: Any) -> float | None:
    """A non-negative finite float, or None (NaN, NA, strings, negatives, infinities)."""
    if isinstance(value, bool):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return x if math.isfinite(x) and x >= 0 else None


def _short(text: Any, limit: int = _NAME_CHARS) -> str:
    line = " ".join(str(text)[: limit + 1].split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _text(x: float, y: float, text: str, anchor: str = "start", color: str = "#333") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{color}">{esc(text)}</text>'


def latency_svg(df: Any) -> str:
    """Each (scenario, endpoint) cell's median latency as a bar, its fastest to slowest run as
    a line through it, coloured by pass rate (red none ok, green all); "" without rows."""
    cells: dict[tuple[str, str], list[Any]] = {}
    for endpoint, scenario, outcome, latency in zip(
        df["endpoint"], df["scenario"], df["outcome"], df["latency_s"], strict=True
    ):
        cell = cells.setdefault((str(scenario), str(endpoint)), [0, 0, []])
        cell[0] += outcome == "ok"
        cell[1] += 1
        x = _finite(latency)
        if x is not None:
            cell[2].append(x)
    if not cells:
        return ""
    # Grouped by scenario (in first-seen order), endpoints in first-seen order within each.
    order = {s: n for n, s in enumerate(dict.fromkeys(s for s, _ in cells))}
    ranked = sorted(cells.items(), key=lambda item: order[item[0][0]])
    shown = ranked[:MAX_BARS]
    top = max((max(c[2]) for _, c in shown if c[2]), default=0.0)
    marks = ticks(top)
    span = marks[-1] or 1.0
    plot = WIDTH - _LABEL - 50
    parts, y, scenario = [], 0.0, None
    for (scen, endpoint), (ok, n, times) in shown:
        if scen != scenario:
            scenario = scen
            y += _HEAD
            parts.append(
                f'<text x="0" y="{y - 4:.1f}" font-weight="bold" fill="#222">'
                f"<title>{esc(scen[:2000])}</title>{esc(_short(scen, 90))}</text>"
            )
        parts.append(_text(_LABEL - 6, y + _BAR - 2, _short(endpoint), "end", "#555"))
        color = f"hsl({round(120 * ok / n)},55%,60%)"
        if times:
            med, low, high = _median(times), min(times), max(times)
            title = (
                f"{scen} @ {endpoint}: {ok}/{n} ok, median {med:.3f} s "
                f"(fastest {low:.3f} s, slowest {high:.3f} s)"
            )
            parts.append(bar(_LABEL, y, plot * med / span, _BAR, color, title))
            x1, x2 = _LABEL + plot * low / span, _LABEL + plot * high / span
            mid = y + _BAR / 2
            parts.append(
                f'<line x1="{x1:.1f}" y1="{mid:.1f}" x2="{x2:.1f}" y2="{mid:.1f}" '
                'stroke="#333" stroke-width="1"/>'
            )
            parts.append(
                _text(max(x2, _LABEL + plot * med / span) + 4, y + _BAR - 2, f"{med:.2f} s")
            )
        else:
            parts.append(_text(_LABEL, y + _BAR - 2, f"{ok}/{n} ok, no latency", color="#777"))
        y += _BAR + _GAP
    parts.append(axis(_LABEL, plot, y + 2, marks, " s"))
    height = y + 22
    if len(cells) > len(shown):
        parts.append(_text(0, height + 8, f"first {len(shown)} of {len(cells):,} cells drawn"))
        height += 14
    return svg(WIDTH, math.ceil(height), "".join(parts), "median latency per cell")


def _panel(
    x0: float, series: list[tuple[str, list[tuple[float, float]]]], loads: list[float], what: str
) -> str:
    """One panel of `load_svg`: a line per series of (load, value) points, `what` its unit."""
    width, height, left, top = WIDTH / 2 - 20, 170.0, 44.0, 20.0
    plot_w, plot_h = width - left - 10, height - top - 24
    top_value = max((v for _, pts in series for _, v in pts), default=0.0)
    marks = ticks(top_value, 4)
    vspan = marks[-1] or 1.0
    lmin, lmax = min(loads), max(loads)
    lspan = (lmax - lmin) or 1.0

    def px(load: float, value: float) -> tuple[float, float]:
        x = x0 + left + (plot_w * (load - lmin) / lspan if lmax > lmin else plot_w / 2)
        return x, top + plot_h * (1 - value / vspan)

    parts = [_text(x0 + left, 12, what, color="#222")]
    for m in marks:
        _, y = px(lmin, m)
        parts.append(
            f'<line x1="{x0 + left:.1f}" y1="{y:.1f}" x2="{x0 + left + plot_w:.1f}" '
            f'y2="{y:.1f}" stroke="#eee"/>' + _text(x0 + left - 4, y + 4, f"{m:.3g}", "end", "#555")
        )
    for load in loads:
        x, _ = px(load, 0)
        parts.append(_text(x, top + plot_h + 14, f"{load:g}", "middle", "#555"))
    parts.append(_text(x0 + left + plot_w, top + plot_h + 24, "load", "end", "#555"))
    for n, (name, pts) in enumerate(series):
        color = _PALETTE[n % len(_PALETTE)]
        xy = [px(load, v) for load, v in pts]
        if len(xy) > 1:
            line = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
            parts.append(
                f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="1.5"/>'
            )
        for (load, v), (x, y) in zip(pts, xy, strict=True):
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}">'
                f"<title>{esc(f'{name}: load {load:g}: {v:.3f} {what}')}</title></circle>"
            )
    return "".join(parts)


def load_svg(summary: Any) -> str:
    """Median latency and output tokens per second against load, one line per (endpoint,
    scenario), from a `summarize(df)` with a `load` column; "" when there is nothing to draw."""
    needed = {"endpoint", "scenario", "load", "p50_latency_s", "output_tokens_per_s"}
    if not needed <= set(summary.columns):
        return ""
    latency: dict[str, list[tuple[float, float]]] = {}
    rate: dict[str, list[tuple[float, float]]] = {}
    loads: set[float] = set()
    for endpoint, scenario, load, p50, tps in zip(
        summary["endpoint"],
        summary["scenario"],
        summary["load"],
        summary["p50_latency_s"],
        summary["output_tokens_per_s"],
        strict=True,
    ):
        level = _finite(load)
        if level is None:
            continue
        name = f"{_short(endpoint)} / {_short(scenario)}"
        loads.add(level)
        if (v := _finite(p50)) is not None:
            latency.setdefault(name, []).append((level, v))
        if (v := _finite(tps)) is not None:
            rate.setdefault(name, []).append((level, v))
    names = list(dict.fromkeys([*latency, *rate]))
    if not loads or not names:
        return ""
    drawn = names[:MAX_SERIES]
    ordered = sorted(loads)
    parts = [
        _panel(0, [(k, sorted(latency.get(k, []))) for k in drawn], ordered, "p50 latency s"),
        _panel(WIDTH / 2, [(k, sorted(rate.get(k, []))) for k in drawn], ordered, "output tok/s"),
    ]
    y = 188.0
    for n, name in enumerate(drawn):
        color = _PALETTE[n % len(_PALETTE)]
        x = (n % 2) * WIDTH / 2
        parts.append(
            f'<rect x="{x:.1f}" y="{y - 9:.1f}" width="10" height="10" fill="{color}"/>'
            + _text(x + 14, y, name)
        )
        if n % 2:
            y += 15
    if len(drawn) % 2:
        y += 15
    if len(names) > len(drawn):
        parts.append(_text(0, y, f"first {len(drawn)} of {len(names)} lines drawn", color="#777"))
        y += 15
    return svg(WIDTH, math.ceil(y), "".join(parts), "latency and throughput against load")


def charts_html(df: Any, summary: Any = None) -> str:
    """The charts for a compare frame: latency per cell, and against load when `summary` (a
    `summarize(df)`) has a `load` column with more than one level."""
    needed = {"endpoint", "scenario", "outcome", "latency_s"}
    parts = [latency_svg(df)] if needed <= set(df.columns) and len(df) else []
    if summary is not None and "load" in summary.columns and summary["load"].nunique() > 1:
        parts.append(load_svg(summary))
    return "".join(f'<div style="margin:6px 0">{p}</div>' for p in parts if p)
