"""Pictures and Phoenix (issue 34): what the timeline, the charts and export_otlp cost.

    .venv/bin/python benchmarks/pictures_bench.py [--samples 21]

- TraceView of a 32-iteration trace (1 MiB replies, streamed timings, a tool call per round)
  with the timeline vs the same view with the timeline switched off (benchmark code: today's
  TraceView), interleaved in one run; goal: within 1.2x (process CPU).
- save_html of the 8 x 5 x 3 realistic compare frame (report_bench.realistic_frame), charts
  and timelines included; goal: under 1 s.
- export_otlp of 1,000 realistic traces to a loopback collector (a real HTTP server in this
  process that parses each body with opentelemetry-proto); goal: under 2 s.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from common import (  # noqa: E402
    Figure,
    median_times,
    ms,
    run_alone,
    sample_wall_cpu,
    widget_cleanup,
    within_sample_ratio,
)
from report_bench import realistic_frame, realistic_trace  # noqa: E402
from traceview import big_trace  # noqa: E402

VIEW_GOAL, REPORT_GOAL, EXPORT_GOAL = 1.2, 1.0, 2.0
EXPORTED = 1000


def timed_trace() -> Any:
    trace = big_trace(32)
    for n, it in enumerate(trace.iterations):
        it.streamed, it.ttft_s, it.latency_s = True, 0.2 + 0.01 * n, 1.5 + 0.05 * n
        it.usage["reasoning_tokens"] = it.usage["completion_tokens"] // 2
        for call in it.tool_calls:
            call.duration_s = 0.3
    return trace


def view_ratio(samples: int) -> tuple[str, Figure]:
    from rig_nb.widgets import TraceView, trace_view

    trace = timed_trace()
    drawn = trace_view.timeline_svg

    def without() -> Any:
        trace_view.timeline_svg = lambda _t: ""  # type: ignore[assignment]
        try:
            return TraceView(trace)
        finally:
            trace_view.timeline_svg = drawn

    wall, cpu = sample_wall_cpu(
        {"with": lambda: TraceView(trace), "without": without}, samples, 1, widget_cleanup()
    )
    ratio = within_sample_ratio(cpu, "with", "without")
    med = {k: statistics.median(v) for k, v in cpu.items()}
    text = (
        f"| TraceView, 32 iterations | {ms(med['with'])} | {ms(med['without'])} "
        f"| {ratio:.2f}x | <= {VIEW_GOAL}x |"
    )
    figure = Figure(
        "TraceView 32 iterations, timeline / none",
        f"{ratio:.2f}x CPU ({ms(med['with'])} vs {ms(med['without'])})",
        f"<= {VIEW_GOAL}x",
        ratio <= VIEW_GOAL,
    )
    return text, figure


class _Collector(ThreadingHTTPServer):
    daemon_threads = True
    spans = 0


class _Handler(BaseHTTPRequestHandler):
    server: _Collector

    def do_POST(self) -> None:  # noqa: N802
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as pb

        request = pb.ExportTraceServiceRequest()
        request.ParseFromString(self.rfile.read(int(self.headers["content-length"])))
        self.server.spans += sum(
            len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans
        )
        body = pb.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def export_time(samples: int) -> tuple[str, Figure]:
    from rig_nb.report import export_otlp, save_traces

    rng = random.Random(34)
    traces = [
        realistic_trace(rng, f"gpu{n % 8}.lan:8000", f"model-{n % 8}") for n in range(EXPORTED)
    ]
    server = _Collector(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "t.jsonl"
            times = median_times(
                {
                    "export_otlp": lambda: export_otlp(traces, url),
                    "save_traces": lambda: save_traces(traces, path),
                },
                max(3, samples // 4),
            )
    finally:
        server.shutdown()
        server.server_close()
    t, base = times["export_otlp"], times["save_traces"]
    spans = sum(1 + len(t.iterations) + len(t.tool_calls) for t in traces)
    text = (
        f"| export_otlp, {EXPORTED} traces ({spans} spans) to a loopback collector | {ms(t)} "
        f"| save_traces of the same: {ms(base)} | {t / base:.2f}x | < {EXPORT_GOAL:g} s |"
    )
    return text, Figure(
        f"export_otlp {EXPORTED} traces", ms(t), f"< {EXPORT_GOAL:g} s", t < EXPORT_GOAL
    )


def report_time(samples: int) -> tuple[str, Figure]:
    from rig_nb.report import save_html

    df = realistic_frame()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.html"
        t = median_times({"save_html": lambda: save_html(df, path)}, max(3, samples // 4))[
            "save_html"
        ]
        pictures = path.read_text().count("<svg")
    text = (
        f"| save_html, 8 x 5 x 3 realistic frame ({pictures} pictures) | {ms(t)} | | "
        f"| < {REPORT_GOAL:g} s |"
    )
    return text, Figure("report with charts, 8x5x3", ms(t), f"< {REPORT_GOAL:g} s", t < REPORT_GOAL)


def measure(samples: int, quick: bool = False) -> tuple[str, list[Figure]]:
    samples = max(samples, 5 if quick else 21)
    rows, figures = [], []
    for part in (view_ratio, report_time, export_time):
        row, figure = part(samples)
        rows.append(row)
        figures.append(figure)
    lines = [
        f"\nPictures and OTLP export, median of {samples} (the view: process CPU, interleaved "
        "with the same view without its timeline)\n",
        "| what | time | baseline | ratio | goal |",
        "|---|---|---|---|---|",
        *rows,
    ]
    return "\n".join(lines), figures


if __name__ == "__main__":
    sys.exit(run_alone(measure, __doc__ or "", samples=21))
