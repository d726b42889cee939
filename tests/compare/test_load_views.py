"""A load sweep in CompareView and the HTML report: the load table, escaped, in place of the
matrix; the crossed_stream outcome explained."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

from rig_nb.compare import Endpoint, Scenario, compare
from rig_nb.demo import DemoServer
from rig_nb.load import load_summary
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


def test_load_summary_survives_numbers_no_server_meant() -> None:
    # A hand-built frame: a count past float range, an infinite latency, the smallest float.
    # The big count is an object column: pandas 2.x cannot infer a dtype for it.
    df = pd.DataFrame(
        {
            "endpoint": ["e", "e"],
            "scenario": ["s", "s"],
            "load": [1, 1],
            "repeat": [0, 1],
            "outcome": ["ok", "ok"],
            "latency_s": [float("inf"), 1.0],
            "ttft_s": [5e-324, None],
            "completion_tokens": pd.Series([10**400, 5], dtype=object),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (row,) = load_summary(df).to_dict("records")
    assert (row["runs"], row["ok"], row["p50_latency_s"], row["p50_ttft_s"]) == (2, 2, 1.0, 5e-324)
    assert row["output_tokens_per_s"] == 5.0  # the count no float holds is left out
