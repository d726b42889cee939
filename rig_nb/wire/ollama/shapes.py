"""Ollama's native chat API (`/api/chat`): a `Request` as its body, its reply as a `Reply`.

Requests: `messages` (assistant turns with `thinking` when replayed and `tool_calls`
whose arguments are an object; tool results as role `tool` with `tool_name`), chat's
tools, `stream` (always sent: Ollama streams unless told not to), `think`, and
`options` with `num_predict`, `temperature` (always, 0 included: Ollama's own default
is 0.8) and `num_ctx` (from `Request.options["context_window"]`). Replies:
`message.content`, `message.thinking`, `message.tool_calls`, `done_reason`, the counts
and the `*_duration` fields (nanoseconds) as `Reply.server_timings` in seconds.
Streams are `stream.py`'s; the `Wire` is `wire.py`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...errors import BackendError
from ...usage import count_of as _int
from ..base import Reply, json_or_none
from ..counts import ollama_timings
from ..error_objects import error_object, error_of
from ..request_fields import check_extra_body, check_response_format, tool_spec
from ..text import clean, text_of
from ..turns import Call

if TYPE_CHECKING:
    from ..turns import Request, Turn

__all__ = [
    "NO_MESSAGE",
    "finish_of",
    "not_json",
    "ollama_body",
    "ollama_call",
    "parse_chat",
    "parse_chat_body",
    "parse_tags",
    "usage_of",
]

NO_MESSAGE = "ai backend: reply has no message"
_USAGE = (("prompt_eval_count", "prompt_tokens"), ("eval_count", "completion_tokens"))


def _message(turn: Turn) -> dict[str, Any]:
    if turn.role == "tool":
        return {"role": "tool", "content": turn.text, "tool_name": turn.name}
    message: dict[str, Any] = {"role": turn.role, "content": turn.text}
    if turn.role != "assistant":
        return message
    if turn.reasoning and turn.reasoning_field == "content":
        message["content"] = turn.inline_text()
    elif turn.reasoning and turn.reasoning_field:
        message["thinking"] = turn.reasoning
    if turn.calls:
        message["tool_calls"] = [
            {"function": {"name": c.name, "arguments": c.as_object()}} for c in turn.calls
        ]
    return message


def _tools(request: Request) -> list[dict[str, Any]]:
    """The tools offered: none for tool_choice "none", only the named one when a tool is
    forced (Ollama has no tool_choice; this is how its callers get one)."""
    choice = request.tool_choice
    if choice == "none":
        return []
    forced = choice.get("function") if isinstance(choice, Mapping) else None
    name = forced.get("name") if isinstance(forced, Mapping) else None
    return [
        tool_spec(t.name, t.description, t.parameters)
        for t in request.tools
        if name is None or t.name == name
    ]


def _format(response_format: Mapping[str, Any] | None) -> Any:
    """Chat's `response_format` as Ollama's `format`: "json", a JSON schema, or None."""
    if response_format is None:
        return None
    kind = response_format.get("type")
    if kind == "json_object":
        return "json"
    schema = response_format.get("json_schema")
    if kind == "json_schema" and isinstance(schema, Mapping):
        inner = schema.get("schema")
        return dict(inner) if isinstance(inner, Mapping) else {"type": "object"}
    return None


def ollama_body(request: Request) -> dict[str, Any]:
    """The `/api/chat` body for `request`; extra fields go out as they are (a caller's
    `options` are merged over ours, but `num_predict` is the loop's `max_tokens`); `stop`
    goes out as `options.stop`. Ollama has no parallel_tool_calls: a request with one is a
    ValueError."""
    if request.parallel_tool_calls is not None:
        raise ValueError(
            "Ollama's /api/chat has no parallel_tool_calls: send it over chat, Responses or "
            "Messages"
        )
    extra = check_extra_body(request.extra)
    body: dict[str, Any] = {
        "model": request.model,
        "messages": [_message(t) for t in request.turns],
        "stream": request.stream,
    }
    tools = _tools(request) if request.tools else []
    if tools:
        body["tools"] = tools
    options: dict[str, Any] = {"num_predict": request.max_tokens}
    options["temperature"] = request.temperature
    window = request.options.get("context_window")
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        options["num_ctx"] = window
    if request.stop:
        options["stop"] = list(request.stop)
    given = extra.pop("options", None)
    if given is not None and not isinstance(given, Mapping):
        raise ValueError("extra_body's options must be a mapping (Ollama's model options)")
    if given:
        options = {**options, **given, "num_predict": request.max_tokens}
    body["options"] = options
    formatted = _format(check_response_format(request.response_format))
    if formatted is not None:
        body["format"] = formatted
    for key, value in extra.items():
        if key not in body:  # what the wire renders wins over a same-named extra field
            body[key] = value
    return body


def ollama_call(call: Any) -> Call | None:
    """One of Ollama's tool calls as a `Call` (arguments as JSON text; the id as sent, ""
    for none); None when it is not an object with a `function` object."""
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict):
        return None
    return Call.made(call.get("id"), fn.get("name"), fn.get("arguments"))


def finish_of(line: Mapping[str, Any], calls: bool) -> str:
    """The chat finish_reason for a final line: `length` and other reasons as sent; a stop
    with tool calls is `tool_calls`."""
    reason = line.get("done_reason")
    if isinstance(reason, str) and reason and reason != "stop":
        return clean(reason)[:40]
    return "tool_calls" if calls else "stop"


def usage_of(line: Mapping[str, Any]) -> dict[str, int]:
    """prompt_eval_count and eval_count as prompt and completion tokens (ints only)."""
    usage: dict[str, int] = {}
    for theirs, ours in _USAGE:
        value = _int(line.get(theirs))
        if value is not None:
            usage[ours] = value
    return usage


def parse_chat(body: Any) -> Reply:
    """An `/api/chat` reply (not streamed) as the Reply the loop reads."""
    if not isinstance(body, dict):
        raise BackendError("ai backend: reply is not a JSON object", kind="reply")
    error = error_object(body)
    if error is not None:
        raise error_of(error, "reply")
    message = body.get("message")
    if not isinstance(message, dict):
        raise BackendError(NO_MESSAGE, kind="reply")
    reasoning = text_of(message.get("thinking"))
    raw = message.get("tool_calls")
    calls = [c for c in map(ollama_call, raw if isinstance(raw, list) else []) if c is not None]
    return Reply(
        content=text_of(message.get("content")),
        reasoning=reasoning,
        reasoning_field="thinking" if reasoning else "",
        finish_reason=finish_of(body, bool(calls)),
        tool_calls=calls,
        usage=usage_of(body),
        server_timings=ollama_timings(body),
        top_level=frozenset(k for k in body if isinstance(k, str)),
    )


def not_json(content: bytes) -> BackendError:
    """The error for a 2xx body that is not JSON, saying so plainly for an HTML page."""
    if content.lstrip()[:1] == b"<":
        return BackendError(
            "ai backend: reply is an HTML page, not JSON: is this an Ollama server? "
            "(the native API is at the base URL without /v1)",
            kind="reply",
        )
    return BackendError("ai backend: reply is not valid JSON", kind="reply")


def parse_chat_body(content: bytes) -> Reply:
    """An `/api/chat` reply as received; BackendError (reply) when it is not JSON."""
    data = json_or_none(content)
    if data is None:
        raise not_json(content)
    return parse_chat(data)


def parse_tags(content: bytes) -> list[dict[str, Any]]:
    """`/api/tags` as model list entries (`id` from each model's name; `owned_by`
    "ollama": only Ollama lists models there); empty when the body is not one."""
    data = json_or_none(content)
    models = data.get("models") if isinstance(data, dict) else None
    out: list[dict[str, Any]] = []
    for m in models if isinstance(models, list) else []:
        name = m.get("name", m.get("model")) if isinstance(m, dict) else None
        if isinstance(name, str) and name:
            out.append({**m, "id": name, "object": "model", "owned_by": "ollama"})
    return out
