"""Text the command line prints: the demo table and a trace, iteration by iteration.

Endpoint text goes to a terminal here, so control characters (escape
sequences a reply could use to rewrite the screen) are shown as `\\xNN`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .client import Client
from .errors import RigError
from .loop import RunRequest
from .trace import Trace

__all__ = ["COLUMNS", "demo_rows", "format_table", "format_trace", "printable", "run_traced"]

COLUMNS = [
    "persona",
    "probe",
    "outcome",
    "shapes",
    "iters",
    "calls",
    "tokens in/out",
    "latency",
    "answer",
]
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` with control characters (other than newline and tab) shown as `\\xNN`."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]} ... ({len(text) - limit} more characters)"


def run_traced(client: Client, request: RunRequest) -> Trace:
    """Run the loop; the trace whether it ends "ok" or in a RigError (its outcome says which)."""
    try:
        return client.run(request).trace
    except RigError as exc:
        if exc.trace is None:
            raise
        return exc.trace


def shapes_seen(trace: Trace) -> str:
    """Reasoning shapes seen in content, in order, plus "field" for a separate reasoning field."""
    seen: list[str] = []
    for it in trace.iterations:
        for shape in [*it.reasoning_shape.split("+"), *(["field"] if it.reasoning_content else [])]:
            if shape not in ("", "none") and shape not in seen:
                seen.append(shape)
    return ",".join(seen) or "none"


def demo_rows(
    client: Client, models: Sequence[str], request: RunRequest
) -> tuple[list[dict[str, Any]], dict[str, Trace]]:
    """Probe every model, run `request` on each; one table row and one trace per model."""
    rows: list[dict[str, Any]] = []
    traces: dict[str, Trace] = {}
    for model in models:
        try:
            client.probe_tool_calling(model)
            verdict = "tool call"
        except RigError as exc:
            verdict = type(exc).__name__
        trace = run_traced(client, replace(request, model=model))
        traces[model] = trace
        totals = trace.usage_totals()
        prompt, completion = totals["prompt_tokens"], totals["completion_tokens"]
        answer = "-"
        if trace.outcome == "ok" and trace.iterations:
            answer = _one_line(trace.iterations[-1].text, 44) or "(empty)"
        rows.append(
            {
                "persona": model,
                "probe": verdict,
                "outcome": trace.outcome,
                "shapes": shapes_seen(trace),
                "iters": len(trace.iterations),
                "calls": len(trace.tool_calls),
                "tokens in/out": f"{prompt}/{completion}",
                "latency": f"{trace.elapsed_s * 1000:.0f} ms",
                "answer": answer,
            }
        )
    return rows, traces


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """Rows as an aligned text table: pandas' layout when pandas is importable, else plain."""
    try:
        import pandas as pd
    except ImportError:
        pd = None  # type: ignore[assignment]
    if pd is not None:
        frame = pd.DataFrame(list(rows), columns=list(columns)).astype(str)
        # pandas right-aligns text; equal-width left-padded cells read as a table.
        widths = {c: max([len(c), *(len(v) for v in frame[c])]) for c in frame.columns}
        formatters = {c: (lambda v, w=widths[c]: v.ljust(w)) for c in frame.columns}
        text = frame.to_string(index=False, justify="left", formatters=formatters)
        return printable("\n".join(line.rstrip() for line in text.splitlines()))
    cells = [[str(c) for c in columns]] + [[str(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return printable("\n".join(line.rstrip() for line in lines))


def _block(label: str, text: str, limit: int) -> list[str]:
    if not text:
        return [f"    {label}: (empty)"]
    body = _clip(text, limit).splitlines() or [""]
    pad = " " * (len(label) + 6)
    return [f"    {label}: {body[0]}", *((pad + line).rstrip() for line in body[1:])]


def format_trace(trace: Trace, *, limit: int = 2000) -> str:
    """A trace as text: a summary line, then each iteration's raw and stripped text and calls.

    Each text is cut at `limit` characters (the JSON form keeps everything).
    """
    lines = [
        f"{trace.model} at {trace.endpoint}: outcome {trace.outcome or '-'}, "
        f"{len(trace.iterations)} iterations, {len(trace.tool_calls)} tool calls, "
        f"{trace.elapsed_s:.3f} s"
    ]
    for it in trace.iterations:
        usage = f"{it.usage.get('prompt_tokens', 0)}/{it.usage.get('completion_tokens', 0)}"
        lines.append(
            f"  #{it.index}  finish={it.finish_reason or '-'}  shape={it.reasoning_shape}  "
            f"tokens in/out={usage}  {it.latency_s * 1000:.1f} ms"
        )
        lines += _block("raw", it.raw_content, limit)
        if it.reasoning_content:
            lines += _block("reasoning field", it.reasoning_content, limit)
        lines += _block("stripped", it.text, limit)
        for c in it.tool_calls:
            lines.append(
                f"    call {c.name} {_clip(c.arguments, limit)} -> {_clip(c.result, limit)}"
            )
        if it.error:
            lines.append(f"    error: {it.error}")
    return printable("\n".join(lines))
