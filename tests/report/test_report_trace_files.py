"""rig_nb.report: JSON Lines trace files, saved and loaded, and hostile ones refused."""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rig_nb import Iteration, ToolCallRecord, Trace
from rig_nb.report import load_traces, save_html, save_traces
from rig_nb.report.files import open_regular


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
