"""TraceView shows each iteration's prefix_break beside its prefix reuse (issue 42),
escaped, in the row, its tooltip and the detail; the static table and the CLI trace too."""

from __future__ import annotations

import pytest

from rig_nb import Iteration, Trace
from rig_nb.cli.text import format_trace

widgets = pytest.importorskip("ipywidgets")

HOSTILE = "system changed at char 3: '<script>alert(1)</script>' became '<img src=x onerror=y>'"


def broken_trace() -> Trace:
    usage = [
        {"prompt_tokens": 100, "cached_tokens": 0},
        {"prompt_tokens": 180, "cached_tokens": 3},
    ]
    return Trace(
        model="m",
        iterations=[
            Iteration(index=0, usage=usage[0], ending="tool_calls"),
            Iteration(index=1, usage=usage[1], ending="answer", prefix_break=HOSTILE),
        ],
    )


def test_the_break_sits_beside_the_reuse_escaped() -> None:
    from rig_nb.widgets import TraceView

    view = TraceView(broken_trace())
    first, second = view.rows
    assert "break" not in first.cells[6]
    assert second.cells[6].startswith("180/0 3% break: system changed at char 3")
    assert "<script>" not in second.line and "<img" not in second.line
    assert "&lt;script&gt;" in second.line  # the tooltip holds the line whole, escaped
    second.toggle.value = True
    detail = second.detail.value
    assert "Prefix break" in detail and "&lt;img src=x onerror=y&gt;" in detail
    assert "<script>" not in detail and "<img" not in detail


def test_a_break_recorded_later_updates_the_row() -> None:
    from rig_nb.widgets import TraceView

    trace = broken_trace()
    trace.iterations[1].prefix_break = None
    view = TraceView(trace)
    assert "break" not in view.rows[1].cells[6]
    trace.iterations[1].prefix_break = "tools changed: weather"
    view.refresh()
    assert view.rows[1].cells[6].endswith("break: tools changed: weather")


def test_the_static_table_and_the_cli_show_it() -> None:
    trace = broken_trace()
    page = trace._repr_html_()
    assert "break: system changed at char 3" in page and "<script>" not in page
    text = format_trace(trace)
    assert "reused=3%  break=system changed at char 3" in text
