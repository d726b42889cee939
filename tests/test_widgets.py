"""Widgets without a browser: assertions on the built widget tree's .value and .children."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import ipywidgets as widgets
import pytest

from rig_nb import Client, Iteration, RunRequest, ToolCallRecord, Trace, reasoning_shape
from rig_nb._html import (
    DISPLAY_CHARS,
    PREVIEW_CHARS,
    _marked,
    marked_reasoning_html,
    reasoning_spans,
    shown_chars,
)
from rig_nb.compare import Endpoint, compare
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, XSS_IMG, XSS_SCRIPT, DemoServer, demo_tools
from rig_nb.testing import Response, ScriptedServer, chat_reply, tool_call
from rig_nb.widgets import CompareView, LeakLab, ProbePanel, TraceView
from rig_nb.widgets.leak_lab import EXAMPLES
from rig_nb.widgets.trace_view import SEGMENT_ROWS

SECRET = "sk-widget-SECRET-4242"


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
        client.run_trace(request, trace=trace)  # the trace holds the outcome


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
                ending="tool_calls",
            ),
            Iteration(
                index=1,
                raw_content="Oslo is 4 C.",
                text="Oslo is 4 C.",
                finish_reason="stop",
                ending="answer",
            ),
        ],
    )


def test_rows_match_the_trace() -> None:
    view = TraceView(sample_trace())
    assert shown_toggles(view) == [r.toggle for r in view.rows] and len(view.rows) == 2
    assert grid_layout(view) == [[0, 1]]
    first = view.rows[0].cells
    assert first == [
        "0",
        "tool_calls",
        "unopened",
        "",
        "calling",
        "get_weather",
        "11/7",
        "0.25",
        "",
    ]
    assert view.rows[1].cells[:5] == ["1", "answer", "none", "", "Oslo is 4 C."]
    assert ">get_weather</span>" in view.rows[0].line
    assert "ok, 2 iterations, 1 tool call," in view.summary.value
    assert ">tokens</span>" in view.summary.value and ">ending</span>" in view.summary.value
    assert "ending: how the turn ended" in view.summary.value


@pytest.mark.parametrize(
    ("outcome", "ending", "colour"),
    [
        pytest.param("ok", "answer", "#1b5e20", id="ok"),
        pytest.param("text_tool_calls", "text_tool_calls", "#b71c1c", id="text-tool-calls"),
        pytest.param("reasoning_only", "reasoning_only", "#b71c1c", id="reasoning-only"),
        pytest.param("OutputLimitError", "length_in_reasoning", "#b71c1c", id="error"),
        pytest.param("", "", "inherit", id="running"),
    ],
)
def test_trace_view_title_is_the_outcome(outcome: str, ending: str, colour: str) -> None:
    trace = Trace(model="m", endpoint="e", outcome=outcome, iterations=[Iteration(ending=ending)])
    view = TraceView(trace)
    title = view.summary.value.split("</div>", 1)[0]
    assert title.endswith(f">m @ e: {outcome or 'running'}, 1 iteration, 0 tool calls, 0.00 s")
    assert f";color:{colour}" in title  # green only for "ok"
    assert repr(view).startswith(f"<TraceView m @ e: {outcome or 'running'}, ")


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


def test_an_empty_answer_previews_what_was_said() -> None:
    trace = Trace(
        iterations=[
            Iteration(index=0, raw_content="<think>look it up</think>", reasoning_shape="closed"),
            Iteration(
                index=1, reasoning_content="thinking in the field", reasoning_field="thinking"
            ),
            Iteration(index=2),
        ]
    )
    texts = [row.cells[4] for row in TraceView(trace).rows]
    assert texts == [
        "[raw] <think>look it up</think>",
        "[thinking] thinking in the field",
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
    assert "<del>plan&lt;/think&gt;</del>calling" in detail  # what strip_reasoning removes
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
    assert row.cells[5] == "lookup" and row.cells[8] == "boom"
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
    assert len(view.rows[5].cells[4]) == PREVIEW_CHARS
    view.rows[5].toggle.value = True
    # The detail shows the head of each text and says how much more there is.
    assert view.rows[5].detail.value.count("x") >= 2 * DISPLAY_CHARS
    assert f"{len(big) - DISPLAY_CHARS:,} more characters not shown" in view.rows[5].detail.value
    assert all(r.detail is None for r in view.rows if r is not view.rows[5])


def test_a_shorter_trace_starts_the_table_over() -> None:
    trace = sample_trace()
    view = TraceView(trace)
    old = view.rows[0]
    old.toggle.value = True
    del trace.iterations[0]
    trace.notify()
    assert [r.cells[:2] for r in view.rows] == [["1", "answer"]] and view.rows[0] is not old
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
    assert "<del>&lt;think&gt;a&lt;/think&gt;b&lt;/think&gt;</del>c" in lab.marked.value
    s = "<think>a</think>b</think>c"
    assert reasoning_spans(s) == [(0, 25, True), (25, 26, False)]
    assert reasoning_spans("x<think>y") == [(0, 1, False), (1, 9, True)]
    assert reasoning_spans("<think>a</think>b<think>c") == [
        (0, 16, True),
        (16, 17, False),
        (17, 25, True),
    ]


BLOCK = "<think>a</think>b"


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(BLOCK * 20_000, id="blocks"),
        pytest.param("x</think>" + BLOCK * 20_000, id="bare-first"),
        pytest.param(BLOCK * 20_000 + "x</think>" + BLOCK * 100, id="bare-past-the-head"),
        pytest.param(BLOCK * 2_000 + "y</think>" + BLOCK * 20_000, id="bare-in-the-head"),
        pytest.param(BLOCK * 3_000 + "<think><think>n</think>" + BLOCK * 9_000, id="nested"),
        pytest.param("<b>&" * 10 + BLOCK * 20_000 + "<think>open", id="markup-unclosed"),
        pytest.param("c" * 99_990 + BLOCK * 10, id="cut-in-a-tag"),
        pytest.param("\x01" + BLOCK * 20_000, id="control-characters"),
    ],
)
def test_marking_agrees_with_the_spans_on_long_replies(raw: str) -> None:
    # The fast marking (C-level replaces, one search past the shown head) against the
    # span-by-span rendering, with and without the recorded shape.
    n = shown_chars(raw)
    assert n < len(raw)
    for shape in (None, reasoning_shape(raw)):
        html = marked_reasoning_html(raw, shape)
        assert _marked(raw, reasoning_spans(raw, n, shape)) in html
        assert "more characters not shown" in html


def test_leak_lab_names_dialects_and_recoverable_calls() -> None:
    lab = LeakLab()
    lab.examples.value = "Hermes/Qwen: a tool call written as text"
    assert lab.leaks.value == "tool-call-tag"
    assert "get_weather" in lab.calls.value and "Lisbon" in lab.calls.value
    lab.examples.value = "gpt-oss without a harmony parser"
    assert lab.leaks.value == "harmony"
    assert "get_weather" in lab.calls.value
    lab.examples.value = "a clean answer"
    assert (lab.leaks.value, lab.calls.value) == ("none", "<i>none</i>")


def test_an_unprobed_probe_panel_shows_no_empty_band() -> None:
    panel = ProbePanel()
    assert (panel.base_url.value, panel.model.value) == ("", "")
    hidden = [panel.verdict, panel.error_class, panel.message, panel.report]
    assert all(w.layout.display == "none" for w in hidden)


def test_probe_panel_probes_the_endpoint_it_is_given(demo: DemoServer) -> None:
    panel = ProbePanel(demo.base_url, "well-behaved")
    assert panel.probe() == "ok"
    assert panel.verdict.value.startswith("tool calling works")
    assert panel.verdict.layout.display is None
    assert panel.error_class.value == "" and panel.error_class.layout.display == "none"
    panel.stream.value = True
    assert panel.probe() == "ok"
    assert demo.requests[-1].json["stream"] is True


def test_probe_panel_full_report_shows_the_fix(demo: DemoServer) -> None:
    panel = ProbePanel(demo.base_url, "qwen3-no-parser")
    panel.report_button.click()  # returns at once: the report runs on a worker thread
    assert panel.wait(timeout=60)
    report = panel.last_report
    assert report is not None
    assert report.check("reasoning_location").verdict == "content:unopened"
    assert panel.report.layout.display is None
    assert "reasoning_location" in panel.report.value and "--reasoning-parser" in panel.report.value


def test_probe_panel_reports_the_error_class(demo: DemoServer) -> None:
    panel = ProbePanel(demo.base_url, "hermes-text-tools")
    panel.button.click()
    assert panel.wait(timeout=60)
    assert panel.verdict.value.startswith("no tool calling")
    assert panel.error_class.value == "error class: NoToolCallingError"
    panel.model.value = "budget-think"
    assert panel.probe() == "OutputLimitError"
    assert panel.verdict.value.startswith("inconclusive")


def test_probe_panel_key_never_shows() -> None:
    echo = {"error": {"message": f"invalid api key {SECRET}", "type": "auth"}}
    with ScriptedServer(
        [Response(echo, status=401), chat_reply(tool_calls=[tool_call("ping")])]
    ) as s:
        panel = ProbePanel(s.base_url, "m")
        panel.key.value = SECRET
        panel.button.click()
        assert panel.wait(timeout=60)
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


def _long_reply(deltas: int, piece: int = 4) -> dict[str, Any]:
    text = "".join(f"w{i % 10} " for i in range(deltas * piece // 3 + 1))[: deltas * piece]
    return chat_reply(f"<think>{text[: len(text) // 2]}</think>{text[len(text) // 2 :]}")


def test_a_streamed_reply_grows_its_row_live() -> None:
    from rig_nb.testing import streamed

    body = _long_reply(40)
    view = TraceView()
    seen: list[tuple[int, str]] = []
    view.trace.add_listener(
        lambda t: (
            seen.append((len(t.iterations[0].raw_content), view.rows[0].line))
            if t.iterations and view.rows
            else None
        )
    )
    with ScriptedServer([streamed(body, piece_chars=4, interval=0.02)]) as s:
        with Client(s.base_url) as c:
            c.run(RunRequest("m", 64, prompt="go", stream=True), trace=view.trace)
    final = len(body["choices"][0]["message"]["content"])
    partial = [(n, line) for n, line in seen if 0 < n < final]
    assert partial, "no notification while the reply streamed"
    assert len({line for _, line in partial}) >= 1 and seen[-1][0] == final
    it = view.trace.iterations[0]
    assert (it.streamed, it.chunks > 40, it.ttft_s > 0, it.ending) == (True, True, True, "answer")
    assert view.rows[0].cells[1] == "answer"


def test_a_ten_thousand_delta_reply_sends_few_widget_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rig_nb.testing import streamed

    sent: list[str] = []
    original = widgets.Widget._send

    def counting(self: Any, msg: dict[str, Any], buffers: Any = None) -> None:
        sent.append(type(self).__name__)
        original(self, msg, buffers)

    body = _long_reply(10_000, piece=2)
    view = TraceView()
    monkeypatch.setattr(widgets.Widget, "_send", counting)
    with (
        ScriptedServer([streamed(body, piece_chars=2)]) as s,
        Client(s.base_url, max_response_bytes=8 << 20) as c,
    ):
        c.run(RunRequest("m", 64, prompt="go", stream=True), trace=view.trace)
    it = view.trace.iterations[0]
    assert it.chunks > 10_000 and it.raw_content == body["choices"][0]["message"]["content"]
    # Listeners hear of a streaming reply at most 10 times a second: each time the summary and
    # one segment of lines change. Unthrottled, this would be tens of thousands of messages.
    assert 0 < len(sent) < 200, len(sent)


def test_markup_in_every_field_a_widget_shows_stays_text() -> None:
    bad = f"{XSS_SCRIPT}{XSS_IMG}"
    it = Iteration(
        index=0,
        messages=[{"role": "user", "content": bad, bad: bad}],
        raw_content=f"<think>{bad}</think>{bad}",
        reasoning_content=bad,
        reasoning_shape=bad,
        text=bad,
        finish_reason=bad,
        tool_calls=[
            ToolCallRecord(
                id=bad,
                received_id=bad,
                name=bad,
                arguments=bad,
                result=bad,
                is_error=True,
                source=bad,
                error_type=bad,
            )
        ],
        usage={"prompt_tokens": bad, bad: 3},  # type: ignore[dict-item]
        error=bad,
        reasoning_field=bad,
        leaks=[bad],
        ending=bad,
        streamed=True,
        chunks=3,
    )
    trace = Trace(model=bad, endpoint=bad, outcome=bad, iterations=[it], settings={bad: bad})
    view = TraceView(trace)
    view.rows[0].toggle.value = True
    lab = LeakLab(it.raw_content)
    texts = html_values(view) + html_values(lab) + [trace._repr_html_()]
    assert any("&lt;script&gt;window.__rig_xss=1&lt;/script&gt;" in t for t in texts)
    for value in texts:
        assert "<script" not in value.lower() and "<img" not in value.lower()
