"""The HTML report of a load sweep draws latency and throughput against load, as CompareView
does (`rig_nb.report.charts.load_svg`; issue 45: the report had the load table only): each
point's numbers in its hover title, every name escaped, and a hostile frame (NaN, 1e308,
5e-324, negative latencies and token counts) still draws a bounded picture."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from report_runs import INJECTOR

from rig_nb._html import esc
from rig_nb.compare import Endpoint, Scenario, compare, summarize
from rig_nb.demo import DemoServer
from rig_nb.report import save_html

CHART = 'aria-label="latency and throughput against load"'
SCENARIOS = [Scenario("plain", prompt="Hi."), Scenario("probe", kind="probe")]


@pytest.fixture(scope="module")
def sweep(demo: DemoServer) -> pd.DataFrame:
    endpoints = [
        Endpoint("well-behaved", demo.base_url, "well-behaved"),
        Endpoint(INJECTOR, demo.base_url, "well-behaved"),
    ]
    return compare(endpoints, scenarios=SCENARIOS, load=(1, 2), progress=False, timeout=10)


def chart_of(frame: pd.DataFrame, tmp_path: Path) -> str:
    path = tmp_path / "report.html"
    save_html(frame, path)
    raw = path.read_text()
    assert raw.count(CHART) == 1, "one load chart"
    start = raw.index(CHART)
    return raw[raw.rindex("<svg", 0, start) : raw.index("</svg>", start)]


def test_the_sweep_report_draws_each_point_with_its_numbers(
    sweep: pd.DataFrame, tmp_path: Path
) -> None:
    chart = chart_of(sweep, tmp_path)
    summary = summarize(sweep)
    for endpoint, scenario, load, p50, tps in zip(
        summary["endpoint"],
        summary["scenario"],
        summary["load"],
        summary["p50_latency_s"],
        summary["output_tokens_per_s"],
        strict=True,
    ):
        name = f"{endpoint} / {scenario}"
        if len(str(endpoint)) <= 34:
            assert esc(f"{name}: load {load:g}: {p50:.3f} p50 latency s") in chart
            assert esc(f"{name}: load {load:g}: {tps:.3f} output tok/s") in chart
    assert "<script" not in chart and "&lt;script" in chart  # the injector's name, escaped
    assert "p50 latency s" in chart and "output tok/s" in chart and ">load<" in chart


def test_the_report_and_compare_view_draw_the_same_chart(
    sweep: pd.DataFrame, tmp_path: Path
) -> None:
    from rig_nb.report.charts import load_svg

    save_html(sweep, tmp_path / "r.html")
    assert load_svg(summarize(sweep)) in (tmp_path / "r.html").read_text()


# compare measures each latency (never inf); the largest finite float is the worst it holds.
HOSTILE = [float("nan"), 1e308, 5e-324, -3.0, 1.7976931348623157e308]


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_hostile_numbers_draw_a_bounded_chart(
    sweep: pd.DataFrame, tmp_path: Path, value: float
) -> None:
    frame = sweep.copy()
    frame.attrs = dict(sweep.attrs)
    frame["latency_s"] = [value if n % 2 else 0.5 for n in range(len(frame))]
    # compare keeps a count within int64 (a larger one is None): the extremes it can hold.
    frame["completion_tokens"] = [(2**63 - 1, -5, 0, None)[n % 4] for n in range(len(frame))]
    chart = chart_of(frame, tmp_path)
    numbers = re.findall(r'\s(?:x|y|cx|cy|x1|x2|y1|y2|width|height)="([^"]*)"', chart)
    assert numbers
    for text in numbers:
        number = float(text)
        assert -1e6 < number < 1e6, text  # every coordinate on the page, none NaN or inf
    assert "nan" not in chart.lower().replace("nonce", "") and "inf" not in chart


def test_ticks_past_the_float_range_stay_finite() -> None:
    from rig_nb._svg import ticks
    from rig_nb.report.charts import latency_svg

    top = 1.7976931348623157e308
    marks = ticks(top)
    assert marks[0] == 0 and marks[-1] >= top * 0.999 and all(m < float("inf") for m in marks)
    assert all(isinstance(m, float) for m in ticks(50.0)) and ticks(50.0)[-1] == 50
    frame = pd.DataFrame(
        {"endpoint": ["e"], "scenario": ["s"], "outcome": ["ok"], "latency_s": [top]}
    )
    assert "median" in latency_svg(frame)  # drew it (it raised OverflowError before)
