"""The notebook widgets in Voila, in headless Chromium."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import COMPARE_MODELS, OPEN_ROWS, QUICKSTART, ROWS
from jupyter_rig import (
    COMPARE_VIEW,
    LEAK_LAB,
    TRACE_VIEW,
    Server,
    expect_markup_page_inert,
    expect_no_widget_errors,
    expect_rows_aligned,
    open_in_voila,
    output_with,
    trace_rows,
)
from playwright.sync_api import Page, expect

from rig_nb import Trace
from rig_nb.compare import DEFAULT_SCENARIOS, Endpoint, compare
from rig_nb.demo import XSS_IMG, XSS_SCRIPT, DemoServer
from rig_nb.widgets.trace_view import LINE_CLASS


def failing_outcomes(models: list[str]) -> list[str]:
    """The outcomes other than ok that compare gives these personas (they are deterministic)."""
    with DemoServer() as server:
        df = compare([Endpoint(m, server.base_url, m) for m in models], progress=False)
    return sorted(set(df["outcome"]) - {"ok"})


def test_quickstart_in_voila(
    page: Page, voila: Server, quickstart_trace: Trace, artifacts: Path
) -> None:
    open_in_voila(page, voila, QUICKSTART)
    n = len(quickstart_trace.iterations)
    view = output_with(page, TRACE_VIEW).first
    expect(trace_rows(view)).to_have_count(n)
    expect(view).to_contain_text(f"ok, {n} iterations")
    expect(view.get_by_text("Raw reply")).to_have_count(1)
    expect_rows_aligned(view)
    expect(output_with(page, LEAK_LAB)).to_have_count(1)
    expect_no_widget_errors(page)
    page.screenshot(path=str(artifacts / "quickstart-voila.png"), full_page=True)


def test_compare_view_in_voila(page: Page, voila: Server, artifacts: Path) -> None:
    open_in_voila(page, voila, "compare.ipynb")
    view = output_with(page, COMPARE_VIEW)
    expect(view).to_have_count(1)
    matrix = view.locator("table").first
    expect(matrix.locator("tbody tr")).to_have_count(len(DEFAULT_SCENARIOS))
    for model in COMPARE_MODELS:
        expect(matrix.locator("thead th", has_text=model)).to_have_count(1)
    failing = failing_outcomes(COMPARE_MODELS)
    assert failing
    explained = view.locator("li > b")
    expect(explained).to_have_count(len(failing))
    for outcome in failing:
        expect(explained.filter(has_text=re.compile(rf"^{re.escape(outcome)}$"))).to_have_count(1)
    # The rows are one click away, below the matrix.
    n = len(COMPARE_MODELS) * len(DEFAULT_SCENARIOS)
    view.get_by_text(f"all {n} rows").click()
    expect(view.locator("table").nth(1).locator("tbody tr")).to_have_count(n)
    expect_no_widget_errors(page)
    view.screenshot(path=str(artifacts / "compare-voila.png"))


def test_endpoint_markup_is_text_in_voila(
    page: Page, voila: Server, injector_trace: Trace, artifacts: Path
) -> None:
    open_in_voila(page, voila, "markup.ipynb")
    expect_markup_page_inert(
        page, len(injector_trace.iterations), artifacts / "markup-voila.png", [XSS_SCRIPT, XSS_IMG]
    )


def test_long_trace_rows_line_up_in_voila(page: Page, voila: Server, artifacts: Path) -> None:
    open_in_voila(page, voila, "rows.ipynb")
    view = output_with(page, TRACE_VIEW)
    expect(trace_rows(view)).to_have_count(ROWS)
    expect(view.get_by_text("Raw reply")).to_have_count(len(OPEN_ROWS))
    expect_rows_aligned(view)
    # Each open row's detail comes right after its own line and before the next row's line.
    for i in OPEN_ROWS:
        detail = view.locator("pre", has_text=f"row {i} x")
        expect(detail).to_have_count(2)  # the raw reply and the stripped text
        top = detail.first.bounding_box()
        line = view.locator(f"div.{LINE_CLASS}").nth(i).bounding_box()
        assert top is not None and line is not None and line["y"] < top["y"]
        if i + 1 < ROWS:
            after = view.locator(f"div.{LINE_CLASS}").nth(i + 1).bounding_box()
            assert after is not None and top["y"] < after["y"]
    expect_no_widget_errors(page)
    page.screenshot(path=str(artifacts / "rows-voila.png"), full_page=True)
