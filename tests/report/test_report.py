"""rig_nb.report: the static HTML report (and what importing the report costs)."""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from report_runs import INJECTOR, SECRET, run_trace

from rig_nb import Iteration, Trace
from rig_nb._html import esc
from rig_nb.demo import XSS_IMG, XSS_SCRIPT, DemoServer
from rig_nb.report import save_html


def test_importing_report_imports_no_pandas() -> None:
    code = (
        "import sys, rig_nb.report; print(sorted({'pandas', 'rig_nb.compare'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


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
