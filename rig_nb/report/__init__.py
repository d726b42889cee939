"""Keep and share runs outside the kernel: an HTML report, a trace file, OpenTelemetry spans.

    save_html(df, "report.html")        # a compare DataFrame, a Trace, or a list of Traces
    save_traces(traces, "traces.jsonl"); load_traces("traces.jsonl")
    to_otel(trace)                      # OTLP/JSON, GenAI semantic conventions (see otel.py)
    export_otlp(traces, "http://127.0.0.1:6006/v1/traces")  # to a collector (see otlp.py)

The HTML report (rendered by `html.py`) is one file that needs no script and no
network to read, with every endpoint string escaped; the output is deterministic. A trace
file is JSON Lines, one `Trace.to_json()` a line, and it is input too: `load_traces`
rejects what does not fit with a ValueError naming the line. Notebook layer, yet pandas
(and `compare.summarize`) are imported only when handed a DataFrame.
"""

from __future__ import annotations

from .files import check_path
from .html import save_html
from .jsonl import MAX_LINE_BYTES, load_traces, save_traces
from .otel import to_otel
from .otlp import export_otlp

__all__ = [
    "MAX_LINE_BYTES",
    "check_path",
    "export_otlp",
    "load_traces",
    "save_html",
    "save_traces",
    "to_otel",
]
