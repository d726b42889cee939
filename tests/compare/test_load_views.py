"""A load sweep in CompareView and the HTML report: the load table, escaped, in place of the
matrix; the crossed_stream outcome explained."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rig_nb.compare import Endpoint, Scenario, compare
from rig_nb.demo import DemoServer
from rig_nb.report import save_html
from rig_nb.widgets import CompareView

HOSTILE = "<script>window.__rig_xss=1</script>"


@pytest.fixture(scope="module")
def sweep(demo: DemoServer) -> pd.DataFrame:
    return compare(
        [Endpoint(HOSTILE, demo.base_url, "crossed-streams")],
        scenarios=[Scenario("plain", prompt="What is the capital of France?")],
        load=(1, 2),
        progress=False,
    )


def test_compare_view_shows_the_load_table(sweep: pd.DataFrame) -> None:
    view = CompareView(sweep)
    try:
        html = view.matrix.value
        assert "p50 latency s" in html and "output tok/s" in html
        assert HOSTILE not in html and "&lt;script&gt;" in html
        assert "1/1 ok" in html  # load 1: alone, nothing crossed
        assert html.count("<tr>") == 1 + 2  # the header and one row per load
        assert "per endpoint, scenario and load" in view.summary.value
        assert "crossed_stream" in set(sweep["outcome"])  # load 2: the copies crossed
        assert "mixed the streams" in view.legend.value
    finally:
        view.close()


def test_the_html_report_shows_the_load_table(sweep: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "load.html"
    save_html(sweep, path)
    page = path.read_text()
    assert "<h2>Load</h2>" in page and "load levels 1, 2" in page
    assert "p95 latency s" in page
    assert HOSTILE not in page
    assert page.count("<script") == 0


def test_a_plain_compare_keeps_the_matrix(demo: DemoServer) -> None:
    df = compare(
        [Endpoint("e", demo.base_url, "well-behaved")],
        scenarios=[Scenario("plain", prompt="Capital of France?")],
        progress=False,
    )
    view = CompareView(df)
    try:
        assert "p50 latency s" not in view.matrix.value
        assert "1/1 ok" in view.matrix.value
    finally:
        view.close()
