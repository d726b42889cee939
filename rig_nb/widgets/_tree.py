"""Closing a widget box and everything it made: ipywidgets' close() leaves children alive."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

__all__ = ["close_tree"]


def close_tree(root: Any) -> None:
    """Close every widget below `root` (children, layouts, styles), not `root` itself."""
    seen: set[int] = {id(root)}
    stack = [root]
    while stack:
        node = stack.pop()
        found = list(getattr(node, "children", ()))
        for name in ("layout", "style"):
            value = getattr(node, name, None)
            if isinstance(value, widgets.Widget):
                found.append(value)
        for child in found:
            if id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
                if child is not root:
                    child.close()
