"""The Responses API's shapes (`/responses`): a `Request` as a Responses request, and a
Responses reply as the same `Reply` every wire gives.

Requests: `input` items (`message`, `function_call`, `function_call_output`, and
`reasoning` items with `reasoning_text` content for replayed reasoning), `instructions`
for the first system prompt, `store: false`, `max_output_tokens`, flat function tools.
Replies: `output` items (`message`, `reasoning`, `function_call`); `status:
"incomplete"` for the output budget is finish "length", for the content filter finish
"content_filter". Streams are `stream.py`'s; the `Wire` is `wire.py`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ...errors import BackendError
from ..base import Reply
from ..counts import server_timings, usage_counts, with_timings
from ..error_objects import error_object, error_of
from ..request_fields import check_extra_body, check_response_format
from ..text import clean, text_of
from ..turns import Call

if TYPE_CHECKING:
    from ..turns import Request, Turn

__all__ = [
    "NO_OUTPUT",
    "parse_response",
    "parse_response_body",
    "response_usage",
    "responses_body",
]

NO_OUTPUT = "ai backend: reply has no output"
_KNOWN_ITEMS = frozenset({"message", "reasoning", "function_call"})
_USAGE_NAMES = (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens"))
_USAGE_DETAILS = (
    ("output_tokens_details", "reasoning_tokens"),
    ("input_tokens_details", "cached_tokens"),
    ("prompt_tokens_details", "cached_tokens"),
)
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


def _reasoning_item(text: str) -> dict[str, Any]:
    # llama-server requires `summary` (a list) and non-empty `content` on an input reasoning item.
    return {
        "type": "reasoning",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": text}],
    }


def _input_items(turns: Iterable[Turn]) -> tuple[str | None, list[Any]]:
    """(instructions, input items) for the turns; the first system turn is the
    instructions, later ones stay messages. Reasoning sent back is a `reasoning` item
    before its turn's message and calls, whichever field the turn names."""
    instructions: str | None = None
    items: list[Any] = []
    for turn in turns:
        role = turn.role
        if role == "system" and instructions is None and not items:
            instructions = turn.text
        elif role == "assistant":
            if turn.reasoning and turn.reasoning_field:
                items.append(_reasoning_item(turn.reasoning))
            if turn.text:
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": turn.text}],
                    }
                )
            items.extend(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                }
                for call in turn.calls
            )
        elif role == "tool":
            items.append(
                {"type": "function_call_output", "call_id": turn.call_id, "output": turn.text}
            )
        else:
            items.append({"type": "message", "role": role, "content": turn.text})
    return instructions, items


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        return {"type": "function", "name": choice["function"].get("name")}
    return choice


def _text_format(response_format: Mapping[str, Any]) -> dict[str, Any]:
    """Chat's `response_format` as the Responses API's `text.format` (json_schema flattened)."""
    schema = response_format.get("json_schema")
    if response_format.get("type") == "json_schema" and isinstance(schema, Mapping):
        return {"type": "json_schema", **schema}
    return dict(response_format)


def responses_body(request: Request) -> dict[str, Any]:
    """The Responses request for `request` (extra fields passed as they are;
    `reasoning_effort` becomes `reasoning.effort` unless the extra fields set `reasoning`).

    `response_format` goes out as the API's `text.format` too, unless `text` is set: vLLM
    applies the one, llama-server's /v1/responses (which hands the body on to its chat
    route) the other. The API has no `stop`: a request with one is a ValueError.
    """
    if request.stop:
        raise ValueError(
            "the Responses API has no stop parameter: send stop over chat, Messages or Ollama"
        )
    instructions, items = _input_items(request.turns)
    body: dict[str, Any] = {"model": request.model, "input": items, "store": False}
    if instructions is not None:
        body["instructions"] = instructions
    body["max_output_tokens"] = request.max_tokens
    if request.temperature != 0:
        body["temperature"] = request.temperature
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
            }
            for t in request.tools
        ]
        if request.tool_choice is not None:
            body["tool_choice"] = _tool_choice(request.tool_choice)
        if request.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = request.parallel_tool_calls
    extra = check_extra_body(request.extra)
    formatted = check_response_format(request.response_format)
    if formatted is not None:
        body["response_format"] = formatted
        if "text" not in extra:
            body["text"] = {"format": _text_format(formatted)}
    for key, value in extra.items():
        if key in body and key != "response_format":
            continue  # what the wire renders wins over a same-named extra field
        if key == "reasoning_effort" and "reasoning" not in extra:
            body["reasoning"] = {"effort": value}
            continue
        body[key] = value
    return body


def response_usage(raw: Any) -> dict[str, int]:
    """Responses usage in the chat names the trace keeps (ints only)."""
    return usage_counts(raw, _USAGE_NAMES, _USAGE_DETAILS)


def _error_text(error: Any) -> str:
    detail = error.get("message") if isinstance(error, dict) else error
    return detail if isinstance(detail, str) else ""


def _short(value: Any) -> str:
    # Not cut here: the boundary redacts the key from the message first, then cuts it.
    return clean(value) if isinstance(value, str) else type(value).__name__


def _finish(response: Mapping[str, Any], calls: bool) -> str:
    """The chat finish_reason for a Responses status; BackendError for failed or unfinished."""
    status = response.get("status", "completed")
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        if reason == "max_output_tokens" or not isinstance(reason, str) or not reason:
            return "length"
        return clean(reason)
    if status == "failed":
        raise BackendError(
            f"ai backend: response failed: {_error_text(response.get('error'))}", kind="reply"
        )
    if status not in ("completed", None):
        raise BackendError(
            f"ai backend: response not finished (status {_short(status)})", kind="reply"
        )
    return "tool_calls" if calls else "stop"


def _call(item: Mapping[str, Any]) -> Call:
    call_id = item.get("call_id")
    if not isinstance(call_id, str):
        raise BackendError("ai backend: reply has a function_call without call_id", kind="reply")
    return Call.made(call_id, item.get("name"), item.get("arguments"))


def _reasoning_of(item: Mapping[str, Any]) -> tuple[str, str]:
    text = text_of(item.get("content"))
    if text:
        return text, "reasoning_text"
    text = text_of(item.get("summary"))
    return (text, "summary_text") if text else ("", "")


def _unknown_item(kind: Any) -> BackendError:
    return BackendError(
        f"ai backend: reply has an output item of unknown type {_short(kind)!r}", kind="reply"
    )


def parse_response(body: Any) -> Reply:
    """A Responses object as the Reply the loop reads (minimal objects are fine)."""
    if not isinstance(body, dict):
        raise BackendError("ai backend: reply is not a JSON object", kind="reply")
    output = body.get("output")
    if body.get("status") == "failed":
        _finish(body, False)
    error = error_object(body) if not output else None
    if error is not None:
        raise error_of(error, "reply")
    if not isinstance(output, list):
        raise BackendError(NO_OUTPUT, kind="reply")
    content: list[str] = []
    reasoning: list[str] = []
    source = ""
    calls: list[Call] = []
    for item in output:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind not in _KNOWN_ITEMS or not isinstance(item, dict):
            raise _unknown_item(kind)
        if kind == "message":
            content.append(_output_text(item))
        elif kind == "reasoning":
            text, name = _reasoning_of(item)
            if text:
                reasoning.append(text)
                source = source or name
        else:
            calls.append(_call(item))
    fingerprint = body.get("system_fingerprint")
    timings = server_timings(body)
    return Reply(
        content="".join(content),
        reasoning="".join(reasoning),
        reasoning_field=source,
        finish_reason=_finish(body, bool(calls)),
        tool_calls=calls,
        usage=with_timings(response_usage(body.get("usage")), timings),
        server_timings=timings,
        top_level=frozenset(k for k in body if isinstance(k, str)),
        system_fingerprint=fingerprint if isinstance(fingerprint, str) else "",
    )


def _output_text(item: Mapping[str, Any]) -> str:
    parts = item.get("content")
    if isinstance(parts, str):
        return clean(parts)
    if not isinstance(parts, list):
        return ""
    return text_of([p for p in parts if isinstance(p, dict) and p.get("type") != "refusal"])


def parse_response_body(content: bytes) -> Reply:
    """A Responses object as received; BackendError (reply) when it is not JSON."""
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):
        raise BackendError("ai backend: reply is not valid JSON", kind="reply") from None
    return parse_response(data)
