"""Trace files: JSON Lines, one `Trace.to_json()` a line, written and read back exactly.

A trace file is input too: `load_traces` refuses what is not a trace with a ValueError
naming the file and the line, and reads a line only up to a size limit.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from .. import strict_json
from ..trace import Trace
from .files import open_regular, write_file

__all__ = ["MAX_LINE_BYTES", "load_traces", "save_traces"]

# A trace line longer than this is refused unread (a realistic trace is well under 1 MB).
MAX_LINE_BYTES = 32 << 20


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
    write_file(path, b"".join(line + b"\n" for line in lines))


def _parse_line(text: str) -> Trace:
    # Trace.from_json checks the fields; this pass refuses what JSON itself does not allow
    # anywhere in the line (NaN, Infinity, 1e400), including inside settings and messages.
    try:
        strict_json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid trace: not JSON: {exc.msg} at column {exc.colno}") from None
    except ValueError as exc:
        raise ValueError(f"invalid trace: {exc}") from None
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
    with open_regular(path, write=False) as f:
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
