"""Text as every wire reads and sends it: lone surrogates made U+FFFD, text fields read
whole, and the names a reply's reasoning field goes by."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["REASONING_FIELDS", "clean", "clean_deep", "text_of"]

# Where a chat-shaped reply's reasoning may sit: llama.cpp and DeepSeek say
# `reasoning_content`, vLLM >= 0.11 and Ollama's /v1 `reasoning`, others `thinking` or a
# `reasoning_details` list of parts.
REASONING_FIELDS = ("reasoning_content", "reasoning", "thinking", "reasoning_details")


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean(text: str) -> str:
    """`text` with lone UTF-16 surrogates (valid in JSON, not in UTF-8) as U+FFFD, as Go does."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def clean_deep(value: Any) -> Any:
    """`value` with `clean` applied to every string in it (dicts and lists rebuilt as needed).

    UTF-8 cannot encode a lone surrogate (an `os.fsdecode`d file name in a tool result):
    what is sent carries U+FFFD instead of failing the request.
    """
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, Mapping):
        return {clean_deep(k): clean_deep(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_deep(v) for v in value]
    return value


def text_of(value: Any) -> str:
    """A text field: a string, or a list of parts with `text` joined in order."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list):
        return clean(
            "".join(
                p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
        )
    return ""
