"""The notebook layer's widgets: TraceView, ProbePanel, LeakLab, CompareView.

Renderers take data (a Trace, a DataFrame) and return ipywidgets; every
endpoint-controlled string is escaped before it reaches an HTML widget.
"""

from __future__ import annotations

from .compare_view import CompareView
from .leak_lab import LeakLab
from .probe_panel import ProbePanel
from .trace_view import TraceView, display_trace

__all__ = ["CompareView", "LeakLab", "ProbePanel", "TraceView", "display_trace"]
