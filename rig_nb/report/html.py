"""The static HTML page of a report: one Trace, a list of Traces, or a compare DataFrame.

One file that needs no script and no network to read: inline CSS, a
Content-Security-Policy that forbids scripts, images and every fetch, and no link that
leaves the page (rows link to their trace sections by fragment). Every string that came
from an endpoint or a trace file (cells, column names, model and tool names, ids, errors,
replies) goes through `rig_nb._html.esc`; long texts are cut as `rig_nb._html` cuts them
and one-line facts are previewed. Output is deterministic. pandas and `compare.summarize`
are imported only for a DataFrame. A trace section's heading, its line and the line's
colour say one outcome, the trace's or its compare row's: green only for "ok". No part of
the page is wider than the window: a wide table scrolls inside its own box. A load
sweep's page has its load table and, as CompareView, the charts of `report.charts`
(latency per cell; latency and throughput against load).
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._html import (
    DISPLAY_CHARS,
    ITERATION_HEADER,
    esc,
    iteration_cells,
    marked_reasoning_html,
    messages_text,
    pre,
    preview,
    table_html,
)
from .._svg import timeline_svg
from ..trace import Iteration, ToolCallRecord, Trace
from ..usage import Usage
from .charts import charts_html
from .files import write_file

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["frame_page", "save_html", "trace_page", "traces_page"]

_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; script-src 'none'; "
    "base-uri 'none'; form-action 'none'"
)
_CSS = """
body{font:13px/1.45 system-ui,sans-serif;margin:16px;color:#222;overflow-wrap:break-word}
h1{font-size:18px;margin:0 0 8px}
h2{font-size:15px;margin:24px 0 6px}
h3{font-size:14px;margin:22px 0 4px;padding-top:8px;border-top:1px solid #ccc}
h4{font-size:12px;margin:10px 0 2px;color:#444}
pre{white-space:pre-wrap;word-break:break-word;max-height:24em;overflow:auto;margin:0;
padding:4px;border:1px solid #ddd;font-size:12px;line-height:1.35;background:#fcfcfc}
del{background:#eee;color:#777}
summary{cursor:pointer}
.scroll{overflow-x:auto;max-width:100%}
.scroll::-webkit-scrollbar{width:12px;height:12px}
.scroll::-webkit-scrollbar-track{background:#eee}
.scroll::-webkit-scrollbar-thumb{background:#999;border:2px solid #eee;border-radius:6px}
@supports not selector(::-webkit-scrollbar){.scroll{scrollbar-color:#999 #eee}}
.scroll.tall{overflow:auto;max-height:80vh;border:1px solid #ddd}
table.rows{border-collapse:collapse;font-size:12px}
table.rows th,table.rows td{padding:2px 6px;text-align:left;vertical-align:top;
white-space:nowrap;border-bottom:1px solid #eee}
table.rows th{white-space:normal;max-width:12em;overflow-wrap:break-word;position:sticky;top:0;
background:#fff;border-bottom:1px solid #999}
table.rows td.long{white-space:normal;min-width:12em;max-width:28em;overflow-wrap:break-word}
.ok{color:#1b5e20}.bad{color:#b71c1c}.muted{color:#777}
details.it{margin:4px 0;border:1px solid #ddd;border-radius:3px;padding:2px 8px}
details.it>summary{font-family:ui-monospace,monospace;font-size:12px}
details.msgs>summary{color:#444;font-size:12px;margin-top:6px}
.call{margin:6px 0 6px 12px;padding-left:8px;border-left:3px solid #ddd}
dl.kv{display:grid;grid-template-columns:fit-content(40%) minmax(0,1fr);gap:0 12px;margin:0;
font-size:12px}
dl.kv dt,dl.kv dd{margin:0;overflow-wrap:anywhere}dl.kv dt{color:#555}
"""
_MATRIX_NOTE = (
    "each cell: runs that passed / runs (pass^k: all k repeats passed; flaky: some did, "
    "some did not), and the median latency"
)
_LOAD_NOTE = (
    "per endpoint, scenario and load level L (L copies at once): runs ok / runs, p50 and "
    "p95 latency over every copy, p50 time to first token (streamed runs), and output "
    "tokens per second (the copies' completion tokens over the level's wall time)"
)
_CELL_CHARS = 160
_WRAP_CHARS = 32  # a longer cell of the rows table wraps (in 12 to 28em); shorter ones do not
_LINE_CHARS = 500  # one-line facts (ids, names, summaries) from a trace file can be any length


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>\n"
        f"<body>\n<h1>{esc(title)}</h1>\n{body}\n</body></html>\n"
    )


def _kv(pairs: Sequence[tuple[str, Any]]) -> str:
    items = "".join(
        f"<dt>{esc(preview(str(k), _LINE_CHARS))}</dt><dd>{esc(preview(str(v), _LINE_CHARS))}</dd>"
        for k, v in pairs
    )
    return f'<dl class="kv">{items}</dl>'


def _messages_html(it: Iteration, prev: Iteration | None) -> str:
    sent = it.messages
    shared = 0
    if prev is not None and len(prev.messages) <= len(sent):
        if sent[: len(prev.messages)] == prev.messages:
            shared = len(prev.messages)
    new = sent[shared:]
    since = f", {len(new)} new since iteration {prev.index}" if shared and prev else ""
    return (
        f'<details class="msgs"><summary>messages sent: {len(sent)}{esc(since)}</summary>'
        f"{pre(messages_text(new), '')}</details>"
    )


def _call_html(call: ToolCallRecord) -> str:
    facts = [("id", call.id)]
    if call.received_id != call.id:
        facts.append(("received id", call.received_id or "(none)"))
    facts += [("source", call.source), ("duration s", f"{call.duration_s:.3f}")]
    if call.is_error:
        facts.append(("error", call.error_type or "tool error fed back"))
    label = "result (error fed back)" if call.is_error else "result"
    return (
        f'<div class="call"><b>{esc(preview(call.name, _LINE_CHARS)) or "(no name)"}</b>'
        f"{_kv(facts)}"
        f"<h4>arguments</h4>{pre(call.arguments, '')}<h4>{label}</h4>{pre(call.result, '')}</div>"
    )


def _iteration_html(it: Iteration, prev: Iteration | None) -> str:
    usage = Usage.of(it.usage)
    tokens = f"{usage.prompt_tokens}/{usage.completion_tokens}"
    bits = [f"#{it.index}", it.ending or "-", f"finish {it.finish_reason or '-'}"]
    bits += [it.reasoning_shape] + ([f"leaks {','.join(it.leaks)}"] if it.leaks else [])
    bits += [f"tokens {tokens}", f"{it.latency_s:.2f} s"] + (["error"] if it.error else [])
    parts = [_messages_html(it, prev), "<h4>raw reply (struck through: reasoning stripped)</h4>"]
    parts.append(marked_reasoning_html(it.raw_content, it.reasoning_shape))
    if it.reasoning_content:
        field = it.reasoning_field or "reasoning"
        parts.append(f"<h4>reasoning field: {esc(field)}</h4>{pre(it.reasoning_content, '')}")
    if it.text != it.raw_content.strip():
        parts.append(f"<h4>answer (stripped)</h4>{pre(it.text, '')}")
    if it.tool_calls:
        parts.append(f"<h4>tool calls ({len(it.tool_calls)})</h4>")
        parts += [_call_html(c) for c in it.tool_calls]
    facts: list[tuple[str, Any]] = [(k, v) for k, v in it.usage.items()]
    facts += [("latency s", f"{it.latency_s:.3f}"), ("streamed", it.streamed)]
    if it.streamed:
        facts += [("ttft s", f"{it.ttft_s:.3f}"), ("chunks", it.chunks)]
    facts += [("ending", it.ending), ("reasoning shape", it.reasoning_shape)]
    facts += [("leaks", ", ".join(it.leaks) or "none")]
    parts.append(f"<h4>usage, timing, ending</h4>{_kv(facts)}")
    if it.error:
        parts.append(f"<h4>error</h4>{pre(it.error, '')}")
    return (
        f'<details class="it"><summary>{esc(preview(" | ".join(bits), _LINE_CHARS))}</summary>'
        f"{''.join(parts)}</details>"
    )


def _outcome_class(outcome: str) -> str:
    """Green only for "ok"; an unfinished run ("") is neither."""
    if not outcome:
        return "muted"
    return "ok" if outcome == "ok" else "bad"


def _summary(trace: Trace, outcome: str) -> str:
    """The section's line: model, endpoint label, `outcome`, iterations, tool calls, elapsed.

    `outcome` is the trace's own, or the compare row's: a scenario can fail a run that ended
    in an answer (no tool call made, no JSON in it), and the line says what the row says.
    """
    n, calls = len(trace.iterations), len(trace.tool_calls)
    elapsed = trace.elapsed_s or sum(it.latency_s for it in trace.iterations)
    return (
        f"{trace.model or '?'} @ {trace.endpoint or '?'}: {outcome or 'running'}, "
        f"{n} iteration{'' if n == 1 else 's'}, {calls} tool call{'' if calls == 1 else 's'}, "
        f"{elapsed:.2f} s"
    )


def _trace_html(trace: Trace, anchor: str, title: str, outcome: str) -> str:
    """A trace's section; `outcome` (see `_summary`) alone decides the line and its colour."""
    rows = [
        iteration_cells(it, r) for it, r in zip(trace.iterations, trace.prefix_reuse, strict=True)
    ]
    styles = [[""] * len(ITERATION_HEADER) for _ in rows]
    settings = json.dumps(trace.settings, indent=1, ensure_ascii=False, default=str)
    parts = [
        f'<section id="{anchor}"><h3>{esc(preview(title, _LINE_CHARS))}</h3>',
        f'<p class="{_outcome_class(outcome)}">'
        f"{esc(preview(_summary(trace, outcome), _LINE_CHARS))}</p>",
    ]
    if trace.error:
        parts.append(f"<h4>error</h4>{pre(trace.error, '')}")
    parts.append(f'<details class="msgs"><summary>settings</summary>{pre(settings, "")}</details>')
    if rows:
        parts.append(timeline_svg(trace))
        parts.append(f'<div class="scroll">{table_html(ITERATION_HEADER, rows, styles)}</div>')
    prev: Iteration | None = None
    for it in trace.iterations:
        parts.append(_iteration_html(it, prev))
        prev = it
    parts.append("</section>")
    return "".join(parts)


def _cell(value: Any) -> str:
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.2f}"
    return str(value)


def _rows_table(header: list[str], rows: list[tuple[str, list[Any]]]) -> str:
    """Rows linking to their trace sections (anchor, cells); every header and cell escaped.

    A long cell wraps (12 to 28em wide) and a header may break after "_", so the table
    fits the page where it can; where it cannot, its box (shorter than the window) scrolls
    both ways with the column names on top and its scrollbars drawn: an overlay
    scrollbar, or one at the foot of a long table, is out of sight.
    """
    th = "".join(f"<th>{esc(h).replace('_', '_<wbr>')}</th>" for h in header)
    body = []
    for anchor, cells in rows:
        tds = []
        for value in cells:
            text = _cell(value)
            short = preview(text, _CELL_CHARS)
            title = f' title="{esc(text[:DISPLAY_CHARS])}"' if short != text else ""
            long = ' class="long"' if len(short) > _WRAP_CHARS else ""
            tds.append(f"<td{long}{title}>{esc(short)}</td>")
        link = f'<a href="#{anchor}">trace</a>' if anchor else '<span class="muted">none</span>'
        body.append(f"<tr><td>{link}</td>{''.join(tds)}</tr>")
    return (
        f'<div class="scroll tall"><table class="rows"><thead><tr><th></th>{th}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


_GROUP_NOTE = (
    "Each cell: runs ok / runs in that group (a BFCL category), and the share, rounded down. "
    "A miss is wrong_call (BFCL's error type in the error column) or how the reply ended "
    "when it made no call BFCL would read (text_tool_calls, tool_calls_in_reasoning, ...)."
)


def _rate_style(ok: int, n: int) -> str:
    if not n:
        return ""
    hue = round(120 * ok / n)  # red (none passed) through amber to green (all passed)
    return f"background:hsl({hue},65%,85%)"


def _frame_html(frame: Any) -> tuple[str, str]:
    import pandas as pd

    from ..compare import has_groups, summarize

    traces = frame.attrs.get("traces")
    traces = traces if isinstance(traces, dict) else {}
    # pandas deep-copies attrs into every frame or column derived from this one (the traces
    # would be copied per column access): work on a view that has none.
    df = full = pd.DataFrame(frame, copy=False)
    walls = frame.attrs.get("load_walls")
    if isinstance(walls, dict):
        # A sweep's wall times: tokens per second as `summarize(frame)` and CompareView
        # give them (without, each group's slowest copy stands for its wall time).
        df.attrs["load_walls"] = dict(walls)
    missing = [c for c in ("endpoint", "scenario", "outcome", "latency_s") if c not in df.columns]
    if missing:
        raise ValueError(f"not a compare DataFrame: no column {', '.join(map(repr, missing))}")
    grouped = has_groups(df)
    by_group = _groups_html(df) if grouped else ""
    if grouped:  # the per-scenario matrix only for rows outside any group
        df = df[df["group"].astype(str) == ""]
    matrix = summarize(df)
    if "load" in matrix.columns:  # a load sweep: one row per (endpoint, scenario, load)
        from ..load import load_table_html

        ok = int((df["outcome"] == "ok").sum())
        parts = [
            f"<p>{len(df)} runs, {ok} passed; load levels "
            f"{esc(', '.join(map(str, dict.fromkeys(matrix['load']))))}.</p>",
            f'<h2>Load</h2><p class="muted">{_LOAD_NOTE}</p>',
            f'<div class="scroll">{load_table_html(matrix)}</div>',
            # Latency and throughput against load, as CompareView draws them (charts.load_svg).
            charts_html(df, matrix),
        ]
        return _rows_and_traces(full, traces, [by_group, *parts])
    counts: dict[tuple[Any, Any], list[int]] = {}
    for endpoint, scenario, outcome in zip(
        df["endpoint"], df["scenario"], df["outcome"], strict=True
    ):
        count = counts.setdefault((endpoint, scenario), [0, 0])
        count[0] += outcome == "ok"
        count[1] += 1
    header = ["scenario", *map(str, matrix.columns)]
    cells, styles = [], []
    for scenario, row in zip(matrix.index, matrix.itertuples(index=False), strict=True):
        cells.append([scenario, *row])
        rates = [_rate_style(*counts.get((e, scenario), [0, 0])) for e in matrix.columns]
        styles.append(["font-weight:bold", *rates])
    ok = sum(c[0] for c in counts.values())
    parts = [by_group] if grouped else []
    if len(df) or not grouped:
        parts += [
            f"<p>{len(df)} runs, {ok} passed; {len(matrix.columns)} endpoints x "
            f"{len(matrix.index)} scenarios.</p>",
            f'<h2>Summary</h2><p class="muted">{_MATRIX_NOTE}</p>',
            f'<div class="scroll">{table_html(header, cells, styles)}</div>',
            charts_html(df, matrix),
        ]
    return _rows_and_traces(full, traces, parts)


def _groups_html(df: Any) -> str:
    """The per-group table (`summarize(df, by="group")`: BFCL's categories), coloured by
    pass rate, with a line of totals."""
    from ..compare import summarize

    table = summarize(df, by="group")
    counts: dict[tuple[Any, Any], list[int]] = {}
    for endpoint, group, outcome in zip(df["endpoint"], df["group"], df["outcome"], strict=True):
        count = counts.setdefault((endpoint, group), [0, 0])
        count[0] += outcome == "ok"
        count[1] += 1
    cells, styles = [], []
    for group, row in zip(table.index, table.itertuples(index=False), strict=True):
        cells.append([group or "(no group)", *row])
        rates = [_rate_style(*counts.get((e, group), [0, 0])) for e in table.columns]
        styles.append(["font-weight:bold", *rates])
    ok = sum(c[0] for c in counts.values())
    header = ["group", *map(str, table.columns)]
    return (
        f"<p>{len(df)} runs, {ok} passed; {len(table.columns)} endpoints x "
        f"{len(table.index)} groups.</p>"
        f'<h2>By group</h2><p class="muted">{_GROUP_NOTE}</p>'
        f'<div class="scroll">{table_html(header, cells, styles)}</div>'
    )


def _rows_and_traces(df: Any, traces: dict[Any, Trace], parts: list[str]) -> tuple[str, str]:
    columns = [str(c) for c in df.columns]
    rows, sections = [], []
    positions = {c: i for i, c in enumerate(df.columns)}
    for pos, (label, values) in enumerate(zip(df.index, df.itertuples(index=False), strict=True)):
        trace = traces.get(label)
        anchor = f"row-{pos}" if trace is not None else ""
        rows.append((anchor, list(values)))
        if trace is not None:
            named = [_cell(values[positions[c]]) for c in ("endpoint", "scenario", "outcome")]
            repeat = f" #{_cell(values[positions['repeat']])}" if "repeat" in positions else ""
            title = f"row {label}: {named[0]} / {named[1]}{repeat}: {named[2]}"
            sections.append(_trace_html(trace, anchor, title, named[2]))
    parts.append(f"<h2>Runs</h2>{_rows_table(columns, rows)}")
    parts.append("<h2>Traces</h2>" + ("".join(sections) or '<p class="muted">none</p>'))
    return f"rig_nb compare report: {len(df)} runs", "\n".join(parts)


def _traces_html(traces: list[Trace]) -> tuple[str, str]:
    header = ["model", "endpoint", "outcome", "ending", "iterations", "tool calls", "elapsed s"]
    rows = [
        (
            f"trace-{n}",
            [t.model, t.endpoint, t.outcome, t.ending, len(t.iterations), len(t.tool_calls)]
            + [t.elapsed_s],
        )
        for n, t in enumerate(traces)
    ]
    sections = [
        _trace_html(t, f"trace-{n}", f"trace {n}: {t.outcome or 'running'}", t.outcome)
        for n, t in enumerate(traces)
    ]
    body = f"<h2>Traces</h2>{_rows_table(header, rows)}" + "".join(sections)
    return f"rig_nb traces: {len(traces)}", body


def trace_page(trace: Trace) -> str:
    return _page("rig_nb trace", _trace_html(trace, "trace-0", "trace", trace.outcome))


def traces_page(traces: list[Trace]) -> str:
    return _page(*_traces_html(traces))


def frame_page(frame: Any) -> str:
    """The summary matrix (`compare.summarize`), the rows, then each row's trace."""
    return _page(*_frame_html(frame))


def _is_frame(obj: object) -> bool:
    pandas = sys.modules.get("pandas")  # not imported yet: obj cannot be a DataFrame
    return pandas is not None and isinstance(obj, pandas.DataFrame)


def save_html(obj: Trace | Sequence[Trace] | pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write one self-contained HTML file for a Trace, a list of Traces, or a compare frame."""
    if isinstance(obj, Trace):
        page = trace_page(obj)
    elif _is_frame(obj):
        page = frame_page(obj)
    elif isinstance(obj, list | tuple):
        bad = [n for n, t in enumerate(obj) if not isinstance(t, Trace)]
        if bad:
            raise TypeError(f"item {bad[0]} is a {type(obj[bad[0]]).__name__}, not a Trace")
        page = traces_page(list(obj))
    else:
        raise TypeError(
            f"save_html takes a Trace, a list of Traces or a compare DataFrame, "
            f"not {type(obj).__name__}"
        )
    write_file(path, page.encode("utf-8", "backslashreplace"))
