"""Widgets without a browser: assertions on the built widget tree's .value and .children."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import ipywidgets as widgets
import pytest

from rig_nb import Client, Iteration, RunRequest, ToolCallRecord, Trace
from rig_nb.compare import Endpoint, compare
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, XSS_IMG, XSS_SCRIPT, DemoServer, demo_tools
from rig_nb.testing import Reply, ScriptedServer, chat_reply, tool_call
from rig_nb.widgets import CompareView, LeakLab, ProbePanel, TraceView
from rig_nb.widgets.leak_lab import EXAMPLES
from rig_nb.widgets.probe_panel import demo_endpoint
from rig_nb.widgets.render import PREVIEW_CHARS, reasoning_segments
from rig_nb.widgets.trace_view import SEGMENT_ROWS

SECRET = "sk-widget-SECRET-4242"


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer() as server:
        yield server


def walk(widget: Any) -> Iterator[Any]:
    """Every widget in the tree, row details included (built, whether shown or not)."""
    yield widget
    for child in getattr(widget, "children", ()):
        yield from walk(child)
    if isinstance(widget, TraceView):
        shown = set(map(id, widget.children))
        yield from (r.detail for r in widget.rows if r.detail and id(r.detail) not in shown)


def shown_toggles(view: TraceView) -> list[Any]:
    """The row toggles on screen, in display order."""
    return [w for w in walk(view) if isinstance(w, widgets.ToggleButton)]


def grid_layout(view: TraceView) -> list[Any]:
    """The grid's children as (row indices of a segment) or ("detail", index) entries.

    Checks that each segment's toggle column and its lines hold the same rows in order.
    """
    kids = list(view.children)
    assert kids[0] is view.summary
    toggles = {id(r.toggle): i for i, r in enumerate(view.rows)}
    details = {id(r.detail): i for i, r in enumerate(view.rows) if r.detail is not None}
    out: list[Any] = []
    n = 1
    while n < len(kids):
        if id(kids[n]) in details:
            out.append(("detail", details[id(kids[n])]))
            n += 1
            continue
        column, lines = kids[n], kids[n + 1]
        idx = [toggles[id(t)] for t in column.children]
        assert lines.value == "".join(view.rows[i].line for i in idx)
        out.append(idx)
        n += 2
    return out


def html_values(widget: Any) -> list[str]:
    return [str(w.value) for w in walk(widget) if isinstance(w, widgets.HTML)]


def all_state(widget: Any) -> str:
    return json.dumps([w.get_state() for w in walk(widget)], default=str)


def run_demo(model: str, trace: Trace, server: DemoServer) -> None:
    request = RunRequest(
        model, 1024, system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools(), max_iterations=4
    )
    with Client(server.base_url) as client:
        try:
            client.run(request, trace=trace)
        except Exception:  # the trace holds the outcome; the widgets are under test
            pass


def sample_trace() -> Trace:
    return Trace(
        model="m",
        endpoint="127.0.0.1:1",
        outcome="ok",
        iterations=[
            Iteration(
                index=0,
                raw_content="plan</think>calling",
                reasoning_shape="unopened",
                text="calling",
                finish_reason="tool_calls",
                tool_calls=[
                    ToolCallRecord(id="a", name="get_weather", arguments='{"city":"Oslo"}')
                ],
                usage={"prompt_tokens": 11, "completion_tokens": 7},
                latency_s=0.25,
            ),
            Iteration(
                index=1, raw_content="Oslo is 4 C.", text="Oslo is 4 C.", finish_reason="stop"
            ),
        ],
    )


def test_rows_match_the_trace() -> None:
    view = TraceView(sample_trace())
    assert shown_toggles(view) == [r.toggle for r in view.rows] and len(view.rows) == 2
    assert grid_layout(view) == [[0, 1]]
    first = view.rows[0].cells
    assert first == ["0", "tool_calls", "unopened", "calling", "get_weather", "11/7", "0.25", ""]
    assert view.rows[1].cells[:4] == ["1", "stop", "none", "Oslo is 4 C."]
    assert ">get_weather</span>" in view.rows[0].line
    assert "ok, 2 iterations, 1 tool calls" in view.summary.value
    assert ">tokens in/out</span>" in view.summary.value


def test_an_empty_answer_previews_what_was_said() -> None:
    trace = Trace(
        iterations=[
            Iteration(index=0, raw_content="<think>look it up</think>", reasoning_shape="closed"),
            Iteration(index=1, reasoning_content="thinking in the field"),
            Iteration(index=2),
        ]
    )
    texts = [row.cells[3] for row in TraceView(trace).rows]
    assert texts == [
        "[raw] <think>look it up</think>",
        "[reasoning field] thinking in the field",
        "",
    ]


def test_rows_appear_while_a_run_fills_the_trace(demo: DemoServer) -> None:
    view = TraceView()
    seen: list[int] = []
    # Registered after the view's own listener: it sees what the view shows at each step.
    view.trace.add_listener(lambda t: seen.append(len(shown_toggles(view))))
    worker = threading.Thread(target=run_demo, args=("qwen3-no-parser", view.trace, demo))
    worker.start()
    worker.join()
    final = len(view.trace.iterations)
    assert final >= 2
    assert len(shown_toggles(view)) == final
    assert seen == sorted(seen) and seen[-1] == final
    assert any(0 < n < final for n in seen)  # rows were there before the run ended
    assert [r.cells[0] for r in view.rows] == [str(i) for i in range(final)]
    assert grid_layout(view) == [list(range(final))]
    assert f": {view.trace.outcome}, {final} iterations" in view.summary.value


def test_detail_is_built_on_expand_only() -> None:
    view = TraceView(sample_trace())
    row = view.rows[0]
    assert row.detail is None and row.toggle.icon == "chevron-right"
    row.toggle.value = True
    detail = row.detail.value
    # The detail sits right below its row, across both columns; the rows after it follow.
    assert grid_layout(view) == [[0], ("detail", 0), [1]]
    assert (
        row.detail.layout.grid_area == "auto / 1 / auto / 3" and row.toggle.icon == "chevron-down"
    )
    assert "get_weather" in detail and "&quot;city&quot;:&quot;Oslo&quot;" in detail
    assert "line-through" in detail  # the part strip_reasoning removes is marked
    assert view.rows[1].detail is None
    row.toggle.value = False
    assert grid_layout(view) == [[0, 1]] and row.toggle.icon == "chevron-right"
    row.toggle.value = True
    assert row.detail.value == detail


def test_rows_open_anywhere_and_segments_stay_bounded() -> None:
    n = 2 * SEGMENT_ROWS + 3
    view = TraceView(Trace(iterations=[Iteration(index=i, text=f"t{i}") for i in range(n)]))
    first = list(range(SEGMENT_ROWS))
    assert grid_layout(view) == [first, [i + SEGMENT_ROWS for i in first], [n - 3, n - 2, n - 1]]
    for i in (3, 4, n - 1):
        view.rows[i].toggle.value = True
    expected = [
        [0, 1, 2, 3],
        ("detail", 3),
        [4],
        ("detail", 4),
        list(range(5, 5 + SEGMENT_ROWS)),
        list(range(5 + SEGMENT_ROWS, n)),
        ("detail", n - 1),
    ]
    assert grid_layout(view) == expected
    assert shown_toggles(view) == [r.toggle for r in view.rows]
    view.rows[4].toggle.value = False
    assert grid_layout(view)[:3] == [[0, 1, 2, 3], ("detail", 3), list(range(4, 4 + SEGMENT_ROWS))]


def test_a_row_costs_one_widget() -> None:
    from ipywidgets.widgets import widget as widget_module

    def created(rows: int) -> int:
        before = len(widget_module._instances)
        TraceView(Trace(iterations=[Iteration(index=i) for i in range(rows)]))
        return len(widget_module._instances) - before

    # A toggle per row, and a toggle column plus one HTML of lines per SEGMENT_ROWS rows.
    assert created(1 + SEGMENT_ROWS) - created(1) == SEGMENT_ROWS + 2
    assert created(SEGMENT_ROWS) - created(1) == SEGMENT_ROWS - 1


def test_an_open_row_follows_its_iteration() -> None:
    trace = sample_trace()
    view = TraceView(trace)
    row = view.rows[1]
    row.toggle.value = True
    assert "Tool calls" not in row.detail.value
    it = trace.iterations[1]
    it.tool_calls.append(ToolCallRecord(id="b", name="lookup", arguments="{}", result="<b>x"))
    it.error = "boom"
    trace.notify()
    assert row.cells[4] == "lookup" and row.cells[7] == "boom"
    assert ">lookup</span>" in row.line and ">boom</span>" in row.line
    assert grid_layout(view) == [[0, 1], ("detail", 1)]
    assert "&lt;b&gt;x" in row.detail.value and "<b>x" not in row.detail.value


def test_long_replies_are_previewed_and_full_on_expand() -> None:
    def view_of(reply: str) -> TraceView:
        its = [Iteration(index=i, raw_content=reply, text=reply) for i in range(32)]
        return TraceView(Trace(iterations=its))

    def shown(view: TraceView) -> int:
        return sum(len(str(w.value)) for w in walk(view) if hasattr(w, "value"))

    big = "x" * (1 << 20)
    view = view_of(big)
    assert len(view.rows) == 32
    # What the table holds does not grow with the replies: 1 MiB shows like 3 previews' worth.
    assert shown(view) == shown(view_of("x" * (3 * PREVIEW_CHARS)))
    assert all(r.detail is None for r in view.rows)
    assert len(view.rows[5].cells[3]) == PREVIEW_CHARS
    view.rows[5].toggle.value = True
    assert view.rows[5].detail.value.count("x") >= 2 * len(big)
    assert all(r.detail is None for r in view.rows if r is not view.rows[5])


def test_a_shorter_trace_starts_the_table_over() -> None:
    trace = sample_trace()
    view = TraceView(trace)
    old = view.rows[0]
    old.toggle.value = True
    del trace.iterations[0]
    trace.notify()
    assert [r.cells[:2] for r in view.rows] == [["1", "stop"]] and view.rows[0] is not old
    assert grid_layout(view) == [[0]]
    assert old.detail not in view.children and old.toggle not in shown_toggles(view)


def test_escaping_holds_for_a_script_laden_trace(demo: DemoServer) -> None:
    trace = Trace()
    run_demo("html-injector", trace, demo)
    assert any(XSS_SCRIPT in it.raw_content for it in trace.iterations)
    view = TraceView(trace)
    for row in view.rows:
        row.toggle.value = True
    values = html_values(view)
    joined = "\n".join(values)
    assert "&lt;script&gt;window.__rig_xss=1&lt;/script&gt;" in joined
    for value in values:
        assert "<script" not in value.lower()
        assert "<img" not in value.lower()
    static = trace._repr_html_()
    assert static is not None and "<script" not in static.lower() and "<img" not in static.lower()
    bundle_html = view._repr_mimebundle_()["text/html"]
    assert "<script" not in bundle_html.lower() and "<img" not in bundle_html.lower()


def test_leak_lab_is_escaped_and_live() -> None:
    lab = LeakLab()
    lab.input.value = f"</think>{XSS_SCRIPT}{XSS_IMG}"
    for value in html_values(lab):
        assert "<script" not in value.lower() and "<img" not in value.lower()
    assert "&lt;img" in lab.stripped.value
    assert lab.shape.value == "unopened"


@pytest.mark.parametrize(
    ("example", "shape", "decoded"),
    [
        pytest.param("bare </think>: the template consumed the opening tag", "unopened", None),
        pytest.param("unclosed <think>: the budget ran out while thinking", "unclosed", None),
        pytest.param(
            "R1: a JSON sketch in the reasoning, then the real JSON",
            "closed",
            {"country": "France", "capital": "Paris"},
        ),
    ],
)
def test_leak_lab_examples(example: str, shape: str, decoded: dict[str, str] | None) -> None:
    lab = LeakLab()
    lab.examples.value = example
    assert lab.input.value == EXAMPLES[example]
    assert lab.shape.value == shape
    assert lab.result == decoded
    if decoded is None:
        assert lab.decode_error.value.split(":")[0] in ("NotJSONError", "InvalidJSONError")
    else:
        assert lab.decode_error.value == "ok" and "&quot;Paris&quot;" in lab.decoded.value


def test_leak_lab_marks_what_strip_removes() -> None:
    lab = LeakLab("<think>a</think>b</think>c")
    assert lab.stripped.value.endswith(">c</pre>")
    pieces = reasoning_segments("<think>a</think>b</think>c")
    assert pieces == [("<think>a</think>b</think>", True), ("c", False)]
    assert reasoning_segments("x<think>y") == [("x", False), ("<think>y", True)]


def test_probe_panel_defaults_to_the_demo_endpoint() -> None:
    panel = ProbePanel()
    base_url, model = demo_endpoint()
    assert (panel.base_url.value, panel.model.value) == (base_url, model)
    assert panel.probe() == "ok"
    assert panel.verdict.value.startswith("tool calling works")
    assert panel.error_class.value == ""


def test_probe_panel_reports_the_error_class(demo: DemoServer) -> None:
    panel = ProbePanel(demo.base_url, "hermes-text-tools")
    panel.button.click()
    assert panel.verdict.value.startswith("no tool calling")
    assert panel.error_class.value == "error class: NoToolCallingError"
    panel.model.value = "budget-think"
    assert panel.probe() == "OutputLimitError"
    assert panel.verdict.value.startswith("inconclusive")


def test_probe_panel_key_never_shows() -> None:
    echo = {"error": {"message": f"invalid api key {SECRET}", "type": "auth"}}
    with ScriptedServer([Reply(echo, status=401), chat_reply(tool_calls=[tool_call("ping")])]) as s:
        panel = ProbePanel(s.base_url, "m")
        panel.key.value = SECRET
        panel.button.click()
        assert s.requests[0].headers["authorization"] == f"Bearer {SECRET}"
        assert panel.key.value == ""
        assert panel.error_class.value == "error class: BackendError"
        assert "401" in panel.message.value
        for text in (repr(panel), all_state(panel), panel.message.value, panel.verdict.value):
            assert SECRET not in text
        assert panel.probe() == "ok"  # the key stays in memory for the next probe
        assert s.requests[1].headers["authorization"] == f"Bearer {SECRET}"


def test_probe_panel_key_from_python_stays_out_of_widget_state() -> None:
    with ScriptedServer([chat_reply(tool_calls=[tool_call("ping")])]) as s:
        panel = ProbePanel(s.base_url, "m", api_key=SECRET)
        assert SECRET not in all_state(panel) and SECRET not in repr(panel)
        assert panel.probe() == "ok"
        assert s.requests[0].headers["authorization"] == f"Bearer {SECRET}"


def test_probe_panel_bad_url_is_a_verdict_not_an_exception() -> None:
    panel = ProbePanel("ftp://example.invalid", "m")
    assert panel.probe() == "ValueError"
    assert panel.error_class.value == "error class: ValueError"


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
    assert view.summary.value.startswith("well-behaved: ")


def test_compare_view_says_when_everything_passed() -> None:
    import pandas as pd

    df = pd.DataFrame({"endpoint": ["a"], "outcome": ["ok"], "latency_s": [0.5]})
    view = CompareView(df)
    assert "Every scenario passed" in view.legend.value
    assert ">0.50<" in view.table.value
    assert view.summary.value == "a: 1/1 ok"
