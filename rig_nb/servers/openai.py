"""OpenAI's own API (and servers that present themselves as it).

Recognised by the model list's owner (`system`, `openai`, `openai-internal`), or, after
every owner, a reply's `fp_` fingerprint. Thinking is `reasoning_effort`.
"""

from __future__ import annotations

from typing import Any

from .base import BASE, Thinking

__all__ = ["OPENAI"]


def _reply_hints(reply: Any) -> bool:
    return bool(reply.system_fingerprint.startswith("fp_"))


OPENAI = BASE.derive(
    "openai",
    owners=frozenset({"system", "openai", "openai-internal"}),
    reply_hints=_reply_hints,
    thinking=Thinking((), effort_off=True),
)
