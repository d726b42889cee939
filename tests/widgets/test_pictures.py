"""Pictures: a run's timeline (TraceView, Trace._repr_html_, the HTML report) and the compare
charts (CompareView, the HTML report): to scale, numbers on hover, escaped, within 800 px."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from rig_nb import Iteration, ToolCallRecord, Trace
from rig_nb._svg import MAX_ROWS, WIDTH, timeline_svg
from rig_nb.report import save_html
from rig_nb.report.charts import MAX_SERIES, charts_html, latency_svg, load_svg
from rig_nb.widgets import CompareView, TraceView

SCRIPT = "<script>alert(1)</script>"
SVG = re.compile(r"<svg\b.*?</svg>", re.DOTALL)


def parse(svg: str) -> ET.Element:
    """The picture as XML: it must be well formed (every label escaped)."""
    root = ET.fromstring(svg)
    assert root.tag == "svg"
    width = float(root.get("width", "0"))
    assert 0 < width <= 800 and "max-width:100%" in root.get("style", "")
    view = [float(v) for v in root.get("viewBox", "").split()]
    assert view[2] == width and view[3] == float(root.get("height", "0"))
    return root


def marks(root: ET.Element) -> list[tuple[float, float, str]]:
    """(x, width, hover text) of every rect that has a hover text."""
    out = []
    for rect in root.iter("rect"):
        title = rect.find("title")
        if title is not None:
            out.append((float(rect.get("x", "")), float(rect.get("width", "")), title.text or ""))
    return out


def hover(element: ET.Element) -> str:
    title = element.find("title")
    return "" if title is None else title.text or ""


def inside(root: ET.Element) -> None:
    width = float(root.get("width", "0"))
    for rect in root.iter("rect"):
        x, w = float(rect.get("x", "")), float(rect.get("width", ""))
        assert 0 <= x and x + w <= width + 0.5 and math.isfinite(w), (x, w)


def run() -> Trace:
    call = ToolCallRecord(id="c1", name=f"lookup{SCRIPT}", duration_s=0.5, result="4")
    return Trace(
        model="m",
        endpoint="127.0.0.1:1",
        outcome="ok",
        elapsed_s=3.5,
        iterations=[
            Iteration(
                index=0,
                streamed=True,
                ttft_s=0.5,
                latency_s=1.5,
                usage={"prompt_tokens": 10, "completion_tokens": 40, "reasoning_tokens": 30},
                tool_calls=[call],
                finish_reason="tool_calls",
            ),
            Iteration(index=1, streamed=False, latency_s=1.5, text="done", usage={}),
        ],
    )


def test_the_timeline_is_to_scale_with_numbers_on_hover() -> None:
    root = parse(timeline_svg(run()))
    got = marks(root)
    titles = [t for _, _, t in got]
    assert titles[0] == "#0 waiting for the first token: 0.500 s"
    assert titles[1].startswith("#0 reasoning: 0.750 s (share estimated from reasoning tokens)")
    assert titles[2].startswith("#0 answer: 0.250 s; decoding 1.000 s, 40.0 tokens/s")
    assert titles[3] == f"#0 tool lookup{SCRIPT}: 0.500 s"  # as text: the XML parser unescaped it
    assert titles[4].startswith("#1 reply, not streamed: 1.500 s")
    # 0.5 + 0.75 + 0.25 + 0.5 s, then 1.5 s: each mark starts where the last ended, widths
    # in proportion to the seconds (a tool call's mark 1 px short: the gap after it).
    xs = [x for x, _, _ in got]
    widths = [w + (1 if n == 3 else 0) for n, (_, w, _) in enumerate(got)]
    per_s = widths[0] / 0.5
    for w, s in zip(widths, (0.5, 0.75, 0.25, 0.5, 1.5), strict=True):
        assert w == pytest.approx(s * per_s, abs=0.2)
    for i in range(4):
        assert xs[i] + widths[i] == pytest.approx(xs[i + 1], abs=0.2)
    inside(root)
    # The axis reaches past the 3.5 s of the run, labelled in seconds.
    labels = [t.text for t in root.iter("text")]
    assert "0 s" in labels and "4 s" in labels
    assert "#0" in labels and "#1" in labels


def test_reasoning_share_from_characters_when_tokens_are_not_reported() -> None:
    it = Iteration(
        streamed=True, ttft_s=1.0, latency_s=5.0, reasoning_content="r" * 300, text="a" * 100
    )
    got = marks(parse(timeline_svg(Trace(iterations=[it]))))
    assert got[1][2].startswith("#0 reasoning: 3.000 s (share estimated from characters)")
    assert got[2][2].startswith("#0 answer: 1.000 s")


def hostile() -> Trace:
    its = []
    for i in range(1000):
        its.append(
            Iteration(
                index=i,
                streamed=i % 2 == 0,
                ttft_s=[-1.0, 0.0, float("nan"), 1e300][i % 4],
                latency_s=[0.0, -5.0, float("inf"), 2.0, 1e12][i % 5],
                raw_content="x" * 1_000_000 if i == 0 else SCRIPT,
                text="x" * 1_000_000 if i == 0 else SCRIPT,
                usage={"prompt_tokens": 2**63, "completion_tokens": 2**63, "reasoning_tokens": -3},
                tool_calls=[
                    ToolCallRecord(name=SCRIPT * 1000, duration_s=d)
                    for d in (-1.0, 0.0, float("nan"), 2**63)
                ],
            )
        )
    return Trace(model=SCRIPT, endpoint=SCRIPT, outcome=SCRIPT, iterations=its)


def test_a_hostile_trace_draws_inert_and_bounded() -> None:
    trace = hostile()
    svg = timeline_svg(trace)
    assert "<script" not in svg and len(svg) < 300_000
    root = parse(svg)
    inside(root)
    assert len(marks(root)) <= MAX_ROWS * 7
    assert f"first {MAX_ROWS} of 1,000 iterations drawn" in "".join(
        t.text or "" for t in root.iter("text")
    )
    for _, w, title in marks(root):
        assert w >= 0 and "nan" not in title and "inf" not in title
        assert len(title) < 400  # a long tool name is cut
    # Everywhere it is shown, the same picture, and nothing of the markup is live.
    assert timeline_svg(trace) in trace._repr_html_()
    view = TraceView(trace)
    try:
        assert svg in view.summary.value
    finally:
        view.close()


def test_no_iterations_no_picture(tmp_path: Path) -> None:
    assert timeline_svg(Trace()) == ""
    assert "<svg" not in Trace()._repr_html_()


def test_the_report_draws_each_trace(tmp_path: Path) -> None:
    path = tmp_path / "r.html"
    save_html([run(), hostile()], path)
    page = path.read_text()
    pictures = SVG.findall(page)
    assert len(pictures) == 2 and "<script" not in page
    for svg in pictures:
        inside(parse(svg))


def frame(rows: list[tuple[str, str, str, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["endpoint", "scenario", "outcome", "latency_s"])


def test_latency_per_cell() -> None:
    df = frame(
        [
            ("a", "s1", "ok", 1.0),
            ("a", "s1", "ok", 3.0),
            ("a", "s1", "ok", 2.0),
            ("a", "s2", "ok", 0.5),
            ("a", "s2", "NotJSONError", float("nan")),
            (f"b{SCRIPT}", "s1", "ValueError", 4.0),
        ]
    )  # endpoint by endpoint, as compare() orders its rows; drawn scenario by scenario
    root = parse(latency_svg(df))
    got = marks(root)
    assert [t for _, _, t in got] == [
        "s1 @ a: 3/3 ok, median 2.000 s (fastest 1.000 s, slowest 3.000 s)",
        f"s1 @ b{SCRIPT}: 0/1 ok, median 4.000 s (fastest 4.000 s, slowest 4.000 s)",
        "s2 @ a: 1/2 ok, median 0.500 s (fastest 0.500 s, slowest 0.500 s)",
    ]
    w = [w for _, w, _ in got]
    assert w[1] == pytest.approx(2 * w[0], abs=0.2) and w[0] == pytest.approx(4 * w[2], abs=0.2)
    fills = [r.get("fill") for r in root.iter("rect") if r.find("title") is not None]
    assert fills == ["hsl(120,55%,60%)", "hsl(0,55%,60%)", "hsl(60,55%,60%)"]
    assert len(list(root.iter("line"))) >= 3  # fastest-to-slowest lines, and the axis
    inside(root)


def load_summary(levels: tuple[int, ...], endpoints: list[str]) -> pd.DataFrame:
    rows = []
    for e, endpoint in enumerate(endpoints):
        for load in levels:
            rows.append(
                {
                    "endpoint": endpoint,
                    "scenario": "weather",
                    "load": load,
                    "ok": load,
                    "runs": load,
                    "p50_latency_s": 0.5 * load + e,
                    "p95_latency_s": 0.7 * load + e,
                    "p50_ttft_s": 0.1,
                    "output_tokens_per_s": 100.0 * load / (e + 1),
                }
            )
    return pd.DataFrame(rows)


def test_latency_and_throughput_against_load() -> None:
    summary = load_summary((1, 2, 4), ["vllm", f"llama{SCRIPT}"])
    root = parse(load_svg(summary))
    points = [hover(c) for c in root.iter("circle")]
    assert len(points) == 2 * 2 * 3  # two panels, two lines, three levels
    assert "vllm / weather: load 4: 2.000 p50 latency s" in points
    assert f"llama{SCRIPT} / weather: load 2: 100.000 output tok/s" in points
    assert len(list(root.iter("polyline"))) == 4
    # Higher is higher: in the latency panel, vllm's load-4 point sits above its load-1 point.
    vllm = [c for c in root.iter("circle") if "vllm / weather" in hover(c)]
    assert float(vllm[2].get("cy", "")) < float(vllm[0].get("cy", ""))
    assert float(vllm[2].get("cx", "")) > float(vllm[0].get("cx", ""))
    # Shown beside the latency chart when the summary has several levels.
    html = charts_html(frame([("a", "s", "ok", 1.0)]), summary)
    assert len(SVG.findall(html)) == 2
    assert len(SVG.findall(charts_html(frame([("a", "s", "ok", 1.0)]), None))) == 1


def test_a_hostile_load_summary() -> None:
    summary = load_summary((1, 8), [f"e{n}{SCRIPT}" for n in range(40)])
    summary.loc[0, "p50_latency_s"] = float("nan")
    summary.loc[1, "output_tokens_per_s"] = 2**63
    summary.loc[2, "load"] = -1
    summary["p95_latency_s"] = "x"
    svg = load_svg(summary)
    assert "<script" not in svg
    root = parse(svg)
    assert len(list(root.iter("polyline"))) <= 2 * MAX_SERIES
    assert "first 10 of 40 lines drawn" in "".join(t.text or "" for t in root.iter("text"))
    for c in root.iter("circle"):
        assert 0 <= float(c.get("cx", "")) <= WIDTH and 0 <= float(c.get("cy", "")) < 200
    assert load_svg(pd.DataFrame({"endpoint": ["a"]})) == ""


def test_compare_view_and_report_draw_the_latency_chart(tmp_path: Path) -> None:
    df = frame([(f"e{n}", f"s{m}", "ok", 0.1 * (n + m + 1)) for n in range(8) for m in range(5)])
    view = CompareView(df)
    try:
        root = parse(view.charts.value.split(">", 1)[1].rsplit("</div>", 1)[0])
        assert len(marks(root)) == 40
        assert view.charts in view.children
    finally:
        view.close()
    path = tmp_path / "c.html"
    save_html(df, path)
    pictures = SVG.findall(path.read_text())
    assert len(pictures) == 1 and len(marks(parse(pictures[0]))) == 40


def test_charts_of_odd_frames() -> None:
    assert latency_svg(frame([])) == ""
    assert charts_html(pd.DataFrame({"x": [1]})) == ""
    many = frame([(f"e{n}", f"s{n % 7}", "ok", float(n)) for n in range(500)])
    root = parse(latency_svg(many))
    assert len(marks(root)) == 160
    inside(root)
    assert any("of 500 cells drawn" in (t.text or "") for t in root.iter("text"))
