"""The chat-completion wire format: messages, tools, request bodies and replies.

With `wire.stream` (the same replies as stream deltas) and `wire.sse` (the event
framing), the only place that knows field names on the chat wire. A reply's
reasoning may sit in any of `REASONING_FIELDS` (llama.cpp and DeepSeek say
`reasoning_content`, vLLM >= 0.11 and Ollama's /v1 `reasoning`, others
`thinking` or a `reasoning_details` list of parts); usage keeps the prompt and
completion counts and, when reported, reasoning and cached tokens (from whichever field
the server uses); `server_timings` keeps what a server says about its own work.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import BackendError
from ..usage import count_of as _int
from .base import Reply
from .turns import Request, Turn

__all__ = [
    "RESERVED_FIELDS",
    "TOOL_CHOICES",
    "REASONING_FIELDS",
    "Reply",
    "assistant_message",
    "call_arguments",
    "call_name",
    "chat_body",
    "check_extra_body",
    "check_response_format",
    "NO_CHOICES",
    "clean",
    "clean_deep",
    "error_detail",
    "first_choice",
    "parse_models",
    "parse_reply",
    "parse_reply_body",
    "ollama_timings",
    "parse_usage",
    "request_body",
    "server_timings",
    "system_message",
    "text_of",
    "tool_message",
    "tool_spec",
    "turn_message",
    "user_message",
    "usage_counts",
    "uses_max_completion_tokens",
    "with_timings",
]

REASONING_FIELDS = ("reasoning_content", "reasoning", "thinking", "reasoning_details")
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
_COMPLETION_TOKENS_MODEL = re.compile(r"^(o[1-9][0-9]*|gpt-5)([-.:_@].*)?$")
_USAGE_NAMES = (("prompt_tokens", "prompt_tokens"), ("completion_tokens", "completion_tokens"))
_USAGE_DETAILS = (
    ("completion_tokens_details", "reasoning_tokens"),
    ("prompt_tokens_details", "cached_tokens"),
    ("input_tokens_details", "cached_tokens"),
)
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


def system_message(text: str) -> dict[str, Any]:
    return {"role": "system", "content": clean(text)}


def user_message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": clean(text)}


def assistant_message(content: str, calls: Sequence[tuple[str, str, str]]) -> dict[str, Any]:
    """The echoed assistant turn: its content and the calls acted on, as (id, name, arguments)."""
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls
        ],
    }


def tool_message(call_id: str, result: str) -> dict[str, Any]:
    """A tool's result fed back (the loop cleans results when it records them)."""
    return {"role": "tool", "tool_call_id": call_id, "content": result}


def tool_spec(name: str, description: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """A declared tool as chat completions takes it."""
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": dict(parameters)},
    }


def uses_max_completion_tokens(model: str) -> bool:
    """o-series and gpt-5 models reject max_tokens and take max_completion_tokens."""
    return bool(_COMPLETION_TOKENS_MODEL.match(model.rsplit("/", 1)[-1].lower()))


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


def chat_body(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    max_tokens: int,
    *,
    tools: Sequence[Mapping[str, Any]] = (),
    tool_choice: Any = "auto",
    temperature: float = 0.0,
    stream: bool = False,
    extra_body: Mapping[str, Any] | None = None,
    response_format: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The request body the loop and the probe send (extra_body merged last, checked)."""
    body: dict[str, Any] = {"model": model, "messages": list(messages)}
    key = "max_completion_tokens" if uses_max_completion_tokens(model) else "max_tokens"
    body[key] = max_tokens
    if temperature != 0:
        body["temperature"] = temperature
    if tools:
        body["tools"] = list(tools)
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    checked = check_response_format(response_format)
    if checked is not None:
        body["response_format"] = checked
    body.update(check_extra_body(extra_body))
    return body


_SURROGATE = re.compile("[\ud800-\udfff]")
NO_CHOICES = "ai backend: reply has no choices"


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


def first_choice(choices: Any) -> dict[str, Any] | None:
    """Choice 0 of a `choices` list: the entry whose `index` is 0 (or absent), else None."""
    if not isinstance(choices, list):
        return None
    for choice in choices:
        if isinstance(choice, dict) and choice.get("index", 0) in (0, None):
            return choice
    return None


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


def _reasoning(message: Mapping[str, Any]) -> tuple[str, str]:
    """(text, field name) of the first reasoning field that holds text."""
    for name in REASONING_FIELDS:
        text = text_of(message.get(name))
        if text:
            return text, name
    return "", ""


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


def parse_usage(raw: Any) -> dict[str, int]:
    """Token counts that are ints: prompt, completion, and reasoning / cached when reported."""
    return usage_counts(raw, _USAGE_NAMES, _USAGE_DETAILS)


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
    if "cached_tokens" not in usage and cached is not None:
        usage["cached_tokens"] = int(cached)
    return usage


def error_detail(body: Mapping[str, Any]) -> str:
    err = body["error"]
    detail = err.get("message") if isinstance(err, dict) else err
    return detail if isinstance(detail, str) else ""


def parse_reply(body: Any) -> Reply:
    """Choice 0 of a chat completion body; minimal replies (no id, model, usage) are fine."""
    if not isinstance(body, dict):
        raise BackendError("ai backend: reply is not a JSON object", kind="reply")
    if "error" in body and not body.get("choices"):
        raise BackendError(f"ai backend: error in reply: {error_detail(body)}", kind="reply")
    choice = first_choice(body.get("choices"))
    if choice is None:
        raise BackendError(NO_CHOICES, kind="reply")
    message = choice.get("message")
    if not isinstance(message, dict):
        message = {}
    reasoning, reasoning_field = _reasoning(message)
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        calls = [] if calls is None else [calls]
    fc = message.get("function_call")
    if not calls and isinstance(fc, dict):  # legacy single call
        calls = [{"id": "", "type": "function", "function": fc}]
    finish = choice.get("finish_reason")
    fingerprint = body.get("system_fingerprint")
    timings = server_timings(body)
    return Reply(
        content=text_of(message.get("content")),
        reasoning=reasoning,
        reasoning_field=reasoning_field,
        finish_reason=finish if isinstance(finish, str) else "",
        tool_calls=calls,
        usage=with_timings(parse_usage(body.get("usage")), timings),
        server_timings=timings,
        top_level=frozenset(k for k in body if isinstance(k, str)),
        system_fingerprint=fingerprint if isinstance(fingerprint, str) else "",
    )


def _json_or_none(content: bytes) -> Any:
    try:
        return json.loads(content)
    except (ValueError, RecursionError):
        return None


def parse_reply_body(content: bytes) -> Reply:
    """Choice 0 of a chat completion as received; BackendError (reply) when it is not JSON."""
    data = _json_or_none(content)
    if data is None:
        raise BackendError("ai backend: reply is not valid JSON", kind="reply")
    return parse_reply(data)


def parse_models(content: bytes) -> list[dict[str, Any]]:
    """The entries of a `/models` listing (`data`), empty when the body is not one."""
    data = _json_or_none(content)
    items = data.get("data") if isinstance(data, dict) else None
    return [m for m in items if isinstance(m, dict)] if isinstance(items, list) else []


def call_arguments(call: Any) -> str:
    """A tool call's arguments as text ("" when absent); an object sent as such is JSON-encoded."""
    fn = call.get("function") if isinstance(call, dict) else None
    raw = fn.get("arguments") if isinstance(fn, dict) else None
    if isinstance(raw, str):
        return clean(raw)
    if raw is None:
        return ""
    try:
        return json.dumps(raw)  # some servers send an object instead of a string
    except (TypeError, ValueError, RecursionError):
        return ""


def call_name(call: Any) -> str:
    """The function name of a tool call, or "" when the loop cannot execute it."""
    if not isinstance(call, dict) or call.get("type", "function") != "function":
        return ""
    fn = call.get("function")
    name = fn.get("name") if isinstance(fn, dict) else None
    return clean(name) if isinstance(name, str) else ""


def turn_message(turn: Turn) -> dict[str, Any]:
    """A turn as a chat message (reasoning in the field the turn names)."""
    message = turn.as_message()
    message.pop("reasoning_signature", None)
    return message


def request_body(request: Request) -> dict[str, Any]:
    """A Request as a chat.completions body."""
    return chat_body(
        request.model,
        [turn_message(t) for t in request.turns],
        request.max_tokens,
        tools=[tool_spec(t.name, t.description, t.parameters) for t in request.tools],
        tool_choice=request.tool_choice,
        temperature=request.temperature,
        stream=request.stream,
        extra_body=request.extra,
        response_format=request.response_format,
    )
