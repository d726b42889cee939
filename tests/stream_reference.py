"""rig_nb's reading of a chat reply in the shape the openai SDK's accumulator gives, and text as
the SDK's JSON decoder leaves it (UTF-16 surrogate pairs joined)."""

from __future__ import annotations

from typing import Any


def as_utf16(text: str | None) -> str:
    """`text` read as UTF-16 code units: a pair of halves is its character, a lone half U+FFFD."""
    return (text or "").encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def rig_read(reply: Any) -> dict[str, Any]:
    return {
        "content": reply.content,
        "reasoning": {reply.reasoning_field: reply.reasoning} if reply.reasoning else {},
        "calls": [(c.id, c.name, c.arguments) for c in reply.tool_calls],
        "finish": reply.finish_reason,
    }
