"""An MCP server's tool names as rig_nb names, `include` patterns, and a call's result as text.

Kept apart from the SDK: nothing here imports `mcp`, so these rules are tested without a server.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["MAX_NAME", "matches", "rig_names", "render_result"]

MAX_NAME = 64
_VALID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_OTHER = re.compile(r"[^a-zA-Z0-9_-]")


def _cleaned(name: str) -> str:
    """`name` with each character outside [a-zA-Z0-9_-] as `_`, cut to 64; "_" for ""."""
    return _OTHER.sub("_", name)[:MAX_NAME] or "_"


def rig_names(mcp_names: Sequence[str]) -> list[str]:
    """The rig_nb name of each MCP tool name, in order, all distinct.

    A name that matches ^[a-zA-Z0-9_-]{1,64}$ is kept (the first of two equal ones); the
    others are cleaned, and a clash with a name already taken gets `_2`, `_3`, ... (the
    name cut so that it still fits 64 characters). Kept names are reserved first, so a
    cleaned name never takes the name a server gave another tool.
    """
    taken: set[str] = set()
    out: list[str | None] = [None] * len(mcp_names)
    for i, name in enumerate(mcp_names):
        if _VALID.fullmatch(name) and name not in taken:
            taken.add(name)
            out[i] = name
    for i, name in enumerate(mcp_names):
        if out[i] is not None:
            continue
        base = _cleaned(name)
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            suffix = f"_{n}"
            candidate = base[: MAX_NAME - len(suffix)] + suffix
        taken.add(candidate)
        out[i] = candidate
    return [name for name in out if name is not None]


def matches(name: str, patterns: Iterable[str]) -> bool:
    """True when the MCP name, or its cleaned form, equals or glob-matches one of `patterns`."""
    cleaned = _cleaned(name)
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(cleaned, p) for p in patterns)


def _block_text(block: Any) -> tuple[str, bool]:
    """One content block as text, and whether it was a text block."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(getattr(block, "text", "")), True
    if kind in ("image", "audio"):
        return f"[{kind}: {getattr(block, 'mime_type', None) or 'unknown'}]", False
    if kind == "resource_link":
        return f"[resource: {getattr(block, 'uri', '')}]", False
    if kind == "resource":
        resource = getattr(block, "resource", None)
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return text, True
        return f"[resource: {getattr(resource, 'uri', '')}]", False
    return f"[{kind or 'content'}]", False


def render_result(content: Sequence[Any], structured: Any) -> str:
    """A tools/call result as the text fed to the model.

    Text blocks joined by newlines; image and audio blocks as `[image: <mime type>]` and
    `[audio: <mime type>]`; structured content as compact JSON when no block is text.
    """
    parts: list[str] = []
    any_text = False
    for block in content:
        text, is_text = _block_text(block)
        parts.append(text)
        any_text = any_text or is_text
    if not any_text and structured is not None:
        parts.insert(0, json.dumps(structured, separators=(",", ":"), ensure_ascii=False))
    return "\n".join(parts)
