"""A notebook that never blocks: a full report runs while the kernel answers another cell,
and Cancel ends it within the deadline of the request in flight, leaving the partial report."""

from __future__ import annotations

import re
import time
from pathlib import Path

from conftest import keep_for_docs
from jupyter_rig import (
    Server,
    expect_no_widget_errors,
    open_in_lab,
    output_with,
    write_notebook,
)
from playwright.sync_api import Page, expect

NOTEBOOK = "background.ipynb"
DEADLINE_S = 4.0
HELD_AFTER = 3  # the model list and two probes answer; every later request is held
SETUP = f'''\
import threading

from rig_nb.demo import DemoServer
from rig_nb.widgets import ProbePanel


class SlowDemo(DemoServer):
    """The demo endpoint, holding every request after the first {HELD_AFTER} until released."""

    def __init__(self):
        super().__init__()
        self.seen = 0
        self.release = threading.Event()

    def handle(self, request):
        self.seen += 1
        if self.seen > {HELD_AFTER}:
            self.release.wait(60)
        return super().handle(request)


demo = SlowDemo()
demo.start()
panel = ProbePanel(demo.base_url, "qwen3-no-parser", deadline={DEADLINE_S})
panel'''
TYPED = "print('kernel answers', 6 * 7)"


def test_full_report_runs_in_the_background_and_cancel_ends_it(
    page: Page, lab: Server, server_root: Path, artifacts: Path
) -> None:
    write_notebook(server_root / NOTEBOOK, [SETUP, "", "demo.release.set(); demo.stop()"])
    open_in_lab(page, lab, NOTEBOOK)
    page.locator(".jp-Cell").first.click()
    page.keyboard.press("Shift+Enter")  # the setup cell only: the panel
    panel = output_with(page, "Full report").first
    expect(panel).to_be_visible()
    panel.locator("button", has_text="Full report").click()
    # The report is under way: requests done of planned, with the fourth one held.
    expect(panel).to_contain_text(re.compile(rf"{HELD_AFTER} of \d+ requests done"))
    cancel = panel.locator("button", has_text="Cancel")
    expect(cancel).to_be_enabled()

    # The kernel is free: another cell, typed now, runs while the report waits.
    page.locator(".jp-Cell").nth(1).locator(".cm-content").click()
    page.keyboard.type(TYPED)
    page.keyboard.press("Shift+Enter")
    expect(output_with(page, "kernel answers 42")).to_have_count(1)
    expect(cancel).to_be_enabled()  # still running: the answer did not wait for the report

    started = time.monotonic()
    cancel.click()
    expect(panel).to_contain_text("cancelled after", timeout=int((DEADLINE_S + 10) * 1000))
    expect(panel.locator("table")).to_contain_text("tool_choice_unset")
    waited = time.monotonic() - started
    assert waited < DEADLINE_S + 10, waited
    rows = panel.locator("table tr")
    expect(rows.filter(has_text="tool_choice_auto")).not_to_contain_text("cancelled")
    expect(rows.filter(has_text="structured_output")).to_contain_text("cancelled")
    expect(panel.locator("button", has_text="Full report")).to_be_enabled()
    expect_no_widget_errors(page)

    panel.scroll_into_view_if_needed()
    shot = artifacts / "probepanel-cancel.png"
    panel.screenshot(path=str(shot))
    keep_for_docs(shot)
    page.locator(".jp-Cell").nth(2).click()
    page.keyboard.press("Shift+Enter")
