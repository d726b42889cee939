"""Escaped HTML fragments and text previews shared by the widgets.

Every string that came from an endpoint passes through `esc` (html.escape)
before it reaches a `widgets.HTML` value or any HTML this module returns.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from ..content import strip_reasoning
from ..trace import Iteration, Trace

__all__ = [
    "PREVIEW_CHARS",
    "esc",
    "marked_reasoning_html",
    "pre",
    "preview",
    "reasoning_segments",
    "table_html",
    "trace_html",
]

PREVIEW_CHARS = 120
_OPEN, _CLOSE = "<think>", "</think>"
_REASONING_STYLE = "background:#eee;color:#777;text-decoration:line-through"
_PRE_STYLE = (
    "white-space:pre-wrap;word-break:break-word;max-height:24em;overflow:auto;"
    "margin:0;padding:4px;border:1px solid #ddd;font-size:12px;line-height:1.35"
)


def esc(value: object) -> str:
    """html.escape of str(value), quotes included."""
    return escape(str(value), quote=True)


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """One line of at most `limit` characters; only the head of a long text is read."""
    head = text[: limit + 1]
    line = " ".join(head.split())
    if len(text) > limit or len(line) > limit:
        return line[: limit - 3].rstrip() + "..."
    return line


def pre(text: str, style: str = _PRE_STYLE) -> str:
    """`text` escaped in a scrolling <pre>; an empty text says so."""
    if not text:
        return f'<pre style="{style};color:#999">(empty)</pre>'
    return f'<pre style="{style}">{esc(text)}</pre>'


def reasoning_segments(s: str) -> list[tuple[str, bool]]:
    """Split `s` into (piece, is_reasoning) following strip_reasoning's rules, in linear time.

    Closed `<think>...</think>` blocks, then everything through the last bare
    `</think>`, then everything from an unclosed `<think>`. If the kept pieces
    do not reproduce `strip_reasoning(s)` exactly, the whole text comes back as
    one unmarked piece: the library's function is the truth, not this sketch.
    """
    cuts: list[tuple[int, int, bool]] = []
    pos = 0
    while True:
        i = s.find(_OPEN, pos)
        j = s.find(_CLOSE, i + len(_OPEN)) if i >= 0 else -1
        if j < 0:
            break
        cuts += [(pos, i, False), (i, j + len(_CLOSE), True)]
        pos = j + len(_CLOSE)
    cuts.append((pos, len(s), False))
    # Bare closing tag among what is kept: reasoning through its last occurrence.
    for n in range(len(cuts) - 1, -1, -1):
        start, end, reasoning = cuts[n]
        k = -1 if reasoning else s.rfind(_CLOSE, start, end)
        if k >= 0:
            cut = k + len(_CLOSE)
            head = [(a, b, True) for a, b, _ in cuts[:n]] + [(start, cut, True)]
            cuts = head + [(cut, end, False)] + cuts[n + 1 :]
            break
    # Unclosed opening tag among what is kept: reasoning from it to the end.
    for n, (start, end, reasoning) in enumerate(cuts):
        k = -1 if reasoning else s.find(_OPEN, start, end)
        if k >= 0:
            tail = [(a, b, True) for a, b, _ in cuts[n + 1 :]]
            cuts = cuts[:n] + [(start, k, False), (k, end, True)] + tail
            break
    pieces: list[tuple[str, bool]] = []
    for start, end, reasoning in cuts:
        if end <= start:
            continue
        if pieces and pieces[-1][1] == reasoning:
            pieces[-1] = (pieces[-1][0] + s[start:end], reasoning)
        else:
            pieces.append((s[start:end], reasoning))
    kept = "".join(p for p, reasoning in pieces if not reasoning)
    if kept.strip() != strip_reasoning(s):
        return [(s, False)] if s else []
    return pieces


def marked_reasoning_html(raw: str) -> str:
    """`raw` in a <pre>, with the parts strip_reasoning removes struck through in grey."""
    body = "".join(
        f'<span style="{_REASONING_STYLE}" title="removed by strip_reasoning">{esc(p)}</span>'
        if reasoning
        else esc(p)
        for p, reasoning in reasoning_segments(raw)
    )
    return f'<pre style="{_PRE_STYLE}">{body}</pre>'


def table_html(header: list[str], rows: list[list[Any]], cell_styles: list[list[str]]) -> str:
    """A plain HTML table; every header and cell is escaped, styles are ours."""
    th = "".join(
        f'<th style="text-align:left;padding:2px 8px;border-bottom:1px solid #999">{esc(h)}</th>'
        for h in header
    )
    body = []
    for row, styles in zip(rows, cell_styles, strict=True):
        tds = "".join(
            f'<td style="padding:2px 8px;vertical-align:top;{style}">{esc(cell)}</td>'
            for cell, style in zip(row, styles, strict=True)
        )
        body.append(f"<tr>{tds}</tr>")
    return (
        '<table style="border-collapse:collapse;font-size:12px">'
        f"<thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def iteration_cells(it: Iteration) -> list[str]:
    """The table row of one iteration, each long field previewed."""
    tokens = f"{it.usage.get('prompt_tokens', 0)}/{it.usage.get('completion_tokens', 0)}"
    # An empty answer (a tool-call round) previews what was said instead, labelled.
    if it.text:
        shown = it.text
    elif it.raw_content.strip():
        shown = "[raw] " + it.raw_content[: PREVIEW_CHARS * 2]
    elif it.reasoning_content:
        shown = "[reasoning field] " + it.reasoning_content[: PREVIEW_CHARS * 2]
    else:
        shown = ""
    return [
        str(it.index),
        it.finish_reason,
        it.reasoning_shape,
        preview(shown),
        preview(", ".join(c.name for c in it.tool_calls), 40),
        tokens,
        f"{it.latency_s:.2f}",
        preview(it.error, 60),
    ]


ITERATION_HEADER = [
    "#",
    "finish",
    "shape",
    "text",
    "tool calls",
    "tokens in/out",
    "latency s",
    "error",
]


def trace_summary(trace: Trace) -> str:
    """One line: model, endpoint label, outcome, iterations, elapsed."""
    outcome = trace.outcome or "running"
    return (
        f"{trace.model or '?'} @ {trace.endpoint or '?'}: {outcome}, "
        f"{len(trace.iterations)} iterations, {len(trace.tool_calls)} tool calls, "
        f"{trace.elapsed_s:.2f} s"
    )


def trace_html(trace: Trace) -> str:
    """The static (non-widget) table of a trace, for `Trace._repr_html_`."""
    rows = [iteration_cells(it) for it in trace.iterations]
    styles = [[""] * len(ITERATION_HEADER) for _ in rows]
    return (
        f"<div><p>{esc(trace_summary(trace))}</p>{table_html(ITERATION_HEADER, rows, styles)}</div>"
    )


def messages_text(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages, indent=2, ensure_ascii=False)
