"""Escaped HTML for traces, shared by `Trace._repr_html_`, the HTML report and the widgets.

Every string that came from an endpoint passes through `esc` (html.escape)
before it reaches HTML. A long text is shown up to `DISPLAY_CHARS` characters
with a note saying how much more there is: the trace keeps it all. Marking
what strip_reasoning removes is linear and runs its scans in C, so a reply
made of thousands of think blocks renders about as fast as plain text.
"""

from __future__ import annotations

import json
import re
from html import escape
from typing import TYPE_CHECKING, Any

from ._svg import timeline_svg
from .content import strip_reasoning
from .usage import Usage

if TYPE_CHECKING:
    from .trace import Iteration, Trace

__all__ = [
    "DISPLAY_CHARS",
    "ITERATION_HEADER",
    "PREVIEW_CHARS",
    "esc",
    "iteration_cells",
    "marked_reasoning_html",
    "messages_text",
    "pre",
    "preview",
    "reasoning_spans",
    "shown_chars",
    "table_html",
    "trace_html",
    "trace_summary",
]

PREVIEW_CHARS = 120
DISPLAY_CHARS = 100_000
_OPEN, _CLOSE = "<think>", "</think>"
_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)
PRE_STYLE = (
    "white-space:pre-wrap;word-break:break-word;max-height:24em;overflow:auto;"
    "margin:0;padding:4px;border:1px solid #ddd;font-size:12px;line-height:1.35"
)
_DEL_STYLE = "<style>pre.rig-nb-raw del{background:#eee;color:#777}</style>"


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


def _more(text: str, shown: int) -> str:
    hidden = len(text) - shown
    if hidden <= 0:
        return ""
    return f'<div style="color:#777;font-size:11px">... {hidden:,} more characters not shown</div>'


def shown_chars(text: str) -> int:
    """How much of `text` to show: DISPLAY_CHARS characters, fewer where escaping swells them.

    Markup-dense text escapes to up to six times its length; the cut keeps what is
    escaped and sent to the browser near DISPLAY_CHARS, whatever the text holds.
    """
    head = text[:DISPLAY_CHARS]
    swell = 3 * (head.count("<") + head.count(">")) + 4 * (head.count("&") + head.count("'"))
    swell += 5 * head.count('"')
    if len(head) + swell <= DISPLAY_CHARS:
        return len(head)
    return max(1, len(head) * DISPLAY_CHARS // (len(head) + swell))


def pre(text: str, style: str = PRE_STYLE) -> str:
    """`text` escaped in a scrolling <pre> (cut by `shown_chars`); an empty text says so."""
    if not text:
        return f'<pre style="{style};color:#999">(empty)</pre>'
    n = shown_chars(text)
    return f'<pre style="{style}">{esc(text[:n])}</pre>{_more(text, n)}'


# Two closing tags with no `<` between them: the second one is bare. Only a
# single-character repeat before a literal, so the search is linear without
# possessive quantifiers (Python 3.10 has none).
_BARE_STRETCH = re.compile(r"</think>[^<]*</think>")


def _next_bare_close(s: str, first: int, stop: int) -> int:
    """Where the first bare </think> after the one at `first` starts (-1: none up to `stop`).

    `stop` is where a </think> ends. Where every `<` in s[first:stop] starts a think
    tag, a stretch between two closing tags holds no <think> exactly when it holds no
    `<`, and one search finds it; other markup takes one split at the closing tags.
    Both run in C over a reply of thousands of blocks.
    """
    if s.count("<", first, stop) == s.count(_OPEN, first, stop) + s.count(_CLOSE, first, stop):
        bare = _BARE_STRETCH.search(s, first, stop)
        return bare.end() - len(_CLOSE) if bare is not None else -1
    between = s[first + len(_CLOSE) : stop].split(_CLOSE)[:-1]  # between each two closing tags
    opened = [_OPEN in part for part in between]
    if all(opened):
        return -1
    i = opened.index(False)
    return first + sum(map(len, between[: i + 1])) + len(_CLOSE) * (i + 1)


def _last_bare_close(s: str, last: int, limit: int | None = None) -> int:
    """Where the last </think> that ends no block starts (-1: none); `last` is the last </think>.

    A </think> ends a block exactly when a <think> stands between it and the closing tag
    before it. The closing tags nearest the end are looked at one by one (a bare one is
    usually there); past a few dozen, one split of the text answers for all the rest.
    With `limit`, only s[:limit] is shown: a bare </think> that ends past it makes all
    of it reasoning, so any such one is returned (`_next_bare_close` over the rest),
    and the split covers the shown text only.
    """
    end = last
    for _ in range(64):
        prev = s.rfind(_CLOSE, 0, end)
        if s.find(_OPEN, prev + len(_CLOSE) if prev >= 0 else 0, end) < 0:
            return end
        if prev < 0:
            return -1
        end = prev
    if limit is not None and end + len(_CLOSE) > limit:
        shown = s.rfind(_CLOSE, 0, limit)
        start = shown + len(_CLOSE) if shown >= 0 else 0
        stop = end + len(_CLOSE)
        first = s.find(_CLOSE, start, stop)
        if first >= 0 and s.find(_OPEN, start, first) < 0:
            return first
        bare = _next_bare_close(s, first, stop) if first >= 0 else -1
        if bare >= 0:
            return bare
        if shown < 0:
            return -1
        end = shown
    stretches = s[:end].split(_CLOSE)  # the text before each closing tag, `end`'s last
    opened = [_OPEN in part for part in stretches]
    if all(opened):
        return -1
    i = len(opened) - 1 - opened[::-1].index(False)
    return sum(map(len, stretches[: i + 1])) + len(_CLOSE) * i


def reasoning_spans(
    s: str, limit: int | None = None, shape: str | None = None
) -> list[tuple[int, int, bool]]:
    """(start, end, is_reasoning) spans of s[:limit] following strip_reasoning's rules.

    Everything through the last bare `</think>`, each closed block after it, and
    everything from an unclosed `<think>` on are reasoning. `shape`, when known
    (`reasoning_shape(s)`), spares the search for a bare `</think>` where there is none.
    """
    limit = len(s) if limit is None else min(limit, len(s))
    last = s.rfind(_CLOSE)
    pos = _after_bare(s, last, shape)
    spans = [(0, pos, True)] if pos else []
    if pos < limit:
        spans += _spans_after(s, limit, pos, last + len(_CLOSE) if last >= 0 else 0)
    return [(a, min(b, limit), r) for a, b, r in spans if a < limit]


def _after_bare(s: str, last: int, shape: str | None, limit: int | None = None) -> int:
    """Where the text after the last bare `</think>` starts (0: there is none).

    With `limit`, any position past it stands for all positions past it.
    """
    if last < 0 or (shape is not None and "unopened" not in shape):
        return 0
    bare = _last_bare_close(s, last, limit)
    return bare + len(_CLOSE) if bare >= 0 else 0


def _spans_after(s: str, limit: int, pos: int, region_end: int) -> list[tuple[int, int, bool]]:
    """The spans from `pos` (past any bare `</think>`) on, the last one possibly past `limit`."""
    spans: list[tuple[int, int, bool]] = []
    for m in _BLOCK.finditer(s, pos, region_end):
        if m.start() >= limit:
            break
        if m.start() > pos:
            spans.append((pos, m.start(), False))
        spans.append((m.start(), m.end(), True))
        pos = m.end()
    if pos < limit:
        unclosed = s.find(_OPEN, region_end)
        if unclosed >= 0:
            if unclosed > pos:
                spans.append((pos, unclosed, False))
            spans.append((unclosed, len(s), True))
        elif pos < len(s):
            spans.append((pos, len(s), False))
    return spans


def _marked(raw: str, spans: list[tuple[int, int, bool]]) -> str:
    """The spans escaped, reasoning ones in <del>, one escape per span (the slow way)."""
    return "".join(f"<del>{esc(raw[a:b])}</del>" if r else esc(raw[a:b]) for a, b, r in spans)


def _delimited(s: str, limit: int, shape: str | None) -> str:
    """s[:limit] with each reasoning stretch between \x01 and \x02, as reasoning_spans says.

    Past the last bare `</think>` every closing tag ends a block that starts at the
    first `<think>` since the closing tag before it. Where a stretch of the text holds
    as many opening tags as closing ones, each block holds one `<think>`, and two
    C-level replaces mark all of them: a reply of thousands of blocks is not walked
    block by block. The rest (a nested `<think>`, the edges) follows the spans.
    """
    last = s.rfind(_CLOSE)
    region_end = last + len(_CLOSE) if last >= 0 else 0
    pos = _after_bare(s, last, shape, limit)
    pieces = [f"\x01{s[: min(pos, limit)]}\x02"] if pos else []
    stop = min(region_end, limit)
    if pos < stop:
        cut = s.rfind(_CLOSE, pos, stop)
        if cut >= 0:
            cut += len(_CLOSE)
            middle = s[pos:cut]
            if middle.count(_OPEN) == middle.count(_CLOSE):
                pieces.append(
                    middle.replace(_OPEN, "\x01" + _OPEN).replace(_CLOSE, _CLOSE + "\x02")
                )
                pos = cut
    if pos < limit:
        for a, b, r in _spans_after(s, limit, pos, region_end):
            if a >= limit:
                break
            b = min(b, limit)
            pieces.append(f"\x01{s[a:b]}\x02" if r else s[a:b])
    return "".join(pieces)


_REASONING_MARKED = re.compile("\x01[^\x02]*\x02")


def marked_reasoning_html(raw: str, shape: str | None = None) -> str:
    """`raw` in a <pre>, the parts strip_reasoning removes struck through in grey.

    `shape` is `reasoning_shape(raw)` when the caller has it (it saves a scan).
    Control characters stand for the <del> tags while the text is escaped
    (html.escape leaves them alone): one escape for the whole text. A reply
    holding those characters takes the slow way, one escape per span.
    """
    if not raw:
        return pre(raw)
    n = shown_chars(raw)
    head = raw[:n]
    if "\x01" in head or "\x02" in head:
        spans = reasoning_spans(raw, n, shape)
        kept = "".join(raw[a:b] for a, b, r in spans if not r)
        if len(raw) <= n and kept.strip() != strip_reasoning(raw).strip():
            spans = [(0, len(raw), False)]  # the library's function is the truth
        body = _marked(raw, spans)
    else:
        text = _delimited(raw, n, shape)
        if (
            len(raw) <= n
            and _REASONING_MARKED.sub("", text).strip() != strip_reasoning(raw).strip()
        ):
            text = raw  # the library's function is the truth, not this sketch
        body = esc(text).replace("\x01", "<del>").replace("\x02", "</del>")
    title = "struck through: removed by strip_reasoning"
    return (
        f'{_DEL_STYLE}<pre class="rig-nb-raw" title="{title}" style="{PRE_STYLE}">{body}</pre>'
        + _more(raw, n)
    )


def _title(cell: Any) -> str:
    """A hover title holding a long cell's text, for cells a style may cut."""
    text = str(cell)
    return f' title="{esc(text[:2000])}"' if len(text) > 40 else ""


def table_html(header: list[str], rows: list[list[Any]], cell_styles: list[list[str]]) -> str:
    """A plain HTML table; every header and cell is escaped, styles are ours."""
    th = "".join(
        f'<th style="text-align:left;padding:2px 8px;border-bottom:1px solid #999">{esc(h)}</th>'
        for h in header
    )
    body = []
    for row, styles in zip(rows, cell_styles, strict=True):
        tds = "".join(
            f'<td style="padding:2px 8px;vertical-align:top;{style}"{_title(cell)}>{esc(cell)}</td>'
            for cell, style in zip(row, styles, strict=True)
        )
        body.append(f"<tr>{tds}</tr>")
    return (
        '<table style="border-collapse:collapse;font-size:12px;line-height:1.4">'
        f"<thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


ITERATION_HEADER = ["#", "ending", "shape", "leaks", "text", "tool calls", "tokens", "s", "error"]


def iteration_cells(it: Iteration, reuse: float | None = None) -> list[str]:
    """The table row of one iteration, each long field previewed; `reuse` is its share of
    the previous prompt the server reported cached (`Trace.prefix_reuse`), followed by the
    iteration's `prefix_break` when it has one."""
    usage = Usage.of(it.usage)
    tokens = f"{usage.prompt_tokens}/{usage.completion_tokens}"
    if reuse is not None:
        tokens += f" {reuse:.0%}"
    if it.prefix_break:
        tokens += f" break: {it.prefix_break}"
    # An empty answer (a tool-call round) previews what was said instead, labelled.
    if it.text:
        shown = it.text
    elif it.raw_content.strip():
        shown = "[raw] " + it.raw_content[: PREVIEW_CHARS * 2]
    elif it.reasoning_content:
        shown = (
            f"[{it.reasoning_field or 'reasoning'}] " + it.reasoning_content[: PREVIEW_CHARS * 2]
        )
    else:
        shown = ""
    ending = it.ending or ("streaming" if it.chunks else "waiting")
    if it.context_cut:  # the server dropped part of what was sent
        ending = f"cut: {ending}"
    return [
        str(it.index),
        ending,
        it.reasoning_shape,
        ",".join(it.leaks),
        preview(shown),
        preview(", ".join(c.name for c in it.tool_calls), 40),
        tokens,
        f"{it.latency_s:.2f}",
        preview(it.error, 80),
    ]


def trace_summary(trace: Trace) -> str:
    """One line: model, endpoint label, outcome, iterations, elapsed."""
    outcome = trace.outcome or "running"
    n, calls = len(trace.iterations), len(trace.tool_calls)
    # While running, elapsed_s is not set yet: the rounds' own times so far.
    elapsed = trace.elapsed_s or sum(it.latency_s for it in trace.iterations)
    return (
        f"{trace.model or '?'} @ {trace.endpoint or '?'}: {outcome}, "
        f"{n} iteration{'' if n == 1 else 's'}, {calls} tool call{'' if calls == 1 else 's'}, "
        f"{elapsed:.2f} s"
    )


def trace_html(trace: Trace) -> str:
    """The static (non-widget) table of a trace, under its timeline."""
    rows = [
        iteration_cells(it, r) for it, r in zip(trace.iterations, trace.prefix_reuse, strict=True)
    ]
    styles = [[""] * len(ITERATION_HEADER) for _ in rows]
    return (
        f"<div><p>{esc(trace_summary(trace))}</p>{timeline_svg(trace)}"
        f"{table_html(ITERATION_HEADER, rows, styles)}</div>"
    )


def messages_text(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages, indent=2, ensure_ascii=False)
