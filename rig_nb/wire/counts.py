"""The numbers a reply reports, whatever the wire: token counts in the names the trace
keeps, and what a server says about its own work (llama.cpp's `timings`, Ollama's
durations) in seconds and tokens."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..usage import count_of as _int

__all__ = ["ollama_timings", "server_timings", "usage_counts", "with_timings"]

# Cached prompt tokens named at the top of usage (Anthropic, LiteLLM passing it through).
_CACHED_TOP = ("cache_read_input_tokens",)
# llama.cpp's `timings` (milliseconds and counts) in the names Iteration.server_timings keeps.
_LLAMA_TIMINGS = (
    ("prompt_ms", "prompt_s", 1e-3),
    ("prompt_n", "prompt_tokens", 1.0),
    ("predicted_ms", "decode_s", 1e-3),
    ("predicted_n", "decode_tokens", 1.0),
    ("cache_n", "cached_tokens", 1.0),
)
# Ollama's durations (nanoseconds) and counts, top level of a native reply.
_OLLAMA_TIMINGS = (
    ("load_duration", "load_s", 1e-9),
    ("prompt_eval_duration", "prompt_s", 1e-9),
    ("prompt_eval_count", "prompt_tokens", 1.0),
    ("eval_duration", "decode_s", 1e-9),
    ("eval_count", "decode_tokens", 1.0),
    ("total_duration", "total_s", 1e-9),
)
# A server's own number past this (about 30 years in ns, 10**15 tokens) is not a measurement.
_MAX_TIMING = 1e18


def usage_counts(
    raw: Any, names: Sequence[tuple[str, str]], details: Sequence[tuple[str, str]]
) -> dict[str, int]:
    """Token counts that are ints, in the names the trace keeps: `names` are (ours, theirs)
    at the top of `raw`; `details` (holder, key) give reasoning and cached tokens, the
    first one reported winning; then Anthropic's `cache_read_input_tokens` as cached."""
    usage: dict[str, int] = {}
    if not isinstance(raw, dict):
        return usage
    for ours, theirs in names:
        value = _int(raw.get(theirs))
        if value is not None:
            usage[ours] = value
    for holder, key in details:
        held = raw.get(holder)
        value = _int(held.get(key)) if isinstance(held, dict) else None
        if value is not None and key not in usage:
            usage[key] = value
    for key in _CACHED_TOP:
        value = _int(raw.get(key))
        if value is not None and "cached_tokens" not in usage:
            usage["cached_tokens"] = value
    return usage


def _read_timings(
    source: Any, table: Sequence[tuple[str, str, float]], out: dict[str, float]
) -> None:
    if not isinstance(source, dict):
        return
    for theirs, ours, scale in table:
        value = source.get(theirs)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if 0 <= value <= _MAX_TIMING and ours not in out:
            out[ours] = float(value) * scale


def server_timings(body: Any) -> dict[str, float]:
    """What a reply says about the server's own work, in seconds and tokens: llama.cpp's
    `timings`, Ollama's `*_duration` fields; only the keys reported, finite and >= 0."""
    out: dict[str, float] = {}
    if not isinstance(body, dict):
        return out
    timings = body.get("timings")
    if timings is None and "total_duration" not in body:
        return out  # the common reply: neither server's numbers
    _read_timings(timings, _LLAMA_TIMINGS, out)
    _read_timings(body, _OLLAMA_TIMINGS, out)
    return out


def ollama_timings(line: Mapping[str, Any]) -> dict[str, float]:
    """Ollama's `*_duration` fields (nanoseconds) and counts at the top of `line`, in
    seconds and tokens; only the keys reported, finite and >= 0."""
    out: dict[str, float] = {}
    _read_timings(line, _OLLAMA_TIMINGS, out)
    return out


def with_timings(usage: dict[str, int], timings: Mapping[str, float]) -> dict[str, int]:
    """`usage` with llama.cpp's `timings.cache_n` as its cached tokens when usage has none."""
    cached = timings.get("cached_tokens")
    count = _int(int(cached)) if cached is not None else None
    if "cached_tokens" not in usage and count is not None:
        usage["cached_tokens"] = count
    return usage
