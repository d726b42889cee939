"""The widgets in JupyterLab, in headless Chromium; the README's screenshots come from here."""

from __future__ import annotations

from pathlib import Path

from conftest import (
    LAYOUT_REPEATS,
    LONG_NAME,
    NOTEBOOK_MODELS,
    QUICKSTART,
    WIDE_ENDPOINTS,
    keep_for_docs,
)
from jupyter_rig import (
    COMPARE_VIEW,
    ENDING_COLUMN,
    LEAK_LAB,
    PROBE_REPORT,
    TEXT_COLUMN,
    TRACE_VIEW,
    XSS_MARKER,
    Server,
    cells_outside,
    expect_markup_page_inert,
    expect_no_widget_errors,
    expect_rows_aligned,
    open_file_browser,
    open_in_lab,
    output_widths,
    output_with,
    row_cell_texts,
    run_all_cells,
    set_output_width,
    trace_cells,
    trace_rows,
)
from playwright.sync_api import Locator, Page, expect

from rig_nb import Trace
from rig_nb.capabilities import CHECKS
from rig_nb.compare import DEFAULT_SCENARIOS
from rig_nb.demo import XSS_IMG, XSS_SCRIPT
from rig_nb.widgets.trace_view import ITERATION_HEADER, LINE_CLASS

OUTPUT_PX = 800
# Tall enough that a whole view fits on screen: an element screenshot shows what is on screen.
SHOT_HEIGHT = 3000


def test_quickstart_in_lab(
    page: Page, lab: Server, quickstart_trace: Trace, artifacts: Path
) -> None:
    open_in_lab(page, lab, QUICKSTART)
    run_all_cells(page)
    n = len(quickstart_trace.iterations)
    view = output_with(page, TRACE_VIEW).first
    rows = trace_rows(view)
    expect(rows).to_have_count(n)
    expect(view).to_contain_text(f"ok, {n} iterations")
    expect(output_with(page, LEAK_LAB)).to_have_count(1)
    # The notebook opens the first row; the last one (the answer) opens on a click here.
    answer = quickstart_trace.iterations[-1].text
    expect(view.get_by_text("Raw reply")).to_have_count(1)
    expect(view.locator("pre", has_text=answer)).to_have_count(0)
    # The first row's detail says how its reply streamed.
    expect(view).to_contain_text("streamed: ")
    view.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "quickstart-lab.png"))
    expect_rows_aligned(view)
    rows.nth(n - 1).click()
    expect(view.get_by_text("Raw reply")).to_have_count(2)
    expect_rows_aligned(view)
    # The raw reply and the stripped text both hold the answer; the reasoning is struck through.
    expect(view.locator("pre", has_text=answer)).to_have_count(2)
    expect(view.locator("pre.rig-nb-raw del")).to_have_count(2)
    expect_no_widget_errors(page)


def test_endpoint_markup_is_text_in_lab(
    page: Page, lab: Server, injector_trace: Trace, artifacts: Path
) -> None:
    open_in_lab(page, lab, "markup.ipynb")
    run_all_cells(page)
    expect_markup_page_inert(
        page, len(injector_trace.iterations), artifacts / "markup-lab.png", [XSS_SCRIPT, XSS_IMG]
    )


def test_unescaped_markup_is_caught(page: Page, lab: Server) -> None:
    """The detector works: an unescaped HTML widget holding the payload does run it."""
    open_in_lab(page, lab, "control.ipynb")
    run_all_cells(page)
    page.wait_for_function(f"typeof {XSS_MARKER} !== 'undefined'")
    assert page.locator("img[src='x']").count() == 1


def _shoot(page: Page, output: Locator, path: Path) -> None:
    """A screenshot of one output, whole: the window is made tall enough for it first."""
    viewport = page.viewport_size
    assert viewport is not None
    page.set_viewport_size({"width": viewport["width"], "height": SHOT_HEIGHT})
    try:
        output.scroll_into_view_if_needed()
        box = output.bounding_box()
        assert box is not None and box["height"] < SHOT_HEIGHT - 200, box
        output.screenshot(path=str(path))
    finally:
        page.set_viewport_size(viewport)


def test_views_fit_an_800px_output_area(
    page: Page, lab: Server, leaky_trace: Trace, short_trace: Trace, artifacts: Path
) -> None:
    """Every cell of TraceView and of CompareView's summary matrix starts and ends inside an
    800 px output area, with the file browser open; the row table below the matrix scrolls on
    its own. The README's screenshots are these views."""
    open_in_lab(page, lab, "layout.ipynb")
    open_file_browser(page)
    run_all_cells(page)
    views = output_with(page, TRACE_VIEW)
    expect(views).to_have_count(2)
    leaky, short = views.nth(0), views.nth(1)
    expect(trace_rows(leaky)).to_have_count(len(leaky_trace.iterations))
    expect(trace_rows(short)).to_have_count(len(short_trace.iterations))
    expect(short).to_contain_text(short_trace.outcome)
    compares = output_with(page, COMPARE_VIEW)
    expect(compares).to_have_count(2)
    compare, wide = compares.nth(0), compares.nth(1)
    matrices = {
        "CompareView matrix": (compare, len(NOTEBOOK_MODELS)),
        "CompareView matrix, 8 endpoints": (wide, len(WIDE_ENDPOINTS)),
    }
    for output, endpoints in matrices.values():
        matrix = output.locator("table").first
        expect(matrix.locator("tbody tr")).to_have_count(len(DEFAULT_SCENARIOS))
        expect(matrix.locator("th, td")).to_have_count(
            (len(DEFAULT_SCENARIOS) + 1) * (endpoints + 1)
        )
    panel = output_with(page, PROBE_REPORT)
    report_cells = panel.locator("table").first.locator("th, td")
    expect(report_cells).to_have_count((len(CHECKS) + 1) * 4)
    expect_no_widget_errors(page)

    set_output_width(page, OUTPUT_PX)
    assert output_widths(page) and {round(w) for w in output_widths(page)} == {OUTPUT_PX}
    # Every misplaced cell, per view: collected first, so that one run reports them all.
    outside: dict[str, list[tuple[float, float, str]]] = {}
    for view, trace in [(leaky, leaky_trace), (short, short_trace)]:
        cells = trace_cells(view)
        # The column header and every row: one titled cell per column.
        expect(cells).to_have_count((len(trace.iterations) + 1) * len(ITERATION_HEADER))
        outside[f"TraceView {trace.model}"] = cells_outside(view, cells)
        outside[f"TraceView {trace.model} toggles"] = cells_outside(view, trace_rows(view))
    for name, (output, _) in matrices.items():
        outside[name] = cells_outside(output, output.locator("table").first.locator("th, td"))
    outside["ProbePanel report"] = cells_outside(panel, report_cells)
    # A name cut short keeps its full text on hover.
    expect(wide.locator("table").first.locator(f"th[title='{LONG_NAME}']")).to_have_count(1)

    # The README's pictures, each with the checks its view must pass to be kept in docs/.
    shots = {
        "traceview.png": (leaky, [f"TraceView {leaky_trace.model}"]),
        "compareview.png": (
            compare,
            ["CompareView matrix", "CompareView matrix, rows open", "CompareView rows"],
        ),
        "probepanel.png": (panel, ["ProbePanel report"]),
    }
    for name, (output, _) in shots.items():
        _shoot(page, output, artifacts / name)
    _shoot(page, wide, artifacts / "compareview-wide.png")
    page.screenshot(path=str(artifacts / "layout-lab.png"))

    # The rows open below the matrix; the row table scrolls inside the view, not the page.
    rows_title = f"all {len(NOTEBOOK_MODELS) * len(DEFAULT_SCENARIOS) * LAYOUT_REPEATS} rows"
    compare.get_by_text(rows_title).click()
    expect(compare.locator("table").nth(1)).to_be_visible()
    matrix_cells = compare.locator("table").first.locator("th, td")
    outside["CompareView matrix, rows open"] = cells_outside(compare, matrix_cells)
    scroll, width = compare.evaluate("e => [e.scrollWidth, e.clientWidth]")
    if scroll > width + 1:  # the row table pushes the output area wider than the notebook
        outside["CompareView rows"] = [(0.0, scroll, f"the output area scrolls: {width} px")]
    page.screenshot(path=str(artifacts / "compareview-rows.png"))

    for name, (_, checks) in shots.items():
        if not any(outside.get(c) or outside.get(f"{c} toggles") for c in checks):
            keep_for_docs(artifacts / name)  # never a picture of a view that does not fit
    misplaced = {k: v for k, v in outside.items() if v}
    assert not misplaced, "cells outside the 800 px output area (left, right, text):\n" + "\n".join(
        f"{k}: {len(v)} cells, first {v[:3]}" for k, v in misplaced.items()
    )


def test_streamed_row_grows_in_lab(page: Page, lab: Server, artifacts: Path) -> None:
    """A streamed reply's row is there from its first delta and its text grows as deltas arrive
    (the demo endpoint paces them 0.2 s apart)."""
    open_in_lab(page, lab, "stream.ipynb")
    run_all_cells(page)
    view = output_with(page, TRACE_VIEW)
    expect(view).to_have_count(1)
    growing = (
        "([out, from, to]) => { const line = out.querySelector('div."
        + LINE_CLASS
        + "'); if (!line) return false; const cells = line.children;"
        f" const ending = cells[{ENDING_COLUMN}].textContent;"
        f" const n = cells[{TEXT_COLUMN}].textContent.length;"
        " return ending === 'streaming' && n > from && n <= to; }"
    )
    handle = view.element_handle()
    page.wait_for_function(growing, arg=[handle, 0, 60])
    view.scroll_into_view_if_needed()
    view.screenshot(path=str(artifacts / "stream-1.png"))
    first = row_cell_texts(view)
    assert first is not None and first[ENDING_COLUMN] == "streaming"
    page.wait_for_function(growing, arg=[handle, len(first[TEXT_COLUMN]), 10_000])
    view.screenshot(path=str(artifacts / "stream-2.png"))
    second = row_cell_texts(view)
    assert second is not None
    assert len(second[TEXT_COLUMN]) > len(first[TEXT_COLUMN]), (first, second)
    assert second[TEXT_COLUMN].startswith(first[TEXT_COLUMN].removesuffix("..."))
    # The reply completes in the same row: one row, now an answer.
    expect(view).to_contain_text("ok, 1 iteration")
    expect(trace_rows(view)).to_have_count(1)
    done = row_cell_texts(view)
    assert done is not None and done[ENDING_COLUMN] == "answer"
    expect_no_widget_errors(page)
