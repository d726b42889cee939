"""TraceView build time: a 32-iteration trace of 1 MiB replies vs a 1-iteration one.

Widgets per row and build time as the trace grows to 32 iterations. Run alone:

    .venv/bin/python benchmarks/traceview.py [--samples N]
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from common import Figure, ms, run_alone, sample_wall_cpu, widget_cleanup, within_sample_ratio

MIB = 1 << 20
GOAL = 5.0


def big_trace(iterations: int, reply_bytes: int = MIB) -> Any:
    """A tool loop's trace as the loop records it: every round's messages hold all replies so far.

    Each reply is a leaky one (a think block, then text), so raw and stripped differ.
    """
    from rig_nb import Iteration, ToolCallRecord, Trace

    think = "<think>" + "r" * (reply_bytes // 2) + "</think>"
    trace = Trace(model="bench", endpoint="127.0.0.1:1", settings={"max_tokens": 64})
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a benchmark."},
        {"role": "user", "content": "Go."},
    ]
    for i in range(iterations):
        text = f"<b>step {i}</b> " + "t" * (reply_bytes - len(think) - 20)
        raw = think + text
        call = ToolCallRecord(
            id=f"call_{i}",
            received_id=f"call_{i}",
            name="add",
            arguments='{"a": 2, "b": 2}',
            result="4",
        )
        trace.iterations.append(
            Iteration(
                index=i,
                messages=list(messages),
                raw_content=raw,
                reasoning_shape="closed",
                text=text,
                finish_reason="tool_calls",
                tool_calls=[call],
                usage={"prompt_tokens": 10 * (i + 1), "completion_tokens": reply_bytes // 4},
                latency_s=0.01,
            )
        )
        messages.append({"role": "assistant", "content": text, "tool_calls": []})
        messages.append({"role": "tool", "tool_call_id": call.id, "content": call.result})
    trace.outcome = "ok"
    trace.elapsed_s = 0.01 * iterations
    return trace


def _one_table_what_if(one: Any, many: Any, samples: int) -> str:
    """What-if (benchmark code): the same row previews as one HTML widget plus a row picker."""
    try:
        import ipywidgets

        from rig_nb._html import ITERATION_HEADER, iteration_cells, table_html
    except ImportError as exc:
        return f"\n(what-if not run: {exc})"

    def build(trace: Any) -> Any:
        rows = [iteration_cells(it) for it in trace.iterations]
        styles = [[""] * len(ITERATION_HEADER) for _ in rows]
        return ipywidgets.VBox(
            [
                ipywidgets.Label(value=""),
                ipywidgets.HTML(value=table_html(ITERATION_HEADER, rows, styles)),
                ipywidgets.Dropdown(options=[str(it.index) for it in trace.iterations]),
                ipywidgets.HTML(value=""),
            ]
        )

    _, cpu = sample_wall_cpu(
        {"1": lambda: build(one), "32": lambda: build(many)}, samples, 1, widget_cleanup()
    )
    t = {k: statistics.median(v) for k, v in cpu.items()}
    return (
        f"\nwhat-if, benchmark code: the same previews as one `HTML` table + a `Dropdown` "
        f"row picker + one detail `HTML` filled on pick: {ms(t['1'])} vs {ms(t['32'])} CPU, "
        f"{within_sample_ratio(cpu, '32', '1'):.2f}x"
    )


def measure(samples: int, quick: bool = False) -> tuple[str, list[Figure]]:
    from ipywidgets.widgets import widget as widget_module

    from rig_nb.widgets import TraceView

    samples = max(samples, 5 if quick else 21)
    one = big_trace(1)
    many = big_trace(32)
    cleanup = widget_cleanup()
    t0 = time.perf_counter()
    cleanup(TraceView(one))
    first = time.perf_counter() - t0
    registry = widget_module._instances  # every live widget, by model id
    counts: dict[str, int] = {}
    for label, trace in (("1 iteration", one), ("32 iterations", many)):
        before = len(registry)
        TraceView(trace)
        counts[label] = len(registry) - before
        cleanup(None)
    wall, cpu = sample_wall_cpu(
        {"1 iteration": lambda: TraceView(one), "32 iterations": lambda: TraceView(many)},
        samples,
        1,
        cleanup,
    )
    med = {k: statistics.median(v) for k, v in cpu.items()}
    medw = {k: statistics.median(v) for k, v in wall.items()}
    ratio = within_sample_ratio(cpu, "32 iterations", "1 iteration")
    wall_ratio = within_sample_ratio(wall, "32 iterations", "1 iteration")
    what_if = _one_table_what_if(one, many, samples)
    lines = [
        f"\nTraceView(trace) build, 1 MiB replies, process CPU (wall beside it), median of "
        f"{samples}; each view closed outside the timing\n",
        "| trace | median build, CPU | wall | widgets created |",
        "|---|---|---|---|",
        f"| 1 iteration (first build: {ms(first)}) | {ms(med['1 iteration'])} "
        f"| {ms(medw['1 iteration'])} | {counts['1 iteration']} |",
        f"| 32 iterations | {ms(med['32 iterations'])} | {ms(medw['32 iterations'])} "
        f"| {counts['32 iterations']} |",
        f"\nratio 32 / 1 (medians of within-sample ratios): CPU {ratio:.2f}x, "
        f"wall {wall_ratio:.2f}x",
        what_if,
    ]
    figure = Figure(
        "TraceView 32 x 1 MiB / 1 x 1 MiB build time",
        f"{ratio:.2f}x CPU ({ms(med['32 iterations'])} vs {ms(med['1 iteration'])}; "
        f"wall {wall_ratio:.2f}x)",
        f"<= {GOAL:.0f}x",
        ratio <= GOAL,
    )
    return "\n".join(lines), [figure]


if __name__ == "__main__":
    sys.exit(run_alone(measure, __doc__ or "", samples=21))
