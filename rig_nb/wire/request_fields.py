"""The request fields the loop owns, the caller's fields checked before anything is sent
(`extra_body`, `response_format`): the same rules on every wire; and the function-tool
object that chat completions and Ollama both take."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .text import clean_deep

__all__ = [
    "MAX_RESPONSE_FORMAT_BYTES",
    "RESERVED_FIELDS",
    "RESPONSE_FORMAT_TYPES",
    "TOOL_CHOICES",
    "check_extra_body",
    "check_response_format",
    "tool_spec",
]

# The tool_choice settings people try, by name; "unset" leaves the field out of the request.
TOOL_CHOICES: dict[str, str | None] = {
    "auto": "auto",
    "required": "required",
    "none": "none",
    "unset": None,
}
# What the loop owns in a request body; extra_body may not set these.
RESERVED_FIELDS = frozenset(
    {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "max_tokens",
        "max_completion_tokens",
        "stream",
        "stream_options",
    }
)


def check_extra_body(extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """A copy of `extra`; ValueError when it is not a mapping or sets a field the loop owns."""
    if extra is None:
        return {}
    if not isinstance(extra, Mapping):
        raise ValueError("extra_body must be a mapping of request fields")
    taken = sorted(k for k in extra if k in RESERVED_FIELDS)
    if taken:
        raise ValueError(f"extra_body may not set {', '.join(taken)}: the loop sets them")
    if "n" in extra:
        raise ValueError("extra_body may not set n: the loop reads one choice of each reply")
    bad = [k for k in extra if not isinstance(k, str)]
    if bad:
        raise ValueError("extra_body keys must be strings")
    return {k: clean_deep(v) for k, v in extra.items()}


# Structured-output requests as the OpenAI chat API names them; servers that take
# response_format (vLLM, llama-server, LM Studio, SGLang) accept these three.
RESPONSE_FORMAT_TYPES = ("text", "json_object", "json_schema")
# A schema bigger than this is a mistake, not a request: refused before anything is sent.
MAX_RESPONSE_FORMAT_BYTES = 64 * 1024


def check_response_format(value: Any) -> dict[str, Any] | None:
    """A copy of a `response_format` to send as is, or None; ValueError for what cannot be sent:
    not a dict, an unknown `type`, not JSON, or over 64 KB of JSON as sent (UTF-8)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(
            f"response_format must be a dict such as {{'type': 'json_schema', ...}}, "
            f"not {type(value).__name__}"
        )
    kind = value.get("type")
    if kind not in RESPONSE_FORMAT_TYPES:
        known = ", ".join(RESPONSE_FORMAT_TYPES)
        raise ValueError(f"response_format type must be one of {known}, not {kind!r}")
    try:
        copied: dict[str, Any] = clean_deep(value)
        # Encoded as the openai SDK and httpx send a body: UTF-8, no ASCII escapes, no spaces.
        encoded = json.dumps(copied, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"response_format is not JSON: {type(exc).__name__}") from None
    size = len(encoded.encode())
    if size > MAX_RESPONSE_FORMAT_BYTES:
        raise ValueError(
            f"response_format is {size} bytes of JSON as sent (UTF-8); at most "
            f"{MAX_RESPONSE_FORMAT_BYTES} (64 KB) is sent"
        )
    return copied


def tool_spec(name: str, description: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """A declared tool as chat completions takes it."""
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": dict(parameters)},
    }
