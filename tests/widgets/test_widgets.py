"""TraceView without a browser: assertions on the built widget tree's .value and .children."""

from __future__ import annotations

import threading
from typing import Any

import ipywidgets as widgets
import pytest
from widget_tree import html_values, walk

from rig_nb import Client, Iteration, RunRequest, ToolCallRecord, Trace
from rig_nb._html import DISPLAY_CHARS, PREVIEW_CHARS
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, XSS_IMG, XSS_SCRIPT, DemoServer, demo_tools
from rig_nb.testing import ScriptedServer, chat_reply
from rig_nb.widgets import LeakLab, TraceView
from rig_nb.widgets.trace_view import SEGMENT_ROWS


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
