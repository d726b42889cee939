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
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from ..usage import Usage

if TYPE_CHECKING:
    from ..trace import Trace

__all__ = [
    "COMPARE_COLUMNS",
    "DEMO_COLUMNS",
    "DEMO_LEGEND",
    "SHORT_HEADERS",
    "SHORT_MEANING",
    "Progress",
    "compare_table_rows",
    "demo_table_rows",
    "demo_table_text",
    "fit_report",
    "fit_widths",
    "format_table",
    "format_trace",
    "invoked_as",
    "line_width",
    "natural_widths",
    "one_line",
    "plural",
    "printable",
    "terminal_width",
    "wrap",
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
# What the columns mean, by column; the legend says it for the columns shown.
_DEMO_MEANING = {
    "shapes": "shapes: where reasoning showed (closed, unopened or unclosed <think> tags in the "
    "content; field: a separate reasoning field)",
    "leaks": "leaks: other dialects found in the content",
    "ending": "ending: how the last turn ended (answer, tool_calls, length, reasoning_only, "
    "text_tool_calls, empty, error)",
}
_DEMO_LAST = "outcome is ok only for a real answer."
DEMO_LEGEND = "; ".join([*_DEMO_MEANING.values(), _DEMO_LAST])
# Too narrow for the whole table: columns are kept most telling first (persona and outcome
# always, whole), the rest left out from the end of this list. A kept column is cut with
# an ellipsis no narrower than its floor here (the others are never cut).
_DEMO_KEPT_FIRST = [
    "persona",
    "outcome",
    "probe",
    "ending",
    "shapes",
    "leaks",
    "tool calls",
    "iterations",
    "answer",
    "tokens in/out",
    "latency",
]
_DEMO_FLOOR = {"ending": 15, "shapes": 8, "leaks": 13, "answer": 20}
# Short headers of the row columns, and what they stand for.
SHORT_HEADERS = {"iterations": "iter", "tool calls": "calls", "tokens in/out": "tokens"}
_SHORT_PROBE = {"tool call": "yes", "NoToolCallingError": "no", "OutputLimitError": "limit"}
_PROBE_MEANING = (
    "probe: yes (a tool call came back), no (NoToolCallingError), limit (OutputLimitError), "
    "error (no reply)"
)
SHORT_MEANING = {
    "iterations": "iter: iterations",
    "tool calls": "calls: tool calls",
    "tokens in/out": "tokens: in/out",
}
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
_PLURALS = {
    "persona": "personas",
    "iteration": "iterations",
    "tool call": "tool calls",
    "copy": "copies",
}
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


def fit_widths(
    widths: Sequence[int],
    limit: int,
    first: Sequence[int] = (),
    floors: Sequence[int | None] = (),
) -> list[int]:
    """Column widths that fit `limit` characters with two spaces between columns.

    The columns in `first` are narrowed first, then the widest, a character at a time;
    none goes below its floor (`floors[i]`, else _MIN_CELL; never below its own width),
    so a very narrow terminal still gets lines longer than `limit`.
    """
    out = list(widths)
    given = [*floors, *[None] * (len(out) - len(floors))]
    floor = [min(w, _MIN_CELL if f is None else f) for w, f in zip(out, given, strict=True)]
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


def _cells(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str], headers: Mapping[str, str] | None
) -> list[list[str]]:
    """The header line and each row as printable one-line cells."""
    heads = headers or {}
    cells = [[printable(heads.get(c, c)) for c in columns]]
    cells += [[printable(one_line(str(r.get(c, "")), 200)) for c in columns] for r in rows]
    return cells


def natural_widths(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str], headers: Mapping[str, str] | None
) -> list[int]:
    """Each column's width with every cell whole (headed with `headers` where given)."""
    cells = _cells(rows, columns, headers)
    return [max(len(row[i]) for row in cells) for i in range(len(columns))]


def line_width(widths: Sequence[int]) -> int:
    """A table line's length with these column widths and the separators between them."""
    return sum(widths) + len(_SEPARATOR) * (len(widths) - 1)


def format_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str],
    *,
    width: int | None = None,
    cut_first: Sequence[str] = (),
    headers: Mapping[str, str] | None = None,
    floors: Mapping[str, int] | None = None,
) -> str:
    """Rows as a plain, left-aligned text table with a header line.

    With `width`, cells are cut with an ellipsis until each line fits it (see fit_widths):
    the columns named in `cut_first` go first, none below its `floors` width; a column
    named in `headers` is headed with that text instead of its name.
    """
    cells = _cells(rows, columns, headers)
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]  # as _natural
    if width is not None:
        first = [columns.index(c) for c in cut_first if c in columns]
        widths = fit_widths(widths, width, first, [(floors or {}).get(c) for c in columns])
    lines = [
        _SEPARATOR.join(_fit(v, w).ljust(w) for v, w in zip(row, widths, strict=True))
        for row in cells
    ]
    return "\n".join(line.rstrip() for line in lines)


def demo_table_text(table: Sequence[Mapping[str, str]], width: int | None) -> str:
    """The demo table fitted to `width` columns, then what it leaves out and the legend.

    Whole when it fits (or `width` is None: a pipe); else with short headers and the
    answer cut; else persona and outcome whole, the probe as yes/no, and the other
    columns kept while they fit (_DEMO_KEPT_FIRST), a line under the table naming
    those left out. Every line but a table row wider than `width` is wrapped to it.
    """
    columns = DEMO_COLUMNS
    natural = natural_widths(table, columns, None)
    if width is None or line_width(natural) <= width:
        return "\n".join([format_table(table, columns), _wrap(DEMO_LEGEND, width)])
    short = natural_widths(table, columns, SHORT_HEADERS)
    answer = columns.index("answer")
    if line_width(short) - short[answer] + min(short[answer], _DEMO_FLOOR["answer"]) <= width:
        text = format_table(
            table, columns, width=width, cut_first=["answer"], headers=SHORT_HEADERS
        )
        meaning = [*_DEMO_MEANING.values(), *_shorts(columns), _DEMO_LAST]
        return "\n".join([text, _wrap("; ".join(meaning), width)])
    rows = [{**r, "probe": _SHORT_PROBE.get(r["probe"], "error")} for r in table]
    need = dict(zip(columns, natural_widths(rows, columns, SHORT_HEADERS), strict=True))
    floor = {c: min(w, _DEMO_FLOOR.get(c, w)) for c, w in need.items()}
    kept: list[str] = []
    for column in _DEMO_KEPT_FIRST:
        narrowest = line_width([*(floor[k] for k in kept), floor[column]])
        if column in ("persona", "outcome") or narrowest <= width:
            kept.append(column)
    shown = [c for c in columns if c in kept]
    cut = [c for c in reversed(_DEMO_KEPT_FIRST) if c in _DEMO_FLOOR and c in shown]
    text = format_table(
        rows, shown, width=width, cut_first=cut, headers=SHORT_HEADERS, floors=_DEMO_FLOOR
    )
    left_out = [c for c in columns if c not in kept]
    note = (
        f"left out to fit {width} columns: {', '.join(left_out)} "
        "(a wider terminal, or a pipe, shows every column)"
    )
    meaning = [_DEMO_MEANING[c] for c in _DEMO_MEANING if c in shown]
    meaning += [_PROBE_MEANING] if "probe" in shown else []
    meaning += [*_shorts(shown), _DEMO_LAST]
    return "\n".join([text, _wrap(note, width), _wrap("; ".join(meaning), width)])


def _shorts(columns: Sequence[str]) -> list[str]:
    return [SHORT_MEANING[c] for c in SHORT_MEANING if c in columns]


def _wrap(text: str, width: int | None) -> str:
    return textwrap.fill(text, width) if width else text


def _block(label: str, text: str, limit: int) -> list[str]:
    if not text:
        return [f"    {label}: (empty)"]
    body = _clip(text, limit).splitlines() or [""]
    pad = " " * (len(label) + 6)
    return [f"    {label}: {body[0]}", *((pad + line).rstrip() for line in body[1:])]


def _unchanged(text: str) -> str:
    return text


def format_trace(
    trace: Trace,
    *,
    limit: int = 2000,
    redact: Callable[[str], str] = _unchanged,
    width: int | None = None,
) -> str:
    """A trace as text: a summary line, then each iteration's raw and stripped text and calls.

    Each text the endpoint sent goes through `redact` (the client's Redactor), then is cut
    at `limit` characters (the JSON form keeps everything). With `width`, a longer line is
    wrapped, its continuation indented under its text.
    """
    lines = [
        f"{trace.model} at {trace.endpoint}: outcome {trace.outcome or '-'}, "
        f"ending {trace.ending or '-'}, {plural(len(trace.iterations), 'iteration')}, "
        f"{plural(len(trace.tool_calls), 'tool call')}, {trace.elapsed_s:.3f} s"
    ]
    for it, reuse in zip(trace.iterations, trace.prefix_reuse, strict=True):
        counts = Usage.of(it.usage)
        usage = f"{counts.prompt_tokens}/{counts.completion_tokens}"
        leaks = f"  leaks={','.join(it.leaks)}" if it.leaks else ""
        cached = f"  reused={reuse:.0%}" if reuse is not None else ""
        if it.prefix_break:
            cached += f"  break={redact(it.prefix_break)}"
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
    text = printable("\n".join(lines))
    return text if width is None else "\n".join(_hang(line, width) for line in text.split("\n"))


# A trace line's own start: its indent and, on a text block's first line, the label.
_LINE_START = re.compile(r" *(?:(?:raw|stripped|error|reasoning field \([^)]*\)): )?")
# A doctor line's own start: an indented check name and its padding, or evidence/fix.
_REPORT_START = re.compile(r"(?: +(?:(?:evidence|fix): |[A-Za-z0-9_:.-]+ +(?=\S))?)?")


def _hang(line: str, width: int, start: re.Pattern[str] = _LINE_START) -> str:
    """`line` wrapped to `width`, continued under where its text starts (at most half-way):
    after the indent and what `start` matches there."""
    line = line.expandtabs()  # a terminal's tab stops: measured as the spaces they show
    if len(line) <= width:
        return line
    own = len(line) - len(line.lstrip(" "))
    match = start.match(line)
    label_end = match.end() if match else own
    # A labelled line hangs under its text; a block's later line (indented past the
    # call and error lines) under itself; a summary, round or call line 4 further in.
    indent = label_end if label_end > own else own if own > 4 else own + 4
    indent = min(indent, width // 2)
    return textwrap.fill(
        line,
        width,
        subsequent_indent=" " * indent,
        break_on_hyphens=False,
        expand_tabs=False,
        replace_whitespace=False,
    )


def fit_report(text: str, width: int | None) -> str:
    """`describe_report`'s text with each line wider than `width` wrapped, continued under
    its verdict, evidence or fix (None: unchanged, for a pipe)."""
    if width is None:
        return text
    return "\n".join(_hang(line, width, _REPORT_START) for line in text.split("\n"))


def wrap(text: str, width: int | None) -> str:
    """`text` wrapped to `width` columns (None: one line, for a pipe)."""
    return _wrap(text, width)


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
