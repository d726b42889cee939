"""`python -m rig_nb demo` at 80, 100 and 200 columns: persona and outcome whole, no cell cut
to a stub, what is left out named under the table, every line within the width.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_helpers import cli
from shared import PERSONAS

from rig_nb import RunRequest
from rig_nb.cli.text import DEMO_COLUMNS, DEMO_LEGEND, format_trace
from rig_nb.loop import run_trace
from rig_nb.testing import ScriptedBackend, chat_reply, tool_call

WIDE = 10_000
SHORT_HEADERS = {"iter": "iterations", "calls": "tool calls", "tokens": "tokens in/out"}
SHORT_PROBE = {"tool call": "yes", "NoToolCallingError": "no", "OutputLimitError": "limit"}
README = Path(__file__).resolve().parents[2] / "README.md"
_runs: dict[int, str] = {}


def demo_at(capsys: pytest.CaptureFixture[str], columns: int) -> str:
    """The demo's output on a terminal `columns` wide (run once per width for this module)."""
    if columns not in _runs:
        ran = cli(capsys, "demo", columns=columns)
        assert ran.returncode == 0, ran.stderr
        assert ran.stderr == ""
        _runs[columns] = ran.stdout
    return _runs[columns]


def parse(out: str) -> tuple[list[str], list[dict[str, str]], list[str]]:
    """(the columns shown, by full name; the rows; the lines after the table, up to the trace)."""
    lines = out.split("Per-iteration trace")[0].splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("persona "))
    header = lines[start]
    spans = [(m.start(), m.group()) for m in re.finditer(r"\S+(?: \S+)*", header)]
    names = [SHORT_HEADERS.get(name, name) for _, name in spans]
    starts = [at for at, _ in spans] + [None]
    end = start + 1 + len(PERSONAS)
    rows = [
        {
            name: line[starts[i] : starts[i + 1]].strip()
            for i, name in enumerate(names)  # the last column runs to the end of the line
        }
        for line in lines[start + 1 : end]
    ]
    return names, rows, lines[end:]


@pytest.mark.parametrize("columns", [80, 100, 200])
def test_the_demo_fits_and_stays_readable(capsys: pytest.CaptureFixture[str], columns: int) -> None:
    out = demo_at(capsys, columns)
    assert max(map(len, out.splitlines())) <= columns  # the trace after the table too
    names, rows, after = parse(out)
    full_names, full_rows, _ = parse(demo_at(capsys, WIDE))
    assert full_names == DEMO_COLUMNS
    assert names == [c for c in DEMO_COLUMNS if c in names]  # in order, none made up
    assert {"persona", "probe", "outcome", "ending"} <= set(names)
    short_probe = rows[0]["probe"] in ("yes", "no", "limit", "error")
    for row, whole in zip(rows, full_rows, strict=True):
        assert row["persona"] == whole["persona"]
        assert row["outcome"] == whole["outcome"], row["persona"]
        for name in names:
            cell, want = row[name], whole[name]
            if name == "latency":  # measured in each run
                assert re.fullmatch(r"\d+ ms", cell), cell
            elif name == "probe" and short_probe:
                assert cell == SHORT_PROBE.get(want, "error"), row["persona"]
            elif cell != want:
                # Cut: never to a stub, always a start of the whole cell.
                assert cell.endswith("...") and len(cell) >= 8, (name, cell)
                assert want.startswith(cell[:-3]), (name, cell, want)
    left_out = [c for c in DEMO_COLUMNS if c not in names]
    text = " ".join(after)
    if left_out:
        said = re.search(rf"left out to fit {columns} columns: (.*?) \(a wider terminal", text)
        assert said is not None, text
        assert said.group(1).split(", ") == left_out
    else:
        assert "left out" not in text
    for name in ("shapes", "leaks", "ending"):
        assert (f"{name}: " in text) == (name in names), name
    assert ("probe: yes (a tool call came back)" in text) == short_probe
    assert text.rstrip().endswith("outcome is ok only for a real answer.")


def test_the_narrowest_keeps_the_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    names, rows, _ = parse(demo_at(capsys, 80))
    assert names[:4] == ["persona", "probe", "outcome", "ending"]
    hermes = next(r for r in rows if r["persona"] == "hermes-text-tools")
    assert (hermes["probe"], hermes["outcome"], hermes["ending"]) == (
        "no",
        "text_tool_calls",
        "text_tool_calls",
    )
    assert "shapes" in parse(demo_at(capsys, 100))[0]


def test_two_hundred_columns_show_every_column_and_the_readme_excerpt(
    capsys: pytest.CaptureFixture[str],
) -> None:
    names, rows, _ = parse(demo_at(capsys, 200))
    _, full_rows, _ = parse(demo_at(capsys, WIDE))
    assert names == DEMO_COLUMNS
    for row, whole in zip(rows, full_rows, strict=True):
        assert {k: v for k, v in row.items() if k not in ("answer", "latency")} == {
            k: v for k, v in whole.items() if k not in ("answer", "latency")
        }
    block = README.read_text().split("## What the demo prints")[1].split("```")[1]
    excerpt = [re.split(r"\s{2,}", line) for line in block.strip().splitlines()]
    header, by_persona = excerpt[0], {r["persona"]: r for r in rows}
    assert len(excerpt) > 3
    for cells in excerpt[1:]:
        assert dict(zip(header, cells, strict=True)) == {h: by_persona[cells[0]][h] for h in header}


def test_a_pipe_gets_the_whole_table_and_one_legend_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = demo_at(capsys, WIDE)
    names, rows, after = parse(out)
    assert names == DEMO_COLUMNS and len(rows) == len(PERSONAS)
    assert after[0] == DEMO_LEGEND
    assert "left out" not in out


def test_a_hostile_trace_wraps_to_the_width_and_keeps_every_character() -> None:
    content = "\x1b[2J<think>" + "x" * 900 + "</think>\n\n  indented " + "word " * 300 + "\t\ttabs"
    backend = ScriptedBackend(
        [
            chat_reply(tool_calls=[tool_call("f", {"a": "y" * 500})]),
            chat_reply(content),
        ]
    )
    trace = run_trace(backend, RunRequest("m", 64, prompt="go"))
    whole = format_trace(trace, limit=5000)
    for width in (40, 80, 100):
        wrapped = format_trace(trace, limit=5000, width=width)
        assert max(map(len, wrapped.splitlines())) <= width
        assert wrapped != whole and "\t" not in wrapped
        assert "".join(wrapped.split()) == "".join(whole.split())  # only whitespace moved
        assert "\\x1b[2J" in wrapped and "\x1b" not in wrapped
    assert format_trace(trace, limit=5000, width=None) == whole
