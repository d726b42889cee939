"""The notebook layer's widgets: TraceView, ProbePanel, LeakLab, CompareView.

Renderers take data (a Trace, a DataFrame) and return ipywidgets; every
endpoint-controlled string is escaped before it reaches an HTML widget.
Importing this package registers a live TraceView as the notebook display of
a bare `trace` in a cell (without it, a Trace shows a static HTML table).
"""

from __future__ import annotations

try:
    import ipywidgets as _ipywidgets  # noqa: F401
except ImportError:
    raise ImportError("rig_nb.widgets needs ipywidgets: pip install 'rig_nb[notebook]'") from None

from .compare_view import CompareView
from .leak_lab import LeakLab
from .probe_panel import ProbePanel
from .trace_view import TraceView, display_trace, register_display

__all__ = ["CompareView", "LeakLab", "ProbePanel", "TraceView", "display_trace"]

register_display()
