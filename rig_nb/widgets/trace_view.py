"""TraceView: a trace as a live table, one expandable row per iteration."""

from __future__ import annotations

import threading
from typing import Any

import ipywidgets as widgets

from ..trace import Iteration, Trace
from .render import (
    ITERATION_HEADER,
    iteration_cells,
    marked_reasoning_html,
    messages_text,
    pre,
    table_html,
    trace_html,
    trace_summary,
)

__all__ = ["IterationRow", "TraceView", "display_trace"]

_WIDTHS = ["32px", "80px", "130px", "360px", "120px", "100px", "70px", "220px"]
_TOOL_HEADER = ["id", "received id", "name", "arguments", "result", "error", "duration s"]


def _label(value: str, width: str) -> Any:
    return widgets.Label(value=value, layout=widgets.Layout(width=width, overflow="hidden"))


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

    def __init__(self, iteration: Iteration) -> None:
        self.iteration = iteration
        self.toggle = widgets.ToggleButton(
            value=False,
            icon="chevron-right",
            tooltip="show everything sent and received",
            layout=widgets.Layout(width="36px"),
        )
        self.cells = [_label("", w) for w in _WIDTHS]
        self.detail = widgets.HTML(value="")
        self.detail_box = widgets.VBox([])
        self._shown: tuple[Any, ...] | None = None
        self._detail_for: tuple[Any, ...] | None = None
        super().__init__([widgets.HBox([self.toggle, *self.cells]), self.detail_box])
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
        for cell, value in zip(self.cells, iteration_cells(iteration), strict=True):
            cell.value = value
        if self.expanded:
            self._build_detail()

    def _build_detail(self) -> None:
        sig = _signature(self.iteration)
        if sig != self._detail_for:
            self.detail.value = iteration_detail_html(self.iteration)
            self._detail_for = sig
        self.detail_box.children = (self.detail,)

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
        self.summary = widgets.Label(value="")
        header = widgets.HBox(
            [_label("", "36px")]
            + [_label(h, w) for h, w in zip(ITERATION_HEADER, _WIDTHS, strict=True)]
        )
        header.layout.border_bottom = "1px solid #999"
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
            if len(its) < len(self.rows):
                self.rows = []
            for row, it in zip(self.rows, its, strict=False):
                row.update(it)
            new = [IterationRow(it) for it in its[len(self.rows) :]]
            if new:
                self.rows.extend(new)
                self.rows_box.children = tuple(self.rows)
            self.summary.value = trace_summary(self.trace)

    def close(self) -> None:
        self.trace.remove_listener(self._on_change)
        for row in self.rows:
            row.close()
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
