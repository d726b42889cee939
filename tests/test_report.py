"""rig_nb.report: the static HTML report, JSON Lines trace files, OTLP/JSON spans."""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from loopback import free_port

from rig_nb import Client, Iteration, RigError, RunRequest, ToolCallRecord, Trace
from rig_nb._html import esc
from rig_nb.compare import Endpoint, Scenario, compare
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, XSS_IMG, XSS_SCRIPT, DemoServer, demo_tools
from rig_nb.report import load_traces, save_html, save_traces, to_otel
from rig_nb.report.files import open_regular
from rig_nb.testing import Response, ScriptedServer

SECRET = "sk-report-SECRET-4242"
START_NS = 1_700_000_000_000_000_000
HEX32, HEX16 = re.compile(r"[0-9a-f]{32}"), re.compile(r"[0-9a-f]{16}")
CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}
INJECTOR = f"inj{XSS_SCRIPT}"  # an endpoint display name holding markup


def closed_port_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"


@pytest.fixture(scope="module")
def frame(demo: DemoServer) -> pd.DataFrame:
    endpoints = [
        Endpoint("well-behaved", demo.base_url, "well-behaved"),
        Endpoint(INJECTOR, demo.base_url, "html-injector"),
        Endpoint("qwen3-no-parser", demo.base_url, "qwen3-no-parser"),
        Endpoint("dead", closed_port_url(), "m"),
    ]
    weather = Scenario(
        "weather", system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools(), max_iterations=4
    )
    scenarios = [Scenario("probe", kind="probe"), Scenario("plain", prompt="Hi."), weather]
    return compare(endpoints, scenarios=scenarios, repeats=2, progress=False, timeout=5)


def run_trace(demo: DemoServer, model: str, prompt: str = DEMO_PROMPT) -> Trace:
    with Client(demo.base_url, SECRET) as client:
        request = RunRequest(
            model, 512, system=DEMO_SYSTEM, prompt=prompt, tools=demo_tools(), max_iterations=4
        )
        try:
            return client.run(request).trace
        except RigError as exc:
            assert exc.trace is not None
            return exc.trace


def test_importing_report_imports_no_pandas() -> None:
    code = (
        "import sys, rig_nb.report; print(sorted({'pandas', 'rig_nb.compare'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- HTML ----------------------------------------------------------------------------------


class Page(HTMLParser):
    """What a browser would see: tags, attributes, text, ids, iteration <details> per section."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.ids: set[str] = set()
        self.section = ""
        self.iterations: dict[str, int] = {}
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        if a.get("id"):
            self.ids.add(a["id"] or "")
        if tag == "section":
            self.section = a.get("id") or ""
        if tag == "details" and a.get("class") == "it":
            self.iterations[self.section] = self.iterations.get(self.section, 0) + 1
        if tag == "table":
            self.tables.append([])
        if tag == "tr":
            self.tables[-1].append([])
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def parse(path: Path) -> tuple[str, Page]:
    raw = path.read_text(encoding="utf-8")
    page = Page()
    page.feed(raw)
    page.close()
    return raw, page


def assert_static(raw: str, page: Page) -> None:
    """No script, no active content, nothing fetched, no link leaving the page; pictures are
    inline SVG made of shapes and text only (no <image>, <use>, <foreignObject>)."""
    forbidden = {"script", "img", "iframe", "object", "embed", "link", "base", "form"}
    forbidden |= {"image", "use", "foreignobject", "animate", "set"}
    assert not [t for t, _ in page.tags if t in forbidden]
    for tag, attrs in page.tags:
        assert not [k for k in attrs if k.startswith("on")], (tag, attrs)
        assert "src" not in attrs and "srcset" not in attrs, (tag, attrs)
        href = attrs.get("href")
        if href is not None:
            assert href.startswith("#") and href[1:] in page.ids, href
    csp = [a for t, a in page.tags if t == "meta" and a.get("http-equiv")]
    assert csp and "script-src 'none'" in (csp[0].get("content") or "")
    assert "default-src 'none'" in (csp[0].get("content") or "")
    assert "url(" not in raw and "@import" not in raw


def assert_escaped(raw: str, page: Page) -> None:
    """The demo's payloads show as text: only escaped in the file, whole in what is read."""
    for payload in (XSS_SCRIPT, XSS_IMG):
        assert payload not in raw
        assert esc(payload) in raw
    text = "".join(page.text)
    assert XSS_SCRIPT in text and XSS_IMG in text


def test_html_of_a_compare_frame(frame: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    save_html(frame, path)
    raw, page = parse(path)
    assert_static(raw, page)
    assert_escaped(raw, page)
    matrix = page.tables[0]  # the summary comes first
    endpoints = list(dict.fromkeys(frame["endpoint"]))
    scenarios = list(dict.fromkeys(frame["scenario"]))
    assert matrix[0] == ["scenario", *endpoints]
    assert [row[0] for row in matrix[1:]] == scenarios
    assert matrix[1][1].startswith("2/2 ok") and matrix[1][4].startswith("0/2 ok")
    # Each row's trace has its iterations in <details>; rows with no request have no section.
    traces = frame.attrs["traces"]
    for pos, label in enumerate(frame.index):
        trace = traces.get(label)
        expected = len(trace.iterations) if trace is not None else 0
        assert page.iterations.get(f"row-{pos}", 0) == expected
    assert sum(page.iterations.values()) == sum(len(t.iterations) for t in traces.values())
    assert len(traces) < len(frame)  # the dead endpoint's later rows made no request
    # The rows table holds every column name and row, escaped like the rest.
    rows = page.tables[1]
    assert rows[0][1:] == list(frame.columns) and len(rows) == len(frame) + 1
    assert INJECTOR in "".join(page.text) and INJECTOR not in raw
    path2 = tmp_path / "again.html"
    save_html(frame, path2)
    assert path2.read_bytes() == path.read_bytes()  # deterministic


def test_hostile_column_names_and_cells_are_escaped(frame: pd.DataFrame, tmp_path: Path) -> None:
    df = frame.rename(columns={"leaks": XSS_IMG})
    df["model"] = XSS_SCRIPT
    df.attrs["traces"] = dict(frame.attrs["traces"])  # a plain dict, as a user might set it
    path = tmp_path / "hostile.html"
    save_html(df, path)
    raw, page = parse(path)
    assert_static(raw, page)
    assert_escaped(raw, page)
    assert XSS_IMG in page.tables[1][0]


def test_html_of_a_trace_and_a_list(demo: DemoServer, tmp_path: Path) -> None:
    injected = run_trace(demo, "html-injector")
    spinner = run_trace(demo, "tool-spinner")
    leaky = run_trace(demo, "qwen3-no-parser")
    assert injected.tool_calls and spinner.outcome == "IterationLimitError"
    path = tmp_path / "one.html"
    save_html(injected, path)
    raw, page = parse(path)
    assert_static(raw, page)
    assert_escaped(raw, page)
    assert page.iterations == {"trace-0": len(injected.iterations)}
    text = "".join(page.text)
    assert injected.tool_calls[0].arguments in text and "get_weather" in text
    assert SECRET not in raw

    path = tmp_path / "list.html"
    save_html([injected, spinner, leaky], path)
    raw, page = parse(path)
    assert_static(raw, page)
    assert_escaped(raw, page)
    assert page.iterations == {
        f"trace-{n}": len(t.iterations) for n, t in enumerate([injected, spinner, leaky])
    }
    assert "IterationLimitError" in "".join(page.text)
    assert "<del>" in raw  # the think block strip_reasoning removes is struck through


def test_long_texts_are_cut(tmp_path: Path) -> None:
    big = "x" * 300_000
    trace = Trace(model="m", iterations=[Iteration(raw_content=big, text=big)], outcome="ok")
    path = tmp_path / "big.html"
    save_html(trace, path)
    raw = path.read_text(encoding="utf-8")
    assert "more characters not shown" in raw
    assert len(raw) < 300_000


def outcome_frame(rows: list[tuple[str, Trace | None]]) -> pd.DataFrame:
    """A compare-shaped frame: one row per (row outcome, trace), traces in attrs."""
    df = pd.DataFrame(
        {
            "endpoint": [f"ep{n}" for n in range(len(rows))],
            "scenario": ["s"] * len(rows),
            "repeat": [0] * len(rows),
            "outcome": [outcome for outcome, _ in rows],
            "latency_s": [0.5] * len(rows),
        }
    )
    df.attrs["traces"] = {n: t for n, (_, t) in enumerate(rows) if t is not None}
    return df


def sections(raw: str) -> dict[str, tuple[str, str, str]]:
    """Each trace section's id: (heading, the class of the line under it, that line)."""
    found = re.findall(r'<section id="([\w-]+)"><h3>(.*?)</h3><p class="(\w+)">(.*?)</p>', raw)
    return {anchor: (heading, cls, line) for anchor, heading, cls, line in found}


def test_each_section_says_the_outcome_its_row_says(tmp_path: Path) -> None:
    def ended(ending: str, outcome: str) -> Trace:
        return Trace(model="m", outcome=outcome, iterations=[Iteration(ending=ending)])

    # Row outcomes differ from the traces' where a scenario judged the run (a run that ended
    # in an answer but made no tool call), or where a trace predates the truthful outcome.
    df = outcome_frame(
        [
            ("text_tool_calls", ended("text_tool_calls", "ok")),
            ("NoToolCallingError", ended("answer", "ok")),
            ("reasoning_only", ended("reasoning_only", "reasoning_only")),
            ("ok", ended("answer", "ok")),
        ]
    )
    path = tmp_path / "rows.html"
    save_html(df, path)
    got = sections(path.read_text(encoding="utf-8"))
    for pos, outcome in enumerate(df["outcome"]):
        heading, cls, line = got[f"row-{pos}"]
        assert heading.endswith(f": {outcome}") and f"m @ ?: {outcome}, 1 iteration" in line
        assert cls == ("ok" if outcome == "ok" else "bad"), (outcome, cls)
    traces = [ended("text_tool_calls", "text_tool_calls"), ended("answer", "ok"), Trace()]
    save_html(traces, path)
    got = sections(path.read_text(encoding="utf-8"))
    assert got["trace-0"] == ("trace 0: text_tool_calls", "bad", got["trace-0"][2])
    assert ": text_tool_calls, 1 iteration" in got["trace-0"][2]
    assert got["trace-1"][:2] == ("trace 1: ok", "ok")
    assert got["trace-2"][:2] == ("trace 2: running", "muted")  # no outcome yet: no colour
    save_html(traces[0], path)
    assert sections(path.read_text(encoding="utf-8"))["trace-0"][1] == "bad"


def test_wide_tables_scroll_in_a_box_with_drawn_scrollbars(tmp_path: Path) -> None:
    long_error = "BackendError: " + "the endpoint said no " * 20
    df = outcome_frame([("BackendError", None), ("ok", Trace(outcome="ok"))])
    df["error"] = [long_error, ""]
    path = tmp_path / "wide.html"
    save_html(df, path)
    raw, page = parse(path)
    assert_static(raw, page)
    tables = [n for n, (tag, _) in enumerate(page.tags) if tag == "table"]
    assert len(tables) == 2  # the summary matrix and the rows
    for n in tables:  # each table is the only child of a box that scrolls sideways
        tag, attrs = page.tags[n - 1]
        assert tag == "div" and "scroll" in (attrs.get("class") or "").split()
    rows_box = page.tags[tables[1] - 1][1].get("class") or ""
    assert rows_box.split() == ["scroll", "tall"] and page.tags[tables[1]][1] == {"class": "rows"}
    style = raw[raw.index("<style>") : raw.index("</style>")]
    for rule in (
        ".scroll{overflow-x:auto;max-width:100%}",
        ".scroll.tall{overflow:auto;max-height:80vh;",  # its bottom scrollbar stays in sight
        ".scroll::-webkit-scrollbar{width:12px;height:12px}",  # drawn, not an overlay
        "@supports not selector(::-webkit-scrollbar){.scroll{scrollbar-color:",
        "position:sticky;top:0;",  # the column names stay in sight
        "table.rows td.long{white-space:normal;",
    ):
        assert rule in style, rule
    # A long cell wraps (class "long"), cut at 160 characters with the whole text on hover.
    cells = [a for tag, a in page.tags if tag == "td" and a.get("class") == "long"]
    assert cells == [{"class": "long", "title": long_error}]
    assert long_error not in "".join(page.text)
    assert page.tables[1][0][1:] == list(df.columns)  # <wbr> after "_" adds no text
    assert "latency_<wbr>s" in raw


def test_save_html_rejects_what_it_cannot_render(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="not dict"):
        save_html({"model": "m"}, tmp_path / "x.html")
    with pytest.raises(TypeError, match="item 1 is a str"):
        save_html([Trace(), "trace"], tmp_path / "x.html")
    with pytest.raises(ValueError, match="not a compare DataFrame"):
        save_html(pd.DataFrame({"a": [1]}), tmp_path / "x.html")
    assert not (tmp_path / "x.html").exists()


# --- trace files ---------------------------------------------------------------------------


def odd_trace() -> Trace:
    it = Iteration(
        index=0,
        messages=[{"role": "user", "content": "caf\u00e9 \u2028 line\nbreak \U0001f600"}],
        raw_content="<think>a\r\nb</think>\u0000done",
        usage={"prompt_tokens": 2**70, "completion_tokens": -1},
        tool_calls=[ToolCallRecord(id="c", name="n\u00e9", arguments="{}", result="\u2029")],
        latency_s=1e-9,
    )
    return Trace(model="m\u00e9", settings={"nested": [{"a": [1, 2.5, None]}]}, iterations=[it])


def test_save_and_load_round_trip(frame: pd.DataFrame, tmp_path: Path) -> None:
    traces = [*frame.attrs["traces"].values(), odd_trace(), Trace()]
    path = tmp_path / "traces.jsonl"
    save_traces(traces, path)
    data = path.read_bytes()
    assert data.count(b"\n") == len(traces) and data.endswith(b"\n")
    back = load_traces(path)
    assert len(back) == len(traces)
    for got, want in zip(back, traces, strict=True):
        assert got.to_dict() == want.to_dict()
    # Blank lines and CRLF line ends are read past.
    lines = data.splitlines()
    path.write_bytes(b"\r\n".join([b"", lines[0], b"   ", lines[1], b""]) + b"\r\n")
    assert [t.to_dict() for t in load_traces(path)] == [t.to_dict() for t in traces[:2]]


def test_save_traces_refuses_what_would_not_load_back(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    with pytest.raises(ValueError, match="trace 1 cannot be saved"):
        save_traces([Trace(), Trace(settings={"t": float("nan")})], path)
    with pytest.raises(ValueError, match="trace 0 cannot be saved: .*lone surrogate"):
        save_traces([Trace(model="\ud800")], path)
    with pytest.raises(TypeError, match="trace 0 is a dict"):
        save_traces([{}], path)  # type: ignore[list-item]
    assert not path.exists()


def call_promptly(fn: Callable[[], Any], fifo: Path) -> Any:
    """fn() on a daemon thread; what it returned or raised, or a test failure after 5 s.

    A call that waits on the FIFO fails the test instead of hanging the suite: it is let go
    by opening the FIFO's two ends without waiting, and its thread cannot keep pytest alive.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["returned"] = fn()
        except BaseException as exc:  # handed to the test below
            box["raised"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(5.0)
    if thread.is_alive():
        for flags in (os.O_RDONLY, os.O_WRONLY):
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, flags | os.O_NONBLOCK))
        pytest.fail(f"still waiting on {fifo} after 5 s")
    if "raised" in box:
        raise box["raised"]
    return box.get("returned")


def test_load_traces_refuses_a_fifo_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "traces.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=re.escape(f"{fifo}: not a regular file")):
        call_promptly(lambda: load_traces(fifo), fifo)
    # What was opened is checked, not only the path before it: a path that became a FIFO
    # after check_path looked at it is refused all the same.
    with pytest.raises(ValueError, match=re.escape(f"{fifo}: not a regular file")):
        call_promptly(lambda: open_regular(fifo, write=False), fifo)
    link = tmp_path / "link.jsonl"
    link.symlink_to(fifo)  # followed, then refused by what was opened
    with pytest.raises(ValueError, match=re.escape(f"{link}: not a regular file")):
        call_promptly(lambda: load_traces(link), fifo)
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path}: is a directory")):
        load_traces(tmp_path)
    with pytest.raises(ValueError, match="no such file"):
        load_traces(tmp_path / "missing.jsonl")


@pytest.mark.parametrize("reader", [False, True], ids=["no-reader", "reader"])
def test_saving_to_a_fifo_writes_nothing(reader: bool, tmp_path: Path) -> None:
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    # With a reader on the other end, opening for writing would not wait: what was opened is
    # refused before anything is written.
    end = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK) if reader else -1
    try:
        for save in (save_traces, save_html):
            with pytest.raises(ValueError, match=re.escape(f"{fifo}: not a regular file")):
                call_promptly(lambda save=save: save([Trace(outcome="ok")], fifo), fifo)
            if reader:
                assert os.read(end, 100) == b""
    finally:
        if reader:
            os.close(end)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        pytest.param(".", "is a directory", id="directory"),
        pytest.param("missing/out.jsonl", "does not exist", id="missing-directory"),
    ],
)
def test_saving_where_no_file_can_be_refuses(name: str, message: str, tmp_path: Path) -> None:
    target = tmp_path / name
    for save in (save_traces, save_html):
        with pytest.raises(ValueError, match=message):
            save([Trace(outcome="ok")], target)
    assert [p.name for p in tmp_path.iterdir()] == []


def test_a_symlink_to_a_file_is_read_and_written_through(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    real.write_bytes(b"x" * 100_000)  # longer than what replaces it: the file is emptied first
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    traces = [odd_trace(), Trace(outcome="text_tool_calls")]
    save_traces(traces, link)
    assert link.is_symlink() and real.read_bytes().count(b"\n") == 2
    assert [t.to_dict() for t in load_traces(link)] == [t.to_dict() for t in traces]
    page = tmp_path / "page.html"
    page.symlink_to(real)
    save_html(traces, page)
    assert real.read_text(encoding="utf-8").endswith("</html>\n")


GOOD = Trace(model="m", outcome="ok").to_json().encode()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        pytest.param(b"not json at all", "invalid trace: not JSON", id="not-json"),
        pytest.param(b'{"model": "m"', "invalid trace: not JSON", id="truncated"),
        pytest.param(b"[1, 2]", "invalid trace: trace: Input should be an object", id="array"),
        pytest.param(
            b'{"iterations": [{"raw_content": 5}]}',
            "invalid trace: iterations[0].raw_content: ",
            id="wrong-type",
        ),
        pytest.param(b'{"model": "m", "api_key": "k"}', "invalid trace: api_key: ", id="unknown"),
        pytest.param(
            b'{"settings": {"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
            "invalid trace: nested too deeply",
            id="deep",
        ),
        pytest.param(b'{"elapsed_s": NaN}', "invalid trace: NaN is not JSON", id="nan"),
        pytest.param(b'{"settings": {"t": NaN}}', "invalid trace: NaN is not JSON", id="nan-any"),
        pytest.param(b'{"settings": {"t": -Infinity}}', "-Infinity is not JSON", id="inf"),
        pytest.param(b'{"settings": {"t": 1e400}}', "1e400 is out of range", id="1e400"),
        pytest.param(b'{"model": "\xff\xfe"}', "not UTF-8 (byte 12 of the line)", id="utf8"),
        pytest.param(b'{"model": "' + b"a" * (50 << 20) + b'"}', "longer than", id="50MB"),
    ],
)
def test_hostile_trace_files_name_the_line(line: bytes, message: str, tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_bytes(GOOD + b"\n\n" + line + b"\n" + GOOD + b"\n")
    with pytest.raises(ValueError) as info:
        load_traces(path)
    assert str(info.value).startswith("traces.jsonl line 3: "), str(info.value)[:200]
    assert message in str(info.value)
    assert len(str(info.value)) < 500


# --- OpenTelemetry -------------------------------------------------------------------------


def otlp_parse(out: dict[str, Any]) -> Any:
    """The OpenTelemetry protobuf parser's reading of OTLP/JSON (hex ids made base64 first:
    json_format reads bytes fields as base64, where OTLP/JSON writes them as hex)."""
    # The test extra installs them: a missing parser is a failure, not a skip.
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as pb

    msg = copy.deepcopy(out)
    for rs in msg["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return json_format.Parse(json.dumps(msg), pb.ExportTraceServiceRequest())


def value_of(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(v) for v in any_value.array_value.values]
    return getattr(any_value, kind)


def attrs_of(span: Any) -> dict[str, Any]:
    return {kv.key: value_of(kv.value) for kv in span.attributes}


def spans_of(out: dict[str, Any]) -> list[Any]:
    request = otlp_parse(out)
    (rs,) = request.resource_spans
    assert attrs_of(rs.resource) == {"service.name": "rig_nb"}
    (ss,) = rs.scope_spans
    assert ss.scope.name == "rig_nb"
    return list(ss.spans)


def assert_raw_form(out: dict[str, Any]) -> None:
    """The OTLP/JSON encoding itself: hex ids, times and ints as strings of digits."""
    for span in out["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        assert HEX32.fullmatch(span["traceId"]) and HEX16.fullmatch(span["spanId"])
        assert HEX16.fullmatch(span.get("parentSpanId", "0" * 16))
        assert span["startTimeUnixNano"].isdigit() and span["endTimeUnixNano"].isdigit()
        for attr in span["attributes"]:
            if "intValue" in attr["value"]:
                assert re.fullmatch(r"-?\d+", attr["value"]["intValue"])


def test_otel_spans_of_a_tool_run(demo: DemoServer) -> None:
    trace = run_trace(demo, "well-behaved")
    assert trace.outcome == "ok" and len(trace.iterations) == 3
    out = to_otel(trace, start_time_unix_nano=START_NS)
    assert_raw_form(out)
    spans = spans_of(out)
    root, *rest = spans
    assert root.name == "invoke_agent rig_nb" and not root.parent_span_id
    assert root.kind == 1 and root.start_time_unix_nano == START_NS
    assert {s.trace_id for s in spans} == {root.trace_id} and len(root.trace_id) == 16
    assert len({s.span_id for s in spans}) == len(spans)
    chats = [s for s in rest if s.parent_span_id == root.span_id]
    assert [s.name for s in chats] == ["chat well-behaved"] * 3
    host, port = trace.endpoint.rsplit(":", 1)
    for chat, it in zip(chats, trace.iterations, strict=True):
        a = attrs_of(chat)
        assert chat.kind == 3
        assert a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.provider.name"] == "openai"
        assert a["gen_ai.request.model"] == "well-behaved"
        assert a["gen_ai.usage.input_tokens"] == it.usage["prompt_tokens"]
        assert a["gen_ai.usage.output_tokens"] == it.usage["completion_tokens"]
        assert a["gen_ai.response.finish_reasons"] == [it.finish_reason]
        assert (a["server.address"], a["server.port"]) == (host, int(port))
        assert a["gen_ai.request.max_tokens"] == 512
        assert chat.end_time_unix_nano - chat.start_time_unix_nano == int(it.latency_s * 1e9)
        tools = [s for s in rest if s.parent_span_id == chat.span_id]
        assert [s.name for s in tools] == [f"execute_tool {c.name}" for c in it.tool_calls]
        for span, call in zip(tools, it.tool_calls, strict=True):
            t = attrs_of(span)
            assert span.kind == 1 and span.start_time_unix_nano >= chat.end_time_unix_nano
            assert t["gen_ai.operation.name"] == "execute_tool"
            assert (t["gen_ai.tool.name"], t["gen_ai.tool.call.id"]) == (call.name, call.id)
            assert "error.type" not in t and span.status.code == 0
    assert len(rest) == 3 + len(trace.tool_calls)
    a = attrs_of(root)
    assert a["gen_ai.operation.name"] == "invoke_agent" and a["gen_ai.agent.name"] == "rig_nb"
    assert a["gen_ai.usage.input_tokens"] == trace.usage().prompt_tokens
    assert root.end_time_unix_nano >= max(s.end_time_unix_nano for s in rest)
    for span in spans:
        assert not CONTENT_KEYS & set(attrs_of(span))
    assert SECRET not in json.dumps(out)


def test_otel_content_only_when_asked(demo: DemoServer) -> None:
    trace = run_trace(demo, "html-injector")
    out = to_otel(trace, include_content=True, start_time_unix_nano=START_NS)
    spans = spans_of(out)
    assert SECRET not in json.dumps(out)
    chats = [s for s in spans if s.name.startswith("chat ")]
    first = attrs_of(chats[0])
    inputs = json.loads(first["gen_ai.input.messages"])
    assert [m["role"] for m in inputs] == ["system", "user"]
    assert inputs[1]["parts"] == [{"type": "text", "content": DEMO_PROMPT}]
    outputs = json.loads(first["gen_ai.output.messages"])
    assert outputs[0]["role"] == "assistant" and outputs[0]["finish_reason"] == "tool_call"
    parts = outputs[0]["parts"]
    assert parts[0] == {"type": "reasoning", "content": trace.iterations[0].reasoning_content}
    calls = [p for p in parts if p["type"] == "tool_call"]
    assert calls[0]["arguments"] == json.loads(trace.tool_calls[0].arguments)
    second = json.loads(attrs_of(chats[1])["gen_ai.input.messages"])
    assert second[-1]["parts"][0]["type"] == "tool_call_response"
    tools = [s for s in spans if s.name.startswith("execute_tool ")]
    t = attrs_of(tools[0])
    assert t["gen_ai.tool.call.arguments"] == trace.tool_calls[0].arguments
    # The demo's injected arguments make the tool fail: an error, and no result attribute.
    assert trace.tool_calls[0].is_error and "gen_ai.tool.call.result" not in t
    assert (t["error.type"], tools[0].status.code) == ("ValueError", 2)
    assert tools[0].status.message == trace.tool_calls[0].result
    without = spans_of(to_otel(trace, start_time_unix_nano=START_NS))
    assert [s.name for s in without] == [s.name for s in spans]
    for span in without:
        assert not CONTENT_KEYS & set(attrs_of(span))
        assert trace.tool_calls[0].result not in span.status.message


def test_otel_errors(demo: DemoServer) -> None:
    budget = run_trace(demo, "budget-think")
    spans = spans_of(to_otel(budget))
    root, chat = spans
    assert root.status.code == chat.status.code == 2
    assert attrs_of(root)["error.type"] == attrs_of(chat)["error.type"] == "OutputLimitError"
    assert attrs_of(chat)["gen_ai.response.finish_reasons"] == ["length"]
    assert chat.status.message.startswith("OutputLimitError: ")
    spinner = run_trace(demo, "tool-spinner")
    failed = [s for s in spans_of(to_otel(spinner)) if s.status.code == 2]
    tool = [s for s in failed if s.name.startswith("execute_tool")]
    assert tool and attrs_of(tool[0])["error.type"] == "_OTHER"
    reply = Response({"error": {"message": "model crashed", "type": "server_error"}}, status=500)
    with ScriptedServer([reply]) as server, Client(server.base_url, max_retries=0) as client:
        try:
            client.run(RunRequest("m", 64, prompt="hi"))
        except RigError as exc:
            assert exc.trace is not None
            trace = exc.trace
    root, chat = spans_of(to_otel(trace))
    a = attrs_of(chat)
    assert a["error.type"] == "BackendError" and "gen_ai.response.finish_reasons" not in a
    assert "model crashed" in chat.status.message and root.status.code == 2


@pytest.mark.parametrize(
    ("outcome", "code", "message"),
    [
        pytest.param("ok", 1, "", id="ok"),
        pytest.param("text_tool_calls", 2, "text_tool_calls", id="text-tool-calls"),
        pytest.param("reasoning_only", 2, "reasoning_only", id="reasoning-only"),
        pytest.param("BackendError", 2, "BackendError", id="error"),
        pytest.param("", 0, "", id="unfinished"),
    ],
)
def test_otel_run_status_is_the_outcome(outcome: str, code: int, message: str) -> None:
    ending = {"ok": "answer", "BackendError": "error"}.get(outcome, outcome)
    error = "BackendError: HTTP 500: model crashed" if outcome == "BackendError" else ""
    it = Iteration(ending=ending, finish_reason="stop", error=error)
    root, chat = spans_of(to_otel(Trace(model="m", outcome=outcome, iterations=[it])))
    assert (root.status.code, root.status.message) == (code, message)
    a = attrs_of(root)
    assert a.get("error.type") == (outcome if code == 2 else None)
    assert a.get("rig_nb.outcome") == (outcome or None)
    # An iteration's span fails only where the iteration holds an error (its text is the
    # message there); a turn that ended without an answer is not an error of its request.
    assert (chat.status.code, chat.status.message) == ((2, error) if error else (0, ""))


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        pytest.param("gpu.lan:8000", {"server.address": "gpu.lan", "server.port": 8000}, id="host"),
        pytest.param("[::1]:8080", {"server.address": "::1", "server.port": 8080}, id="ipv6"),
        pytest.param("gpu.lan", {"server.address": "gpu.lan"}, id="no-port"),
        pytest.param("gpu:99999", {"server.address": "gpu:99999"}, id="bad-port"),
        pytest.param("", {}, id="none"),
    ],
)
def test_otel_server_address(endpoint: str, expected: dict[str, Any]) -> None:
    trace = Trace(model="m", endpoint=endpoint, iterations=[Iteration()], outcome="ok")
    for span in spans_of(to_otel(trace)):
        got = {k: v for k, v in attrs_of(span).items() if k.startswith("server.")}
        assert got == expected


def test_otel_survives_any_numbers() -> None:
    it = Iteration(
        usage={"prompt_tokens": 2**63, "completion_tokens": 10**30, "reasoning_tokens": -5},
        latency_s=float("nan"),
        tool_calls=[
            ToolCallRecord(id="c1", name="t", duration_s=float("inf")),
            ToolCallRecord(id="c2", name="t", duration_s=1e300),
        ],
        finish_reason="stop",
    )
    trace = Trace(model="", settings={"max_tokens": True, "temperature": 1e308}, iterations=[it])
    trace.elapsed_s = -1.0
    out = to_otel(trace, start_time_unix_nano=2**63 - 1)
    assert_raw_form(out)
    root, chat, unknown, huge = spans_of(out)
    assert chat.name == "chat"
    a = attrs_of(chat)
    assert not {k for k in a if k.startswith("gen_ai.usage.")}
    assert "gen_ai.request.max_tokens" not in a and a["gen_ai.request.temperature"] == 1e308
    assert chat.start_time_unix_nano == chat.end_time_unix_nano == 2**63 - 1
    assert unknown.end_time_unix_nano == unknown.start_time_unix_nano  # no duration known
    assert huge.end_time_unix_nano - huge.start_time_unix_nano == 10**15  # held to 11.6 days
    assert root.end_time_unix_nano == huge.end_time_unix_nano
    with pytest.raises(ValueError, match="start_time_unix_nano"):
        to_otel(trace, start_time_unix_nano=-1)
    with pytest.raises(TypeError, match="takes a Trace"):
        to_otel({"model": "m"})  # type: ignore[arg-type]
