"""TraceView: a trace as a live table, one expandable row per iteration."""

from __future__ import annotations

import threading
from typing import Any

import ipywidgets as widgets
from ipywidgets.widgets.widget_bool import ToggleButtonStyle
from ipywidgets.widgets.widget_string import HTMLStyle

from ..trace import Iteration, Trace
from .render import (
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

__all__ = ["IterationRow", "TraceView", "display_trace"]

_WIDTHS = [32, 80, 130, 360, 120, 100, 70, 220]
_TOOL_HEADER = ["id", "received id", "name", "arguments", "result", "error", "duration s"]
_TOGGLE_TOOLTIP = "show everything sent and received"


def row_html(cells: list[str], *, header: bool = False) -> str:
    """One table line of fixed-width cells, escaped; the full cell text is its tooltip."""
    weight = "font-weight:bold;" if header else ""
    spans = "".join(
        f'<span title="{esc(c)}" style="flex:none;width:{w}px;padding-right:6px;overflow:hidden;'
        f'white-space:nowrap;text-overflow:ellipsis;{weight}">{esc(c)}</span>'
        for c, w in zip(cells, _WIDTHS, strict=True)
    )
    return f'<div style="display:flex;font-size:12px;line-height:28px">{spans}</div>'


class _Shared:
    """Layouts and styles one TraceView's rows share: each is a widget, so one per view."""

    def __init__(self) -> None:
        self.toggle_layout = widgets.Layout(width="36px")
        self.toggle_style = ToggleButtonStyle()
        self.html_layout = widgets.Layout()
        self.html_style = HTMLStyle()
        self.box_layout = widgets.Layout()

    def html(self, value: str) -> Any:
        return widgets.HTML(value=value, layout=self.html_layout, style=self.html_style)

    def close(self) -> None:
        for w in (
            self.toggle_layout,
            self.toggle_style,
            self.html_layout,
            self.html_style,
            self.box_layout,
        ):
            w.close()


def _signature(it: Iteration) -> tuple[Any, ...]:
    calls = tuple((c.name, len(c.result), c.is_error, c.duration_s) for c in it.tool_calls)
    return (
        it.finish_reason,
        it.error,
        len(it.raw_content),
        len(it.text),
        len(it.reasoning_content),
        len(it.messages),
        it.latency_s,
        calls,
    )


def iteration_detail_html(it: Iteration) -> str:
    """Everything about one iteration, escaped: sent messages, raw vs stripped, calls."""
    parts = [
        f"<b>Sent</b> ({len(it.messages)} messages)",
        pre(messages_text(it.messages)),
        "<b>Raw reply</b> (struck through: what strip_reasoning removes)",
        marked_reasoning_html(it.raw_content),
        "<b>Stripped text</b>",
        pre(it.text),
    ]
    if it.reasoning_content:
        parts += ["<b>Reasoning field</b>", pre(it.reasoning_content)]
    if it.tool_calls:
        rows = [
            [
                c.id,
                c.received_id,
                c.name,
                c.arguments,
                c.result,
                "yes" if c.is_error else "",
                f"{c.duration_s:.3f}",
            ]
            for c in it.tool_calls
        ]
        styles = [["white-space:pre-wrap;word-break:break-word"] * len(_TOOL_HEADER) for _ in rows]
        parts += [f"<b>Tool calls</b> ({len(rows)})", table_html(_TOOL_HEADER, rows, styles)]
    if it.error:
        parts += ["<b>Error</b>", pre(it.error)]
    return "<div>" + "<br>".join(parts) + "</div>"


class IterationRow(widgets.VBox):  # type: ignore[misc]
    """One table row (previews only); the full detail is built on first expand."""

    def __init__(self, iteration: Iteration, shared: _Shared | None = None) -> None:
        self.iteration = iteration
        self._shared = _Shared() if shared is None else shared
        self.toggle = widgets.ToggleButton(
            value=False,
            icon="chevron-right",
            tooltip=_TOGGLE_TOOLTIP,
            layout=self._shared.toggle_layout,
            style=self._shared.toggle_style,
        )
        self.cells: list[str] = []
        self.summary = self._shared.html("")
        self.detail: Any = None  # an HTML widget, made on first expand
        self.detail_box = widgets.VBox([], layout=self._shared.box_layout)
        self._shown: tuple[Any, ...] | None = None
        self._detail_for: tuple[Any, ...] | None = None
        line = widgets.HBox([self.toggle, self.summary], layout=self._shared.box_layout)
        super().__init__([line, self.detail_box], layout=self._shared.box_layout)
        self.toggle.observe(self._on_toggle, names="value")
        self.update(iteration)

    @property
    def expanded(self) -> bool:
        return bool(self.toggle.value)

    def update(self, iteration: Iteration) -> None:
        sig = _signature(iteration)
        if iteration is self.iteration and sig == self._shown:
            return
        self.iteration = iteration
        self._shown = sig
        self.cells = iteration_cells(iteration)
        self.summary.value = row_html(self.cells)
        if self.expanded:
            self._build_detail()

    def _build_detail(self) -> None:
        sig = _signature(self.iteration)
        if self.detail is None:
            self.detail = self._shared.html("")
        if sig != self._detail_for:
            self.detail.value = iteration_detail_html(self.iteration)
            self._detail_for = sig
        self.detail_box.children = (self.detail,)

    def close(self) -> None:
        for name in ("toggle", "summary", "detail", "detail_box"):
            w = getattr(self, name, None)
            if w is not None:
                w.close()
        super().close()

    def _on_toggle(self, change: dict[str, Any]) -> None:
        if change["new"]:
            self.toggle.icon = "chevron-down"
            self._build_detail()
        else:
            self.toggle.icon = "chevron-right"
            self.detail_box.children = ()


class TraceView(widgets.VBox):  # type: ignore[misc]
    """A trace as a table; follows the trace live while a run fills it.

    view = TraceView()
    display(view)
    client.run(request, trace=view.trace)
    """

    def __init__(self, trace: Trace | None = None) -> None:
        self.trace = Trace() if trace is None else trace
        self.rows: list[IterationRow] = []
        self._shared = _Shared()
        self.summary = widgets.Label(value="")
        header = widgets.HBox(
            [
                widgets.Box(layout=widgets.Layout(width="36px", flex="none")),
                widgets.HTML(value=row_html(ITERATION_HEADER, header=True)),
            ],
            layout=widgets.Layout(border_bottom="1px solid #999"),
        )
        self.rows_box = widgets.VBox([])
        self._lock = threading.RLock()
        super().__init__([self.summary, header, self.rows_box])
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
                self.rows_box.children = ()
            for row, it in zip(self.rows, its, strict=False):
                row.update(it)
            new = [IterationRow(it, self._shared) for it in its[len(self.rows) :]]
            if new:
                self.rows.extend(new)
                self.rows_box.children = tuple(self.rows)
            self.summary.value = trace_summary(self.trace)

    def close(self) -> None:
        # Also reached from Widget.__del__, possibly on a half-built view.
        if hasattr(self, "trace"):
            self.trace.remove_listener(self._on_change)
        for row in getattr(self, "rows", ()):
            row.close()
        if hasattr(self, "_shared"):
            self._shared.close()
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
