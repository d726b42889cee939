"""The notebook widgets in JupyterLab, in headless Chromium."""

from __future__ import annotations

from pathlib import Path

from conftest import QUICKSTART
from jupyter_rig import (
    LEAK_LAB,
    TRACE_VIEW,
    XSS_MARKER,
    Server,
    expect_markup_page_inert,
    expect_no_widget_errors,
    expect_rows_aligned,
    open_in_lab,
    output_with,
    run_all_cells,
    trace_rows,
)
from playwright.sync_api import Page, expect

from rig_nb import Trace
from rig_nb.demo import XSS_IMG, XSS_SCRIPT


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
    view.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "quickstart-lab.png"))
    expect_rows_aligned(view)
    rows.nth(n - 1).click()
    expect(view.get_by_text("Raw reply")).to_have_count(2)
    expect_rows_aligned(view)
    # The raw reply and the stripped text both hold the answer; the reasoning is struck through.
    expect(view.locator("pre", has_text=answer)).to_have_count(2)
    expect(view.locator("span[title='removed by strip_reasoning']")).to_have_count(2)
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
