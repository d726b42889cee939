"""A saved HTML report opened offline as a file, JavaScript on: nothing runs, nothing leaves.

The report is `save_html` of a compare over the html-injector persona (live `<script>` and
`<img onerror>` in content, reasoning and tool arguments) and a gateway whose error message
holds the same markup. Its Content-Security-Policy forbids scripts, so the report is also
opened with that policy removed: the escaping alone must keep the markup inert.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jupyter_rig import XSS_MARKER
from playwright.sync_api import Page, expect

from rig_nb.compare import DEFAULT_SCENARIOS, Endpoint, compare
from rig_nb.demo import XSS_IMG, XSS_SCRIPT, DemoServer
from rig_nb.report import save_html
from rig_nb.testing import LoopbackServer, RecordedRequest, Response

CSP_META = '<meta http-equiv="Content-Security-Policy"'


class HostileGateway(LoopbackServer):
    """A proxy whose own error message carries live markup."""

    def handle(self, request: RecordedRequest) -> Response:
        message = f"upstream refused {XSS_SCRIPT} {XSS_IMG}"
        return Response({"error": {"message": message, "type": "bad_request"}}, status=400)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "report.html"
    with DemoServer() as demo, HostileGateway() as gateway:
        df = compare(
            [
                Endpoint("html-injector", demo.base_url, "html-injector"),
                Endpoint("hostile-gateway", gateway.base_url, "any-model"),
            ],
            stream=True,
            progress=False,
        )
    assert "BackendError" in set(df["outcome"])  # the gateway's markup is in the report
    save_html(df, path)
    return path


@pytest.fixture(scope="module")
def report_without_csp(report: Path) -> Path:
    page = report.read_text()
    start = page.index(CSP_META)
    end = page.index(">", start) + 1
    path = report.with_name("report-no-csp.html")
    path.write_text(page[:start] + page[end:])
    return path


def _open(page: Page, path: Path) -> list[str]:
    """Open `path` as file://; returns the list of every request the page makes."""
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return requests


def _expect_inert(page: Page, path: Path, requests: list[str]) -> None:
    expect(page.locator("h1")).to_contain_text("rig_nb compare report")
    body = page.locator("body").inner_text()
    for payload in (XSS_SCRIPT, XSS_IMG):
        assert payload in body, f"the report does not show {payload!r} as text"
    assert page.locator("img").count() == 0, "an <img> from endpoint text is in the DOM"
    assert page.locator("script").count() == 0, "a <script> is in the DOM"
    assert page.evaluate(f"typeof {XSS_MARKER}") == "undefined", "endpoint text ran as script"
    assert requests == [path.as_uri()], f"the report made requests: {requests}"


@pytest.mark.parametrize("csp", [True, False], ids=["as-saved", "csp-removed"])
def test_saved_report_is_inert_offline(
    page: Page, report: Path, report_without_csp: Path, csp: bool, artifacts: Path
) -> None:
    path = report if csp else report_without_csp
    requests = _open(page, path)
    _expect_inert(page, path, requests)
    if csp:
        page.screenshot(path=str(artifacts / "report-offline.png"))


def test_saved_report_rows_expand(page: Page, report: Path, artifacts: Path) -> None:
    requests = _open(page, report)
    matrix = page.locator("table").first
    expect(matrix.locator("tbody tr")).to_have_count(len(DEFAULT_SCENARIOS))
    iterations = page.locator("details.it")
    assert iterations.count() >= len(DEFAULT_SCENARIOS)
    first = iterations.first
    detail = first.locator(":scope > h4").first
    assert first.evaluate("d => d.open") is False
    expect(detail).to_be_hidden()
    first.locator(":scope > summary").click()
    assert first.evaluate("d => d.open") is True
    expect(detail).to_be_visible()
    expect(first.locator("pre.rig-nb-raw")).to_be_visible()
    first.screenshot(path=str(artifacts / "report-details.png"))
    # A row of the table links to its trace inside the page, and nothing else.
    links: list[Any] = page.locator("a").evaluate_all("els => els.map(a => a.getAttribute('href'))")
    assert links and all(str(h).startswith("#row-") for h in links)
    page.locator("a").first.click()
    assert page.url.startswith(report.as_uri() + "#row-")
    assert requests == [report.as_uri()]


def test_script_would_run_in_a_file_page(page: Page, tmp_path: Path) -> None:
    """The detector works for file pages: JavaScript is on, and unescaped markup does run."""
    path = tmp_path / "control.html"
    path.write_text(f"<!DOCTYPE html><html><body>{XSS_SCRIPT}</body></html>")
    _open(page, path)
    assert page.evaluate(f"typeof {XSS_MARKER}") != "undefined"
