"""Walking a built widget tree, as the widget tests read it: the widgets, HTML values, state."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import ipywidgets as widgets

from rig_nb.widgets import TraceView


def walk(widget: Any) -> Iterator[Any]:
    """Every widget in the tree, row details included (built, whether shown or not)."""
    yield widget
    for child in getattr(widget, "children", ()):
        yield from walk(child)
    if isinstance(widget, TraceView):
        shown = set(map(id, widget.children))
        yield from (r.detail for r in widget.rows if r.detail and id(r.detail) not in shown)


def html_values(widget: Any) -> list[str]:
    """The value of every HTML widget in the tree."""
    return [str(w.value) for w in walk(widget) if isinstance(w, widgets.HTML)]


def all_state(widget: Any) -> str:
    """Every widget's synced state, as one string to search."""
    return json.dumps([w.get_state() for w in walk(widget)], default=str)
