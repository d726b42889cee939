"""Tables fitted to the terminal as the demo table is: the load summary, compare's rows and
side-by-side matrices (bfcl's categories, compare's scenarios x endpoints).

Too narrow for a whole table, the most telling columns are kept (the first ones whole
enough to read), the others left out from the end of a list, and a line names them; a
pipe (width None) gets every column whole. Plain string work, as `text`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .text import (
    SHORT_HEADERS,
    SHORT_MEANING,
    format_table,
    line_width,
    natural_widths,
    one_line,
    wrap,
)

__all__ = [
    "compare_table_text",
    "fit_columns",
    "fit_table",
    "load_summary_rows",
    "load_summary_text",
]


def fit_columns(
    first: str, names: Sequence[str], rows: Sequence[Mapping[str, str]], width: int | None
) -> str:
    """`rows` under `first` and one column per name, as tables side by side as many
    columns as fit the width (one table per chunk); a long name or cell is cut."""
    if width is None:
        return format_table(rows, [first, *names])
    head = max(len(first), *(len(r[first]) for r in rows)) + 2
    cells = {n: max(len(r[n]) for r in rows) for n in names}
    limit = max(12, *cells.values())
    headers = {n: one_line(n, limit) for n in names}
    chunks: list[list[str]] = [[]]
    used = head
    for name in names:
        need = max(cells[name], len(headers[name])) + 2
        if chunks[-1] and used + need > width:
            chunks.append([])
            used = head
        chunks[-1].append(name)
        used += need
    return "\n\n".join(
        format_table(rows, [first, *chunk], width=width, cut_first=[first], headers=headers)
        for chunk in chunks
    )


_LOAD_SHORT = {
    "p50_latency_s": "p50 s",
    "p95_latency_s": "p95 s",
    "p50_ttft_s": "ttft s",
    "output_tokens_per_s": "tok/s",
}
_LOAD_SHORT_MEANING = "p50 s, p95 s: latency percentiles; ttft s: p50 time to first token"
# Too narrow for every column: kept most telling first, the others left out from the end.
_LOAD_KEPT_FIRST = [
    "endpoint",
    "scenario",
    "load",
    "ok",
    "runs",
    "p50_latency_s",
    "output_tokens_per_s",
    "p95_latency_s",
    "p50_ttft_s",
]
_LOAD_FLOOR = {"endpoint": 12, "scenario": 10}


def _number(value: Any, digits: int) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-"
    if value != value or value in (float("inf"), float("-inf")):  # NaN, inf: no measurement
        return "-"
    return f"{value:.{digits}f}" if abs(value) < 1e15 else f"{value:.3g}"


def load_summary_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """`load_summary` records as text cells: latencies to the millisecond, tokens per
    second to a tenth, "-" where nothing was measured."""
    return [
        {
            "endpoint": str(r["endpoint"]),
            "scenario": str(r["scenario"]),
            "load": str(r["load"]),
            "ok": str(r["ok"]),
            "runs": str(r["runs"]),
            "p50_latency_s": _number(r["p50_latency_s"], 3),
            "p95_latency_s": _number(r["p95_latency_s"], 3),
            "p50_ttft_s": _number(r["p50_ttft_s"], 3),
            "output_tokens_per_s": _number(r["output_tokens_per_s"], 1),
        }
        for r in rows
    ]


def fit_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str],
    width: int | None,
    *,
    kept_first: Sequence[str],
    floors: Mapping[str, int],
    headers: Mapping[str, str] | None = None,
    meaning: str = "",
    always: int = 2,
) -> str:
    """`rows` within `width` as the demo table is: whole when it fits (or a pipe: None);
    else headed with `headers` (`meaning` says what they mean), the first `always` columns
    of `kept_first` always shown, the others kept in that order while their floors
    fit, the cells cut no narrower than `floors`, and a line naming the columns left out.
    """
    if width is None or line_width(natural_widths(rows, columns, None)) <= width:
        return format_table(rows, columns)
    need = dict(zip(columns, natural_widths(rows, columns, headers), strict=True))
    floor = {c: min(w, floors.get(c, w)) for c, w in need.items()}
    always_shown = list(kept_first[:always])
    kept: list[str] = []
    for column in kept_first:
        narrowest = line_width([*(floor[k] for k in kept), floor[column]])
        if column in always_shown or narrowest <= width:
            kept.append(column)
    shown = [c for c in columns if c in kept]
    cut = [c for c in reversed(kept_first) if c in floors and c in shown]
    text = format_table(rows, shown, width=width, cut_first=cut, headers=headers, floors=floors)
    notes = [meaning] if meaning and any(h in shown for h in headers or {}) else []
    left_out = [c for c in columns if c not in kept]
    if left_out:
        notes.append(
            f"left out to fit {width} columns: {', '.join(left_out)} "
            "(a wider terminal, --json or --csv shows every column)"
        )
    return "\n".join([text, *(wrap(n, width) for n in notes)])


def load_summary_text(cells: Sequence[Mapping[str, str]], width: int | None) -> str:
    """The load summary fitted to `width` (`fit_table`): endpoint and scenario always,
    then load, runs ok, runs, p50 latency, tokens per second, p95, time to first token."""
    # Imported here: rig_nb.load pulls in the SDK, which `--help` must not load.
    from ..load import LOAD_SUMMARY_COLUMNS

    return fit_table(
        cells,
        LOAD_SUMMARY_COLUMNS,
        width,
        kept_first=_LOAD_KEPT_FIRST,
        floors=_LOAD_FLOOR,
        headers=_LOAD_SHORT,
        meaning=_LOAD_SHORT_MEANING,
    )


# The compare rows too narrow for every column: kept most telling first.
_COMPARE_KEPT_FIRST = [
    "endpoint",
    "scenario",
    "outcome",
    "repeat",
    "load",
    "copy",
    "latency",
    "error",
    "ending",
    "tool calls",
    "iterations",
    "tokens in/out",
    "model",
    "shapes",
    "leaks",
]
_COMPARE_FLOOR = {"endpoint": 12, "scenario": 12, "error": 20, "ending": 10, "model": 12}


def compare_table_text(
    rows: Sequence[Mapping[str, str]], columns: Sequence[str], width: int | None
) -> str:
    """Compare's rows (`compare_table_rows`, with load and copy in a sweep) fitted to
    `width` (`fit_table`): endpoint, scenario and outcome first."""
    kept = [c for c in _COMPARE_KEPT_FIRST if c in columns]
    return fit_table(
        rows,
        columns,
        width,
        kept_first=kept,
        floors=_COMPARE_FLOOR,
        headers=SHORT_HEADERS,
        meaning="; ".join(SHORT_MEANING.values()),
        always=3,
    )
