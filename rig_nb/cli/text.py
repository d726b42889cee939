"""Text the command line prints: tables fitted to the terminal, a trace iteration by iteration.

Plain string work on data the library returns (rows, traces, errors): nothing
here imports the client or pandas, so the command line stays quick to start.
Endpoint text goes to a terminal, so control characters (escape sequences a
reply could use to rewrite the screen) are shown as `\\xNN`.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from ..trace import Trace

__all__ = [
    "COMPARE_COLUMNS",
    "DEMO_COLUMNS",
    "DEMO_LEGEND",
    "Progress",
    "compare_table_rows",
    "demo_table_rows",
    "fit_widths",
    "format_table",
    "format_trace",
    "invoked_as",
    "one_line",
    "plural",
    "printable",
    "terminal_width",
]

DEMO_COLUMNS = [
    "persona",
    "probe",
    "outcome",
    "ending",
    "shapes",
    "leaks",
    "iterations",
    "tool calls",
    "tokens in/out",
    "latency",
    "answer",
]
DEMO_LEGEND = (
    "shapes: where reasoning showed (closed, unopened or unclosed <think> tags in the content; "
    "field: a separate reasoning field); leaks: other dialects found in the content; "
    "ending: how the last turn ended (answer, tool_calls, length, reasoning_only, "
    "text_tool_calls, empty, error); outcome is ok only for a real answer."
)
COMPARE_COLUMNS = [
    "endpoint",
    "model",
    "scenario",
    "repeat",
    "outcome",
    "ending",
    "shapes",
    "leaks",
    "iterations",
    "tool calls",
    "tokens in/out",
    "latency",
    "error",
]
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_PLURALS = {"persona": "personas", "iteration": "iterations", "tool call": "tool calls"}
# A column cut to fit the terminal keeps at least two characters and the ellipsis.
_MIN_CELL = 5
_ELLIPSIS = "..."
_SEPARATOR = "  "


def invoked_as(argv0: str) -> str:
    """How the user started the command line: "rig-nb" (the console script) or
    "python -m rig_nb"; help texts and hints name commands this way."""
    return "rig-nb" if os.path.basename(argv0) == "rig-nb" else "python -m rig_nb"


def terminal_width() -> int | None:
    """Columns to fit tables to: COLUMNS, else the terminal's width; None when the output
    is not a terminal (a pipe or a file keeps every cell whole)."""
    columns = shutil.get_terminal_size(fallback=(0, 0)).columns
    return columns if columns > 0 else None


def printable(text: str) -> str:
    """`text` with control characters (other than newline and tab) shown as `\\xNN`."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def plural(count: int, word: str) -> str:
    """ "1 iteration", "2 iterations", "0 tool calls"."""
    return f"{count} {word if count == 1 else _PLURALS.get(word, word + 's')}"


def one_line(text: str, limit: int) -> str:
    """`text` on one line (runs of whitespace as one space), cut to `limit` characters.

    Endpoint text is passed redacted: a key cut in two no longer matches the redactor.
    """
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _clip(text: str, limit: int) -> str:
    # Callers pass redacted text, as to one_line.
    if len(text) <= limit:
        return text
    return f"{text[:limit]} ... ({len(text) - limit} more characters)"


def _cell(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)


def _tokens(row: Mapping[str, Any]) -> str:
    prompt, completion = row.get("prompt_tokens"), row.get("completion_tokens")
    if prompt is None and completion is None:
        return "-"
    return f"{_cell(prompt)}/{_cell(completion)}"


def _latency(seconds: Any) -> str:
    return f"{seconds * 1000:.0f} ms" if isinstance(seconds, (int, float)) else "-"


def _answer(trace: Trace | None, outcome: str) -> str:
    if outcome != "ok" or trace is None or not trace.iterations:
        return "-"
    return one_line(trace.iterations[-1].text, 44) or "(empty)"


def _outcome(row: Mapping[str, Any], trace: Trace | None) -> str:
    # The trace's own outcome is the one truth; a row without a trace made no request.
    return trace.outcome if trace is not None and trace.outcome else str(row["outcome"])


def demo_table_rows(
    probes: Sequence[Mapping[str, Any]],
    runs: Sequence[Mapping[str, Any]],
    traces: Sequence[Trace | None],
) -> list[dict[str, str]]:
    """The demo table: per persona, its probe row's verdict beside its run row (compare's rows)."""
    table = []
    for probe, run, trace in zip(probes, runs, traces, strict=True):
        outcome = _outcome(run, trace)
        table.append(
            {
                "persona": str(run["model"]),
                "probe": "tool call" if probe["outcome"] == "ok" else str(probe["outcome"]),
                "outcome": outcome,
                "ending": _cell(run["ending"]),
                "shapes": run["reasoning_shapes"] or "none",
                "leaks": _cell(run["leaks"]),
                "iterations": _cell(run["iterations"]),
                "tool calls": _cell(run["tool_calls"]),
                "tokens in/out": _tokens(run),
                "latency": _latency(run["latency_s"]),
                "answer": _answer(trace, outcome),
            }
        )
    return table


def compare_table_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Compare rows as text cells: token counts paired, latency in ms, errors cut to one line."""
    return [
        {
            "endpoint": str(r["endpoint"]),
            "model": str(r["model"]),
            "scenario": str(r["scenario"]),
            "repeat": str(r["repeat"]),
            "outcome": str(r["outcome"]),
            "ending": _cell(r["ending"]),
            "shapes": _cell(r["reasoning_shapes"]),
            "leaks": _cell(r["leaks"]),
            "iterations": _cell(r["iterations"]),
            "tool calls": _cell(r["tool_calls"]),
            "tokens in/out": _tokens(r),
            "latency": _latency(r["latency_s"]),
            "error": one_line(str(r["error"]), 60) or "-",
        }
        for r in rows
    ]


def fit_widths(widths: Sequence[int], limit: int, first: Sequence[int] = ()) -> list[int]:
    """Column widths that fit `limit` characters with two spaces between columns.

    The columns in `first` are narrowed first, then the widest, a character at a time;
    none goes below _MIN_CELL (nor below its own width), so a very narrow terminal
    still gets lines longer than `limit`.
    """
    out = list(widths)
    floor = [min(w, _MIN_CELL) for w in out]
    excess = sum(out) + len(_SEPARATOR) * (len(out) - 1) - limit
    for i in first:
        cut = max(0, min(excess, out[i] - floor[i]))
        out[i] -= cut
        excess -= cut
    while excess > 0:
        i = max(range(len(out)), key=lambda j: (out[j] > floor[j], out[j]))
        if out[i] <= floor[i]:
            break
        out[i] -= 1
        excess -= 1
    return out


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - len(_ELLIPSIS)] + _ELLIPSIS


def format_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str],
    *,
    width: int | None = None,
    cut_first: Sequence[str] = (),
) -> str:
    """Rows as a plain, left-aligned text table with a header line.

    With `width`, cells are cut with an ellipsis until each line fits it (see fit_widths):
    the columns named in `cut_first` go first.
    """
    cells = [[printable(str(c)) for c in columns]]
    cells += [[printable(one_line(str(r.get(c, "")), 200)) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    if width is not None:
        first = [columns.index(c) for c in cut_first if c in columns]
        widths = fit_widths(widths, width, first)
    lines = [
        _SEPARATOR.join(_fit(v, w).ljust(w) for v, w in zip(row, widths, strict=True))
        for row in cells
    ]
    return "\n".join(line.rstrip() for line in lines)


def _block(label: str, text: str, limit: int) -> list[str]:
    if not text:
        return [f"    {label}: (empty)"]
    body = _clip(text, limit).splitlines() or [""]
    pad = " " * (len(label) + 6)
    return [f"    {label}: {body[0]}", *((pad + line).rstrip() for line in body[1:])]


def _unchanged(text: str) -> str:
    return text


def format_trace(
    trace: Trace, *, limit: int = 2000, redact: Callable[[str], str] = _unchanged
) -> str:
    """A trace as text: a summary line, then each iteration's raw and stripped text and calls.

    Each text the endpoint sent goes through `redact` (the client's Redactor), then is cut
    at `limit` characters (the JSON form keeps everything).
    """
    lines = [
        f"{trace.model} at {trace.endpoint}: outcome {trace.outcome or '-'}, "
        f"ending {trace.ending or '-'}, {plural(len(trace.iterations), 'iteration')}, "
        f"{plural(len(trace.tool_calls), 'tool call')}, {trace.elapsed_s:.3f} s"
    ]
    for it, reuse in zip(trace.iterations, trace.prefix_reuse, strict=True):
        usage = f"{it.usage.get('prompt_tokens', 0)}/{it.usage.get('completion_tokens', 0)}"
        leaks = f"  leaks={','.join(it.leaks)}" if it.leaks else ""
        cached = f"  reused={reuse:.0%}" if reuse is not None else ""
        cut = "  CONTEXT CUT" if it.context_cut else ""
        lines.append(
            f"  #{it.index}  finish={it.finish_reason or '-'}  ending={it.ending or '-'}  "
            f"shape={it.reasoning_shape}{leaks}  tokens in/out={usage}{cached}{cut}  "
            f"{it.latency_s * 1000:.1f} ms"
        )
        lines += _block("raw", redact(it.raw_content), limit)
        if it.reasoning_content:
            lines += _block(
                f"reasoning field ({it.reasoning_field or '?'})",
                redact(it.reasoning_content),
                limit,
            )
        lines += _block("stripped", redact(it.text), limit)
        for c in it.tool_calls:
            source = " (from text)" if c.source == "text" else ""
            arguments, result = _clip(redact(c.arguments), limit), _clip(redact(c.result), limit)
            lines.append(f"    call{source} {redact(c.name)} {arguments} -> {result}")
        if it.error:
            lines.append(f"    error: {redact(it.error)}")
    return printable("\n".join(lines))


class Progress:
    """`(done, total)` as one line on a terminal, rewritten in place with a carriage return."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        self.stream.write(f"\rcompare: {done}/{total} runs")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
