"""TraceView: a trace as a live table, one expandable row per iteration.

Every widget costs a comm message and a browser-side model, so a row is one
ToggleButton and nothing else: the row's text is a line in an HTML widget
shared by a run of rows (a segment). The view is one two-column GridBox:

    summary and header                 (spans both columns)
    toggles of rows 0..k  | lines of rows 0..k
    detail of row k       (spans both columns; only while row k is open)
    toggles of rows k+1.. | lines of rows k+1..

A segment ends at an open row or after SEGMENT_ROWS rows, so a live update
re-sends at most SEGMENT_ROWS lines. Toggles and lines are both LINE_PX high,
which keeps each toggle beside its line. Columns have fixed widths except the
text, which takes what is left, so the table fits an 800 px output area; a
cell cut short shows its full text on hover.

While a reply streams, the loop notifies at most 10 times a second: each time
the growing row's line (and its detail, when open) and the summary are sent
again, nothing else.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

import ipywidgets as widgets
from ipywidgets.widgets.widget_bool import ToggleButtonStyle
from ipywidgets.widgets.widget_string import HTMLStyle

from .._html import (
    DISPLAY_CHARS,
    ITERATION_HEADER,
    esc,
    iteration_cells,
    marked_reasoning_html,
    messages_text,
    pre,
    table_html,
    trace_html,
    trace_summary,
)
from .._svg import timeline_svg
from ..trace import Iteration, Trace

__all__ = ["IterationRow", "TraceView", "display_trace", "register_display"]

SEGMENT_ROWS = 16
LINE_PX = 28
TOGGLE_PX = 36
LINE_CLASS = "rig-nb-line"  # marks a row's line, for the browser tests
_OK_COLOR, _FAIL_COLOR = "#1b5e20", "#b71c1c"
# Pixel widths of the columns of ITERATION_HEADER; None is the text column, which flexes.
_WIDTHS: list[int | None] = [26, 104, 70, 72, None, 76, 92, 36, 100]
_TOOL_HEADER = [
    "id",
    "received id",
    "name",
    "source",
    "arguments",
    "result",
    "error",
    "duration s",
]
_TOGGLE_TOOLTIP = "show everything sent and received"
_CELL_STYLE = "padding-right:6px;overflow:hidden;white-space:nowrap;text-overflow:ellipsis"
_LINE_STYLE = f"display:flex;font-size:12px;height:{LINE_PX}px;line-height:{LINE_PX}px"
LEGEND = (
    "shape: where &lt;think&gt; tags sat in the content (closed, unopened = a bare "
    "&lt;/think&gt;, unclosed). leaks: other reasoning or tool-call markup found in the "
    "content. ending: how the turn ended (answer, tool_calls, reasoning_only, "
    "text_tool_calls, length, length_in_reasoning, empty, error); cut: the server dropped "
    "part of the prompt. tokens: prompt/completion, then the share of the previous prompt "
    "the server reused from its cache, and why this request did not extend the previous one "
    "(the prefix break) when it did not."
)


def _width(w: int | None) -> str:
    # width:0: the nowrap text's own width must not become the line's minimum width.
    return "flex:1 1 0;width:0;min-width:60px" if w is None else f"flex:none;width:{w}px"


def row_html(cells: list[str], *, header: bool = False) -> str:
    """One table line of cells, escaped; the full cell text is its tooltip (up to 2,000 chars)."""
    weight = ";font-weight:bold" if header else ""
    spans = "".join(
        f'<span title="{esc(c[:2000])}" style="{_width(w)};{_CELL_STYLE}{weight}">{esc(c)}</span>'
        for c, w in zip(cells, _WIDTHS, strict=True)
    )
    if header:  # indented past the toggle column, ruled off from the rows
        style = f"{_LINE_STYLE};padding-left:{TOGGLE_PX}px;border-bottom:1px solid #999"
        return f'<div style="{style}">{spans}</div>'
    return f'<div class="{LINE_CLASS}" style="{_LINE_STYLE}">{spans}</div>'


def _outcome_color(outcome: str) -> str:
    """The summary line's colour: green only for "ok", red for any other outcome, none while
    the run has no outcome yet."""
    if not outcome:
        return "inherit"
    return _OK_COLOR if outcome == "ok" else _FAIL_COLOR


def top_html(trace: Trace) -> str:
    """The summary line (its outcome is `trace.outcome`), the run's timeline (rig_nb._svg),
    and the legend above the header."""
    style = f"line-height:{LINE_PX}px;color:{_outcome_color(trace.outcome)}"
    summary = f'<div style="{style}">{esc(trace_summary(trace))}</div>'
    timeline = (
        f'<div style="margin:2px 0 6px">{timeline_svg(trace)}</div>' if trace.iterations else ""
    )
    legend = f'<div style="font-size:11px;color:#666;line-height:1.3">{LEGEND}</div>'
    return summary + timeline + legend + row_html(ITERATION_HEADER, header=True)


def _signature(it: Iteration) -> tuple[Any, ...]:
    calls = tuple((c.name, len(c.result), c.is_error, c.duration_s) for c in it.tool_calls)
    return (
        it.finish_reason,
        it.ending,
        it.chunks,
        it.error,
        len(it.raw_content),
        len(it.text),
        len(it.reasoning_content),
        len(it.messages),
        it.latency_s,
        calls,
        it.prefix_break,
    )


def _facts(it: Iteration) -> str:
    facts = [
        f"ending {it.ending or '-'}",
        f"finish {it.finish_reason or '-'}",
        f"shape {it.reasoning_shape}",
        f"leaks {', '.join(it.leaks) or 'none'}",
        f"reasoning field {it.reasoning_field or 'none'}",
        f"tokens {', '.join(f'{k} {v}' for k, v in it.usage.items()) or 'not reported'}",
        f"latency {it.latency_s:.3f} s",
    ]
    if it.context_cut:
        facts.append("context cut: fewer prompt tokens than an earlier turn, part was dropped")
    if it.server_timings:
        facts.append("server " + ", ".join(f"{k} {v:g}" for k, v in it.server_timings.items()))
    if it.streamed:
        rate = it.decode_tok_s
        facts.append(f"streamed: {it.chunks} chunks, first after {it.ttft_s:.3f} s")
        if rate is not None:
            facts.append(f"{rate:.1f} tokens/s after it")
    return esc("; ".join(facts))


def iteration_detail_html(it: Iteration) -> str:
    """Everything about one iteration, escaped: sent messages, raw vs stripped, calls."""
    sent = messages_text(it.messages)
    parts = [
        _facts(it),
        f"<b>Sent</b> ({len(it.messages)} messages)",
        pre(sent[:DISPLAY_CHARS] + ("\n..." if len(sent) > DISPLAY_CHARS else "")),
        "<b>Raw reply</b> (struck through: what strip_reasoning removes)",
        marked_reasoning_html(it.raw_content, it.reasoning_shape),
        "<b>Stripped text</b>",
        pre(it.text),
    ]
    if it.reasoning_content:
        parts += [f"<b>Reasoning field</b> ({esc(it.reasoning_field)})", pre(it.reasoning_content)]
    if it.tool_calls:
        rows = [
            [
                c.id,
                c.received_id,
                c.name,
                c.source,
                c.arguments[:DISPLAY_CHARS],
                c.result[:DISPLAY_CHARS],
                f"{c.error_type or 'yes'}" if c.is_error else "",
                f"{c.duration_s:.3f}",
            ]
            for c in it.tool_calls
        ]
        styles = [["white-space:pre-wrap;word-break:break-word"] * len(_TOOL_HEADER) for _ in rows]
        parts += [f"<b>Tool calls</b> ({len(rows)})", table_html(_TOOL_HEADER, rows, styles)]
    if it.prefix_break:
        parts += ["<b>Prefix break</b> (why the server could not reuse its cache)"]
        parts.append(pre(it.prefix_break))
    if it.error:
        parts += ["<b>Error</b>", pre(it.error)]
    return '<div style="padding:2px 0 10px;line-height:1.4">' + "<br>".join(parts) + "</div>"


class _Shared:
    """One view's layouts and style: each is a widget of its own, so shared by every row."""

    def __init__(self) -> None:
        self.grid_layout = widgets.Layout(
            grid_template_columns=f"{TOGGLE_PX}px minmax(0, 1fr)", grid_gap="0px", width="100%"
        )
        self.toggle_layout = widgets.Layout(
            width=f"{TOGGLE_PX}px", height=f"{LINE_PX}px", margin="0px"
        )
        self.toggle_style = ToggleButtonStyle()
        self.column_layout = widgets.Layout(margin="0px")
        self.lines_layout = widgets.Layout(margin="0px")
        # grid_area, not grid_column: the front end applies grid_area after grid_column, and
        # an unset grid_area removes the grid-area shorthand, grid-column included.
        self.span_layout = widgets.Layout(grid_area="auto / 1 / auto / 3", margin="0px")
        self.html_style = HTMLStyle()

    def html(self, value: str, layout: Any) -> Any:
        return widgets.HTML(value=value, layout=layout, style=self.html_style)

    def close(self) -> None:
        for w in vars(self).values():
            w.close()


class IterationRow:
    """One table row: its toggle and its escaped line; the full detail is built on first open."""

    def __init__(self, iteration: Iteration, shared: _Shared, reuse: float | None = None) -> None:
        self.iteration = iteration
        self._shared = shared
        self.toggle = widgets.ToggleButton(
            value=False,
            icon="chevron-right",
            tooltip=_TOGGLE_TOOLTIP,
            layout=shared.toggle_layout,
            style=shared.toggle_style,
        )
        self.cells = iteration_cells(iteration, reuse)
        self.line = row_html(self.cells)
        self.detail: Any = None  # an HTML widget spanning both grid columns, made on first open
        self._shown = (*_signature(iteration), reuse)
        self._detail_for: tuple[Any, ...] | None = None

    @property
    def expanded(self) -> bool:
        return bool(self.toggle.value)

    def update(self, iteration: Iteration, reuse: float | None = None) -> None:
        sig = (*_signature(iteration), reuse)
        if iteration is self.iteration and sig == self._shown:
            return
        self.iteration = iteration
        self._shown = sig
        self.cells = iteration_cells(iteration, reuse)
        self.line = row_html(self.cells)
        if self.expanded:
            self.build_detail()

    def build_detail(self) -> None:
        sig = _signature(self.iteration)
        if self.detail is None:
            self.detail = self._shared.html("", self._shared.span_layout)
        if sig != self._detail_for:
            self.detail.value = iteration_detail_html(self.iteration)
            self._detail_for = sig

    def close(self) -> None:
        self.toggle.close()
        if self.detail is not None:
            self.detail.close()


class TraceView(widgets.GridBox):  # type: ignore[misc]
    """A trace as a table; follows the trace live while a run fills it.

    view = TraceView()
    display(view)
    client.run(request, trace=view.trace)
    """

    def __init__(self, trace: Trace | None = None) -> None:
        self.trace = Trace() if trace is None else trace
        self.rows: list[IterationRow] = []
        self._shared = _Shared()
        # (toggle column VBox, lines HTML) pairs, reused as rows open and close.
        self._segments: list[tuple[Any, Any]] = []
        self.summary = self._shared.html("", self._shared.span_layout)
        self._lock = threading.RLock()
        super().__init__([self.summary], layout=self._shared.grid_layout)
        self.trace.add_listener(self._on_change)
        self.refresh()

    def _on_change(self, trace: Trace) -> None:
        # Called from the thread running the loop; widget state syncs on each set.
        self.refresh()

    def refresh(self) -> None:
        """Bring the table up to date with the trace (the listener calls this)."""
        with self._lock:
            its = list(self.trace.iterations)
            if len(its) < len(self.rows):  # the trace was reset: start over
                for row in self.rows:
                    row.close()
                self.rows = []
            reuse = self.trace.prefix_reuse
            for row, it, share in zip(self.rows, its, reuse, strict=False):
                row.update(it, share)
            for it, share in zip(its[len(self.rows) :], reuse[len(self.rows) :], strict=False):
                row = IterationRow(it, self._shared, share)
                row.toggle.observe(partial(self._on_toggle, row), names="value")
                self.rows.append(row)
            self.summary.value = top_html(self.trace)
            self._place()

    def _segment(self, n: int) -> tuple[Any, Any]:
        while len(self._segments) <= n:
            column = widgets.VBox([], layout=self._shared.column_layout)
            lines = self._shared.html("", self._shared.lines_layout)
            self._segments.append((column, lines))
        return self._segments[n]

    def _place(self) -> None:
        """Lay the rows out as grid children: segments of toggles and lines, open details."""
        children: list[Any] = [self.summary]
        run: list[IterationRow] = []
        used = 0
        for i, row in enumerate(self.rows):
            run.append(row)
            last = i == len(self.rows) - 1
            if row.expanded or len(run) == SEGMENT_ROWS or last:
                column, lines = self._segment(used)
                used += 1
                column.children = tuple(r.toggle for r in run)
                lines.value = "".join(r.line for r in run)
                children += [column, lines]
                run = []
                if row.expanded and row.detail is not None:
                    children.append(row.detail)
        self.children = tuple(children)

    def _on_toggle(self, row: IterationRow, change: dict[str, Any]) -> None:
        with self._lock:
            if change["new"]:
                row.toggle.icon = "chevron-down"
                row.build_detail()
            else:
                row.toggle.icon = "chevron-right"
            self._place()

    def close(self) -> None:
        # Also reached from Widget.__del__, possibly on a half-built view.
        if hasattr(self, "trace"):
            self.trace.remove_listener(self._on_change)
        for row in getattr(self, "rows", ()):
            row.close()
        for column, lines in getattr(self, "_segments", ()):
            column.close()
            lines.close()
        for name in ("summary", "_shared"):
            if hasattr(self, name):
                getattr(self, name).close()
        super().close()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        data: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)
        if data is not None:
            # Shown where widgets cannot render (a static viewer of a saved notebook).
            data["text/html"] = trace_html(self.trace)
        return data

    def __repr__(self) -> str:
        return f"<TraceView {trace_summary(self.trace)}>"


def display_trace(trace: Trace) -> None:
    """Display `trace` as a TraceView (what a bare `trace` in a cell shows)."""
    from IPython.display import display

    display(TraceView(trace))  # type: ignore[no-untyped-call]


def register_display() -> None:
    """Show a bare `trace` in a notebook cell as a live TraceView (IPython kernels only)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        formatter = shell.display_formatter.ipython_display_formatter
        formatter.for_type(Trace, display_trace)
