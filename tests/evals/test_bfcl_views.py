"""CompareView and the HTML report show the per-group table for a frame with groups (BFCL's
categories), every endpoint string escaped; a frame without groups is as before."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from bfcl_cases import SIMPLE, WEATHER, case

from rig_nb.compare import DEFAULT_SCENARIOS, Endpoint, compare
from rig_nb.report import save_html
from rig_nb.testing import ScriptedServer, chat_reply, tool_call
from rig_nb.widgets import CompareView

HOSTILE = "<img src=x onerror=alert(1)>"


def _frame() -> pd.DataFrame:
    """Two cases and one plain scenario on an endpoint whose name, reply and model are hostile."""
    replies = [
        chat_reply(tool_calls=[tool_call("geometry_area", {"base": 10, "height": 5})]),
        chat_reply(HOSTILE),
        chat_reply(f"Paris {HOSTILE}"),
    ]
    irrelevant = case("irrelevance", [WEATHER], [])
    with ScriptedServer(replies) as server:
        return compare(
            [Endpoint(HOSTILE, server.base_url, HOSTILE)],
            scenarios=[SIMPLE.scenario(), irrelevant.scenario(), DEFAULT_SCENARIOS[1]],
            concurrency=1,
            progress=False,
        )


def test_compare_view_shows_the_group_table_first() -> None:
    df = _frame()
    view = CompareView(df)
    assert view.group_frame is not None
    assert list(view.group_frame.index) == ["simple_python", "irrelevance", ""]
    html = view.matrix.value
    assert html.index("simple_python") < html.index("plain answer")
    assert "1/1 ok (100%)" in html and ">group<" in html
    assert HOSTILE not in html and "&lt;img" in html
    assert HOSTILE not in view.table.value
    # The plain scenario still has its matrix (latency included), alone.
    assert view.summary_frame is not None and list(view.summary_frame.index) == ["plain answer"]
    assert "BFCL category" in view.summary.value


def test_a_frame_without_groups_shows_no_group_table() -> None:
    df = _frame()
    plain = df[df["group"] == ""].reset_index(drop=True)
    view = CompareView(plain)
    assert view.group_frame is None and ">group<" not in view.matrix.value


def test_the_report_shows_the_group_table(tmp_path: Path) -> None:
    df = _frame()
    path = tmp_path / "bfcl.html"
    save_html(df, path)
    page = path.read_text()
    assert "By group" in page and "simple_python" in page and "1/1 ok (100%)" in page
    assert page.index("By group") < page.index("<h2>Summary")
    assert HOSTILE not in page and "&lt;img src=x" in page
    # Every row and its trace are still there.
    assert page.count('id="row-') == 3


def test_a_report_of_groups_only_has_no_empty_matrix(tmp_path: Path) -> None:
    df = _frame()
    only = df[df["group"] != ""]
    only.attrs["traces"] = {}
    path = tmp_path / "only.html"
    save_html(only, path)
    page = path.read_text()
    assert "By group" in page and "<h2>Summary" not in page
