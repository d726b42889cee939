"""Keep and share runs outside the kernel: an HTML report, a trace file, OpenTelemetry spans.

    save_html(df, "report.html")        # a compare DataFrame, a Trace, or a list of Traces
    save_traces(traces, "traces.jsonl"); load_traces("traces.jsonl")
    to_otel(trace)                      # OTLP/JSON, GenAI semantic conventions (see _otel)

The HTML report (rendered by `_report_html`) is one file that needs no script and no
network to read, with every endpoint string escaped; the output is deterministic. A trace
file is JSON Lines, one `Trace.to_json()` a line, and it is input too: `load_traces`
rejects what does not fit with a ValueError naming the line. Library layer: pandas (and
`compare.summarize`) only when handed a DataFrame.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from ._otel import trace_to_otlp
from ._report_html import frame_page, trace_page, traces_page
from .trace import Trace

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MAX_LINE_BYTES", "check_path", "load_traces", "save_html", "save_traces", "to_otel"]

# A trace line longer than this is refused unread (a realistic trace is well under 1 MB).
MAX_LINE_BYTES = 32 << 20


def to_otel(
    trace: Trace, *, include_content: bool = False, start_time_unix_nano: int | None = None
) -> dict[str, Any]:
    """The trace as OTLP/JSON (`{"resourceSpans": [...]}`), GenAI semantic conventions.

    One `invoke_agent rig_nb` span, a `chat {model}` span per iteration under it, and an
    `execute_tool {name}` span per tool call under its iteration. Message content, tool
    arguments and results only with `include_content=True`. Spans are laid out from
    `start_time_unix_nano` (default: now) using the recorded durations.
    """
    return trace_to_otlp(
        trace, include_content=include_content, start_time_unix_nano=start_time_unix_nano
    )


# --- trace files ---------------------------------------------------------------------------


def check_path(path: str | os.PathLike[str], *, write: bool) -> Path:
    """`path` as a Path, or a ValueError saying why it cannot be read (or written) as a file.

    Only a regular file is read, and only a regular file (or a new one in an existing
    directory) is written: a FIFO, a device or a directory would block or fail half way.
    Checked without opening, so it can run before any request is made.
    """
    target = Path(path)
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        if not write:
            raise ValueError(f"{target}: no such file") from None
        parent = target.parent
        if not parent.is_dir():
            raise ValueError(f"{target}: directory {str(parent)!r} does not exist") from None
        return target
    except OSError as exc:
        raise ValueError(f"{target}: {exc.strerror or type(exc).__name__}") from None
    refused = _refusal(target, mode)
    if refused is not None:
        raise ValueError(refused)
    return target


def _refusal(target: Path, mode: int) -> str | None:
    """Why a file of this mode is not read or written, or None for a regular file."""
    if stat.S_ISDIR(mode):
        return f"{target}: is a directory, not a file"
    if not stat.S_ISREG(mode):
        return f"{target}: not a regular file (a pipe, socket or device)"
    return None


# Opening a FIFO waits for its other end unless O_NONBLOCK is given; the descriptor is checked
# before any read or write, so a path swapped for a FIFO after check_path cannot block either.
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _open_regular(path: str | os.PathLike[str], *, write: bool) -> BinaryIO:
    """`path` opened for reading (or for writing, emptied), or a ValueError naming it when it
    is not a regular file (or a new one in an existing directory)."""
    target = Path(path)
    # O_TRUNC empties only a regular file, the one kind not refused below.
    flags = (os.O_WRONLY | os.O_CREAT | os.O_TRUNC) if write else os.O_RDONLY
    try:
        fd = os.open(target, flags | _NONBLOCK, 0o666)
    except OSError as exc:
        fd, reason = -1, exc.strerror or type(exc).__name__
    if fd < 0:
        check_path(target, write=write)  # says why where it can (no such file, a FIFO, ...)
        raise ValueError(f"{target}: {reason}")
    try:
        refused = _refusal(target, os.fstat(fd).st_mode)
        if refused is not None:
            raise ValueError(refused)
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "wb" if write else "rb")


def _write(path: str | os.PathLike[str], data: bytes) -> None:
    with _open_regular(path, write=True) as f:
        f.write(data)


def save_traces(traces: Iterable[Trace], path: str | os.PathLike[str]) -> None:
    """Write the traces as JSON Lines (UTF-8, one `to_json()` a line); nothing is written
    unless every trace can be read back exactly."""
    lines = []
    for n, trace in enumerate(traces):
        if not isinstance(trace, Trace):
            raise TypeError(f"trace {n} is a {type(trace).__name__}, not a Trace")
        try:
            line = trace.to_json(ensure_ascii=False, allow_nan=False)
            lines.append(line.encode("utf-8"))
        except UnicodeEncodeError:  # a ValueError too: caught first
            raise ValueError(
                f"trace {n} cannot be saved: a string in it holds a lone surrogate, "
                "which UTF-8 cannot encode"
            ) from None
        except ValueError as exc:  # NaN or infinity: load_traces would refuse it
            raise ValueError(f"trace {n} cannot be saved as JSON: {exc}") from None
    _write(path, b"".join(line + b"\n" for line in lines))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range for a JSON number")
    return value


def _parse_line(text: str) -> Trace:
    # Trace.from_json checks the fields; this pass refuses what JSON itself does not allow
    # anywhere in the line (NaN, Infinity, 1e400), including inside settings and messages.
    try:
        json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid trace: not JSON: {exc.msg} at column {exc.colno}") from None
    except ValueError as exc:
        raise ValueError(f"invalid trace: {exc}") from None
    except RecursionError:
        raise ValueError("invalid trace: nested too deeply") from None
    return Trace.from_json(text)


def load_traces(
    path: str | os.PathLike[str], *, max_line_bytes: int = MAX_LINE_BYTES
) -> list[Trace]:
    """The traces of a JSON Lines file; blank lines are skipped.

    ValueError naming the file and line for anything that is not a trace: bad UTF-8, not
    JSON, NaN, a wrong type, an unknown key, deep nesting, or a line over `max_line_bytes`;
    naming the file when it is not a regular file (a FIFO is refused, never waited on).
    """
    if isinstance(max_line_bytes, bool) or not isinstance(max_line_bytes, int):
        raise TypeError("max_line_bytes must be an int")
    if max_line_bytes < 1:
        raise ValueError("max_line_bytes must be >= 1")
    name = Path(path).name
    traces = []
    with _open_regular(path, write=False) as f:
        number = 0
        while True:
            raw = f.readline(max_line_bytes + 1)
            if not raw:
                break
            number += 1
            if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
                raise ValueError(
                    f"{name} line {number}: longer than {max_line_bytes} bytes "
                    "(load_traces(..., max_line_bytes=...) reads longer lines)"
                )
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(
                    f"{name} line {number}: not UTF-8 (byte {exc.start + 1} of the line)"
                ) from None
            if number == 1:
                text = text.removeprefix("\ufeff")
            if not text.strip():
                continue
            try:
                traces.append(_parse_line(text))
            except ValueError as exc:
                raise ValueError(f"{name} line {number}: {exc}") from None
    return traces


# --- HTML ---------------------------------------------------------------------------------


def _is_frame(obj: object) -> bool:
    pandas = sys.modules.get("pandas")  # not imported yet: obj cannot be a DataFrame
    return pandas is not None and isinstance(obj, pandas.DataFrame)


def save_html(obj: Trace | Sequence[Trace] | pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write one self-contained HTML file for a Trace, a list of Traces, or a compare frame."""
    if isinstance(obj, Trace):
        page = trace_page(obj)
    elif _is_frame(obj):
        page = frame_page(obj)
    elif isinstance(obj, list | tuple):
        bad = [n for n, t in enumerate(obj) if not isinstance(t, Trace)]
        if bad:
            raise TypeError(f"item {bad[0]} is a {type(obj[bad[0]]).__name__}, not a Trace")
        page = traces_page(list(obj))
    else:
        raise TypeError(
            f"save_html takes a Trace, a list of Traces or a compare DataFrame, "
            f"not {type(obj).__name__}"
        )
    _write(path, page.encode("utf-8", "backslashreplace"))
