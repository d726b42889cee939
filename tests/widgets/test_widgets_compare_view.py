"""CompareView without a browser: the outcome colours, the legend, the matrix, escaping."""

from __future__ import annotations

import re

from widget_tree import html_values

from rig_nb.compare import Endpoint, compare
from rig_nb.demo import XSS_SCRIPT, DemoServer
from rig_nb.widgets import CompareView


def test_compare_view_colours_the_outcome_column_only_where_ok() -> None:
    import pandas as pd

    outcomes = ["ok", "text_tool_calls", "reasoning_only", "NoToolCallingError", "empty"]
    df = pd.DataFrame(
        {
            "endpoint": [f"e{n}" for n in range(5)],
            "scenario": ["s"] * 5,
            "outcome": outcomes,
            "ending": ["answer", "text_tool_calls", "reasoning_only", "answer", "empty"],
            "latency_s": [0.5] * 5,
        }
    )
    view = CompareView(df)
    rows = view.table.value.split("<tr>")[2:]  # past the header row
    at = list(df.columns).index("outcome")
    outcome_cells = [re.findall(r'<td style="([^"]*)"[^>]*>([^<]*)</td>', r)[at] for r in rows]
    assert [text for _, text in outcome_cells] == outcomes
    green = [text for style, text in outcome_cells if "#d9f2d9" in style]
    assert green == ["ok"]
    assert view.summary.value.startswith("1/5 runs ok")
    for outcome in outcomes[1:]:
        assert f"<b>{outcome}</b>" in view.legend.value
    assert "<b>ok</b>" not in view.legend.value
    assert ">1/1 ok<br>" in view.matrix.value and ">0/1 ok<br>" in view.matrix.value


def test_compare_view_colours_escapes_and_explains(demo: DemoServer) -> None:
    hostile = f"evil{XSS_SCRIPT}"
    df = compare(
        [
            Endpoint("well-behaved", demo.base_url, "well-behaved"),
            Endpoint(hostile, demo.base_url, "html-injector"),
        ]
    )
    view = CompareView(df)
    table = view.table.value
    assert table.count("<tr>") == len(df) + 1
    assert "background:#d9f2d9" in table  # an ok outcome
    assert "&lt;script&gt;window.__rig_xss=1&lt;/script&gt;" in table
    for value in html_values(view):
        assert "<script" not in value.lower() and "<img" not in value.lower()
    assert "OutputLimitError" in view.legend.value  # the small-budget scenario
    assert "budget ran out" in view.legend.value
    assert view.summary.value.startswith(f"{int((df['outcome'] == 'ok').sum())}/{len(df)} runs ok")
    # The matrix comes first: one row per scenario, one column per endpoint, escaped.
    assert view.children[1] is view.matrix
    matrix = view.matrix.value
    assert matrix.count("<tr>") == df["scenario"].nunique() + 1
    assert "evil&lt;script&gt;" in matrix and "1/1 ok" in matrix
    assert "background:#f8d0d0" in matrix  # small budget fails everywhere


def test_compare_view_says_when_everything_passed() -> None:
    import pandas as pd

    df = pd.DataFrame({"endpoint": ["a"], "scenario": ["s"], "outcome": ["ok"], "latency_s": [0.5]})
    view = CompareView(df)
    assert "Every scenario passed" in view.legend.value
    assert ">0.50<" in view.table.value
    assert ">1/1 ok<br>0.50 s<" in view.matrix.value
    assert view.summary.value.startswith("1/1 runs ok")
