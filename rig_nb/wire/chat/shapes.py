"""The chat-completion wire's shapes: messages, tools, request bodies and replies.

With `chat.stream` (the same replies as stream deltas) and `sse` (the event framing),
the only place that knows field names on the chat wire. A reply's reasoning may sit in
any of `REASONING_FIELDS` (`text.py`); usage keeps the prompt and completion counts and,
when reported, reasoning and cached tokens, and `server_timings` what a server says
about its own work (`counts.py`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import BackendError
from ..base import Reply, json_or_none
from ..counts import server_timings, usage_counts, with_timings
from ..error_objects import error_object, error_of
from ..request_fields import check_extra_body, check_response_format, tool_spec
from ..text import REASONING_FIELDS, clean, text_of
from ..turns import Call, Request, Turn

__all__ = [
    "NO_CHOICES",
    "assistant_message",
    "call_of",
    "chat_body",
    "first_choice",
    "parse_models",
    "parse_reply",
    "parse_reply_body",
    "parse_usage",
    "request_body",
    "system_message",
    "tool_message",
    "turn_message",
    "user_message",
    "uses_max_completion_tokens",
]

_COMPLETION_TOKENS_MODEL = re.compile(r"^(o[1-9][0-9]*|gpt-5)([-.:_@].*)?$")
_USAGE_NAMES = (("prompt_tokens", "prompt_tokens"), ("completion_tokens", "completion_tokens"))
_USAGE_DETAILS = (
    ("completion_tokens_details", "reasoning_tokens"),
    ("prompt_tokens_details", "cached_tokens"),
    ("input_tokens_details", "cached_tokens"),
)


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


def uses_max_completion_tokens(model: str) -> bool:
    """o-series and gpt-5 models reject max_tokens and take max_completion_tokens."""
    return bool(_COMPLETION_TOKENS_MODEL.match(model.rsplit("/", 1)[-1].lower()))


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
    stop: Sequence[str] = (),
    parallel_tool_calls: bool | None = None,
) -> dict[str, Any]:
    """The request body the loop and the probe send (extra_body merged last, checked);
    `stop` as a list when given, `parallel_tool_calls` only beside tools."""
    body: dict[str, Any] = {"model": model, "messages": list(messages)}
    key = "max_completion_tokens" if uses_max_completion_tokens(model) else "max_tokens"
    body[key] = max_tokens
    if temperature != 0:
        body["temperature"] = temperature
    if tools:
        body["tools"] = list(tools)
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
        if parallel_tool_calls is not None:
            body["parallel_tool_calls"] = parallel_tool_calls
    if stop:
        body["stop"] = list(stop)
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    checked = check_response_format(response_format)
    if checked is not None:
        body["response_format"] = checked
    body.update(check_extra_body(extra_body))
    return body


NO_CHOICES = "ai backend: reply has no choices"


def first_choice(choices: Any) -> dict[str, Any] | None:
    """Choice 0 of a `choices` list: the entry whose `index` is 0 (or absent), else None."""
    if not isinstance(choices, list):
        return None
    for choice in choices:
        if isinstance(choice, dict) and choice.get("index", 0) in (0, None):
            return choice
    return None


def _reasoning(message: Mapping[str, Any]) -> tuple[str, str]:
    """(text, field name) of the first reasoning field that holds text."""
    for name in REASONING_FIELDS:
        text = text_of(message.get(name))
        if text:
            return text, name
    return "", ""


def parse_usage(raw: Any) -> dict[str, int]:
    """Token counts that are ints: prompt, completion, and reasoning / cached when reported."""
    return usage_counts(raw, _USAGE_NAMES, _USAGE_DETAILS)


def parse_reply(body: Any) -> Reply:
    """Choice 0 of a chat completion body; minimal replies (no id, model, usage) are fine."""
    if not isinstance(body, dict):
        raise BackendError("ai backend: reply is not a JSON object", kind="reply")
    error = error_object(body)
    if error is not None:
        raise error_of(error, "reply")
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
        tool_calls=[call_of(c) for c in calls],
        usage=with_timings(parse_usage(body.get("usage")), timings),
        server_timings=timings,
        top_level=frozenset(k for k in body if isinstance(k, str)),
        system_fingerprint=fingerprint if isinstance(fingerprint, str) else "",
    )


def parse_reply_body(content: bytes) -> Reply:
    """Choice 0 of a chat completion as received; BackendError (reply) when it is not JSON."""
    data = json_or_none(content)
    if data is None:
        raise BackendError("ai backend: reply is not valid JSON", kind="reply")
    return parse_reply(data)


def parse_models(content: bytes) -> list[dict[str, Any]]:
    """The entries of a `/models` listing (`data`), empty when the body is not one."""
    data = json_or_none(content)
    items = data.get("data") if isinstance(data, dict) else None
    return [m for m in items if isinstance(m, dict)] if isinstance(items, list) else []


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
        stop=request.stop,
        parallel_tool_calls=request.parallel_tool_calls,
    )


def call_of(call: Any) -> Call:
    """A chat-shaped tool call as a `Call` (`name` "" unless it is a function call)."""
    if not isinstance(call, dict):
        return Call("", "", "")
    fn = call.get("function")
    fn = fn if isinstance(fn, dict) else {}
    name = fn.get("name") if call.get("type", "function") == "function" else None
    return Call.made(call.get("id"), name, fn.get("arguments"))
