"""Inline SVG pictures: a run's timeline, and the marks the compare charts are drawn with.

Shared by `Trace._repr_html_`, TraceView and the HTML report (the library draws the
timeline; `rig_nb.report.charts` draws the compare charts with `bar`, `axis` and `svg`).
This module imports no renderer (`_html` imports it). Every text is escaped with `esc`;
numbers from a trace are made finite and non-negative before they are drawn, so a hostile
trace (negative, NaN or 5e-324 s durations, 2**63 tokens, a megabyte reply, a thousand
iterations)
draws a bounded picture. No script: each mark's numbers are in its `<title>`, which a
browser shows on hover. A picture is at most `WIDTH` px wide and shrinks with its
container (`max-width:100%`).
"""

from __future__ import annotations

import math
from html import escape
from typing import TYPE_CHECKING

from .usage import Usage

if TYPE_CHECKING:
    from .trace import Iteration, Trace

__all__ = [
    "COLORS",
    "MAX_ROWS",
    "WIDTH",
    "axis",
    "bar",
    "esc",
    "legend",
    "seconds",
    "segments",
    "svg",
    "ticks",
    "timeline_svg",
]

WIDTH = 760
MAX_ROWS = 64  # iterations drawn; a note says how many more there are
_ROW, _GAP, _LABEL, _TOP, _AXIS = 14, 4, 44, 22, 18
_MAX_S = 1e9  # a duration beyond this (31 years) is drawn as this
_TINY = 1e-9  # a scale below this (a nanosecond, a billionth of a token) has no ticks
_NAME_CHARS = 60
COLORS = {
    "wait": "#bdbdbd",
    "reasoning": "#9575cd",
    "answer": "#42a5f5",
    "reply": "#90a4ae",
    "tool": "#ffb74d",
    "tool error": "#e57373",
}
_NAMES = {
    "wait": "waiting for the first token",
    "reasoning": "reasoning",
    "answer": "answer",
    "reply": "reply (not streamed)",
    "tool": "tool call",
    "tool error": "tool call (error)",
}


def esc(value: object) -> str:
    """html.escape of str(value), quotes included (as `rig_nb._html.esc`)."""
    return escape(str(value), quote=True)


def _short(text: str, limit: int) -> str:
    """One line of at most `limit` characters; only the head of a long text is read."""
    line = " ".join(text[: limit + 1].split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def seconds(value: object) -> float:
    """A duration fit to draw: a finite float from 0 to 1e9 s (anything else is 0)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    x = float(value)
    return min(x, _MAX_S) if math.isfinite(x) and x > 0 else 0.0


def _n(x: float) -> str:
    return f"{x:.1f}"


def svg(width: int, height: int, body: str, label: str) -> str:
    """An inline SVG `width` x `height` that shrinks to its container; `label` is escaped."""
    return (
        f'<svg role="img" aria-label="{esc(label)}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'style="max-width:100%;height:auto;font:11px sans-serif;display:block">{body}</svg>'
    )


def bar(x: float, y: float, w: float, h: float, color: str, title: str) -> str:
    """A rectangle with its hover text (`title`, escaped); widths below 0.5 px are drawn 0.5."""
    return (
        f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(max(w, 0.5))}" height="{_n(h)}" '
        f'fill="{color}"><title>{esc(title)}</title></rect>'
    )


def ticks(top: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least `top` (1, 2 or 5 times a power of ten apart);
    [0, 1] for a top below _TINY (a step of 5e-324 / 5 is 0) or one that is not finite."""
    if not top >= _TINY or not math.isfinite(top):
        return [0.0, 1.0]
    raw = top / count
    # Floats throughout: an int power of ten past float range cannot divide a float.
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1.0, 2.0, 5.0, 10.0) if m * power >= raw)
    n = max(1, math.ceil(top / step - 1e-9))
    marks = [i * step for i in range(n + 1)]
    if not math.isfinite(marks[-1]):  # a round top past the float range (near 1.8e308)
        return [top * (i / count) for i in range(count + 1)]
    return marks


def _tick_text(value: float, unit: str) -> str:
    text = f"{value:.3g}" if value < 1e4 else f"{value:.2e}"
    return f"{text}{unit}"


def axis(x0: float, width: float, y: float, marks: list[float], unit: str) -> str:
    """A horizontal axis at `y` from x0 over `width` px, labelled at `marks` (0 to marks[-1])."""
    top = marks[-1] or 1.0
    parts = [f'<line x1="{_n(x0)}" y1="{_n(y)}" x2="{_n(x0 + width)}" y2="{_n(y)}" stroke="#999"/>']
    for m in marks:
        x = x0 + width * m / top
        anchor = "end" if m == marks[-1] and len(marks) > 1 else "middle" if m else "start"
        parts.append(
            f'<line x1="{_n(x)}" y1="{_n(y)}" x2="{_n(x)}" y2="{_n(y + 3)}" stroke="#999"/>'
            f'<text x="{_n(x)}" y="{_n(y + 13)}" text-anchor="{anchor}" fill="#555">'
            f"{esc(_tick_text(m, unit))}</text>"
        )
    return "".join(parts)


def legend(keys: list[str], y: float = 12) -> str:
    """Coloured squares naming the kinds of mark in `keys`, in one line."""
    parts, x = [], 0.0
    for key in keys:
        name = _NAMES.get(key, key)
        parts.append(
            f'<rect x="{_n(x)}" y="{_n(y - 9)}" width="10" height="10" fill="{COLORS[key]}"/>'
            f'<text x="{_n(x + 13)}" y="{_n(y)}" fill="#333">{esc(name)}</text>'
        )
        x += 20 + 6.2 * len(name)
    return "".join(parts)


def _reasoning_share(it: Iteration, usage: Usage) -> tuple[float, str]:
    """The share of the decoding spent on reasoning, and what it was estimated from."""
    if usage.reasoning_tokens is not None and usage.completion_tokens > 0:
        share = usage.reasoning_tokens / usage.completion_tokens
        return min(max(share, 0.0), 1.0), "reasoning tokens"
    reasoning = len(it.reasoning_content)
    if it.reasoning_shape not in ("", "none"):  # reasoning left in the content, stripped
        reasoning += max(len(it.raw_content) - len(it.text), 0)
    answer = len(it.text) + sum(len(c.arguments) for c in it.tool_calls)
    if reasoning + answer == 0:
        return 0.0, "characters"
    return reasoning / (reasoning + answer), "characters"


def segments(it: Iteration) -> list[tuple[str, float, float, str]]:
    """An iteration's marks as (kind, start s, duration s, hover text), from its own start.

    Streamed with a first-token time: the wait, then the decoding split into reasoning and
    answer (estimated from the reasoning tokens when reported, else from characters); not
    streamed: one reply mark. Then each tool call, one after another, as the loop ran them.
    """
    latency = seconds(it.latency_s)
    ttft = min(seconds(it.ttft_s), latency)
    usage = Usage.of(it.usage)
    tokens = f"{usage.prompt_tokens} prompt / {usage.completion_tokens} completion tokens"
    head = f"#{it.index}"
    out: list[tuple[str, float, float, str]] = []
    if it.streamed and ttft > 0:
        out.append(("wait", 0.0, ttft, f"{head} waiting for the first token: {ttft:.3f} s"))
        decode = latency - ttft
        share, basis = _reasoning_share(it, usage)
        think = decode * share
        rate = it.decode_tok_s
        speed = f", {rate:.1f} tokens/s" if rate is not None else ""
        if think > 0:
            text = f"{head} reasoning: {think:.3f} s (share estimated from {basis})"
            out.append(("reasoning", ttft, think, text))
        if decode - think > 0 or think == 0:
            text = (
                f"{head} answer: {decode - think:.3f} s; decoding {decode:.3f} s{speed}; {tokens}"
            )
            out.append(("answer", ttft + think, decode - think, text))
    else:
        out.append(
            ("reply", 0.0, latency, f"{head} reply, not streamed: {latency:.3f} s; {tokens}")
        )
    at = latency
    for call in it.tool_calls:
        d = seconds(call.duration_s)
        name = _short(call.name, _NAME_CHARS) or "(no name)"
        kind = "tool error" if call.is_error else "tool"
        failed = f" ({call.error_type or 'error'})" if call.is_error else ""
        out.append((kind, at, d, f"{head} tool {name}{failed}: {d:.3f} s"))
        at += d
    return out


def timeline_svg(trace: Trace) -> str:
    """The run as a timeline: one row per iteration, each starting where the last ended,
    to scale on one time axis; each mark's numbers on hover. "" for a run with no iteration.
    """
    its = trace.iterations
    if not its:
        return ""
    drawn = its[:MAX_ROWS]
    rows = [segments(it) for it in drawn]
    starts, at = [], 0.0
    for marks in rows:
        starts.append(at)
        at += max((s + d for _, s, d, _ in marks), default=0.0)
    total = at
    marks_at = ticks(total)
    span = marks_at[-1] or 1.0
    plot = WIDTH - _LABEL - 8
    kinds = [k for k in COLORS if any(m[0] == k for marks in rows for m in marks)]
    parts = [legend(kinds)]
    for row, (marks, start) in enumerate(zip(rows, starts, strict=True)):
        y = _TOP + row * (_ROW + _GAP)
        label = f"#{drawn[row].index}"
        parts.append(
            f'<text x="{_LABEL - 6}" y="{_n(y + _ROW - 3)}" text-anchor="end" fill="#555">'
            f"{esc(_short(label, 8))}</text>"
        )
        for kind, s, d, title in marks:
            x = _LABEL + plot * (start + s) / span
            w = plot * d / span
            if kind.startswith("tool") and w > 3:
                w -= 1  # a gap, so that calls one after another stay apart
            parts.append(bar(x, y, w, _ROW, COLORS[kind], title))
    y_axis = _TOP + len(rows) * (_ROW + _GAP)
    parts.append(axis(_LABEL, plot, y_axis, marks_at, " s"))
    height = y_axis + _AXIS + 4
    if len(its) > len(drawn):
        parts.append(
            f'<text x="0" y="{height + 8}" fill="#777">first {len(drawn)} of {len(its):,} '
            "iterations drawn</text>"
        )
        height += 14
    label = f"timeline of {len(its)} iterations, {total:.2f} s"
    return svg(WIDTH, height, "".join(parts), label)
