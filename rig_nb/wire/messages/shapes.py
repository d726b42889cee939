"""The Anthropic Messages API's shapes (`/messages`): a `Request` as a Messages request, and
a Messages reply as the same `Reply` every wire gives.

Requests: `system`, `messages` of user/assistant turns whose content is a list of blocks
(an echoed assistant turn: thinking blocks first, with their signature unchanged, then
redacted_thinking, text, tool_use with `input` an object, `{}` for arguments that never
formed one; a reply's tool results in one user turn, in call
order), `{name, description, input_schema}` tools, the `thinking` switch (its budget held
to `max_tokens - 1`). Replies: `content` blocks `text`, `thinking`, `redacted_thinking`
and `tool_use`; `stop_reason` as chat's finish reason; usage with the cached part of the
prompt counted in. Streams are `stream.py`'s; the `Wire` is `wire.py`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ...errors import BackendError
from ...usage import count_of as _int
from ...usage import kept_count
from ..base import Reply
from ..error_objects import error_object, error_of
from ..request_fields import check_extra_body, check_response_format
from ..text import clean
from ..turns import Call

if TYPE_CHECKING:
    from ..turns import Request, Turn

__all__ = [
    "ANTHROPIC_VERSION",
    "KNOWN_BLOCKS",
    "THINKING_BUDGETS",
    "call_of",
    "finish_of",
    "held_thinking",
    "input_text",
    "messages_body",
    "messages_thinking",
    "parse_message",
    "parse_message_body",
    "unknown_block",
    "usage_of",
]

ANTHROPIC_VERSION = "2023-06-01"
KNOWN_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "tool_use"})
# The budget `thinking=True` or an effort asks for; True is medium.
THINKING_BUDGETS = {"low": 1024, "medium": 4096, "high": 16384}
_TOOL_CHOICES = {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}
# stop_reason -> chat's finish_reason (model_context_window_exceeded also marks the cut).
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "model_context_window_exceeded": "length",
}


def messages_thinking(thinking: bool | str | int | None) -> dict[str, Any]:
    """The `thinking` field for `RunRequest.thinking` ({} for None); the budget is held
    to the request's `max_tokens - 1` when the body is built."""
    if thinking is None:
        return {}
    if thinking is False:
        return {"thinking": {"type": "disabled"}}
    if isinstance(thinking, bool):
        budget = THINKING_BUDGETS["medium"]
    elif isinstance(thinking, str):
        budget = THINKING_BUDGETS[thinking]
    else:
        budget = thinking
    return {"thinking": {"type": "enabled", "budget_tokens": budget}}


def _held(thinking: Any, max_tokens: int) -> Any:
    """`thinking` with an enabled budget held to `max_tokens - 1` (no lower bound)."""
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled":
        return thinking
    budget = thinking.get("budget_tokens")
    if isinstance(budget, int) and not isinstance(budget, bool) and budget > max_tokens - 1:
        return {**thinking, "budget_tokens": max(max_tokens - 1, 0)}
    return thinking


def held_thinking(fields: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """`fields` with the `thinking` budget held to `max_tokens - 1`."""
    if "thinking" not in fields:
        return fields
    return {**fields, "thinking": _held(fields["thinking"], max_tokens)}


def _assistant_blocks(turn: Turn) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    text = turn.text
    if turn.reasoning and turn.reasoning_field == "content":
        text = turn.inline_text()
    elif turn.reasoning and turn.reasoning_field:
        blocks.append({"type": "thinking", "thinking": turn.reasoning, "signature": turn.signature})
    blocks.extend({"type": "redacted_thinking", "data": data} for data in turn.redacted)
    if text:
        blocks.append({"type": "text", "text": text})
    blocks.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.as_object()} for c in turn.calls
    )
    return blocks


def _messages(turns: Iterable[Turn]) -> tuple[str | None, list[dict[str, Any]]]:
    """(system, messages): system turns joined; tool results and user text are user turns,
    consecutive turns of one role merged (the API alternates user and assistant)."""
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    for turn in turns:
        if turn.role == "system":
            system.append(turn.text)
            continue
        role = "assistant" if turn.role == "assistant" else "user"
        if turn.role == "assistant":
            blocks = _assistant_blocks(turn)
        elif turn.role == "tool":
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": turn.call_id,
                "content": turn.text,
            }
            if turn.is_error:
                result["is_error"] = True
            blocks = [result]
        else:
            blocks = [{"type": "text", "text": turn.text}]
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
    return ("\n\n".join(system) if system else None), messages


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, str) and choice in _TOOL_CHOICES:
        return dict(_TOOL_CHOICES[choice])
    if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        return {"type": "tool", "name": choice["function"].get("name")}
    return choice


# The tool_choice types that take `disable_parallel_tool_use` ("none" does not).
_PARALLEL_CHOICES = frozenset({"auto", "any", "tool"})


def _parallel(choice: Any, parallel: bool | None) -> Any:
    """`choice` with `disable_parallel_tool_use` set from `parallel_tool_calls` (Messages has
    no parallel_tool_calls; its tool_choice carries the switch): an unset choice becomes
    `auto`, and a `none` choice (no calls at all) takes no switch."""
    if parallel is None:
        return choice
    if choice is None:
        choice = {"type": "auto"}
    if not isinstance(choice, Mapping) or choice.get("type") not in _PARALLEL_CHOICES:
        return choice
    return {**choice, "disable_parallel_tool_use": not parallel}


def messages_body(request: Request) -> dict[str, Any]:
    """The Messages request for `request`; extra fields go out as they are, but what the
    wire renders wins, and an enabled thinking budget is held to `max_tokens - 1`."""
    system, messages = _messages(request.turns)
    body: dict[str, Any] = {"model": request.model, "max_tokens": request.max_tokens}
    if system is not None:
        body["system"] = system
    body["messages"] = messages
    if request.temperature != 0:
        body["temperature"] = request.temperature
    if request.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
            for t in request.tools
        ]
        choice = _tool_choice(request.tool_choice) if request.tool_choice is not None else None
        body_choice = _parallel(choice, request.parallel_tool_calls)
        if body_choice is not None:
            body["tool_choice"] = body_choice
    if request.stop:
        body["stop_sequences"] = list(request.stop)
    if request.stream:
        body["stream"] = True
    extra = check_extra_body(request.extra)
    formatted = check_response_format(request.response_format)
    if formatted is not None:
        body["response_format"] = formatted
    for key, value in extra.items():
        if key not in body:
            body[key] = value
    if "thinking" in body:
        body["thinking"] = _held(body["thinking"], request.max_tokens)
    return body


def usage_of(raw: Any) -> dict[str, int]:
    """Messages usage in the names the trace keeps: prompt tokens count the cached part
    (Anthropic's `input_tokens` leaves it out); cached and cache-write tokens when given."""
    usage: dict[str, int] = {}
    if not isinstance(raw, Mapping):
        return usage
    given = _int(raw.get("input_tokens"))
    read = _int(raw.get("cache_read_input_tokens"))
    written = _int(raw.get("cache_creation_input_tokens"))
    if given is not None:
        # The cached parts count only when they are counts a server means: a negative one
        # would shrink the prompt (and read as a cut), an absurd one swamp it.
        usage["prompt_tokens"] = given + (kept_count(read) or 0) + (kept_count(written) or 0)
    output = _int(raw.get("output_tokens"))
    if output is not None:
        usage["completion_tokens"] = output
    if read is not None:
        usage["cached_tokens"] = read
    if written is not None:
        usage["cache_write_tokens"] = written
    return usage


def _short(value: Any) -> str:
    return clean(value)[:60] if isinstance(value, str) else type(value).__name__


def unknown_block(kind: Any) -> BackendError:
    return BackendError(
        f"ai backend: reply has a content block of unknown type {_short(kind)!r}", kind="reply"
    )


def finish_of(stop_reason: Any, calls: bool) -> tuple[str, bool]:
    """(chat finish reason, context cut) for a stop_reason; BackendError for `pause_turn`."""
    if stop_reason == "pause_turn":
        raise BackendError(
            "ai backend: the server paused the turn (stop_reason pause_turn): "
            "the reply is unfinished and rig_nb does not resume it",
            kind="reply",
        )
    finish = _FINISH.get(stop_reason) if isinstance(stop_reason, str) else None
    if finish is not None:
        return finish, stop_reason == "model_context_window_exceeded"
    if isinstance(stop_reason, str) and stop_reason:
        return clean(stop_reason), False  # the recording redacts it, then cuts it
    return ("tool_calls" if calls else "stop"), False


def call_of(block: Mapping[str, Any], arguments: str) -> Call:
    """A tool_use block as a `Call`."""
    return Call.made(block.get("id"), block.get("name"), arguments)


def input_text(value: Any) -> str:
    """A tool_use `input` as JSON text: an object dumped; a string (not an object, as some
    servers send) as it is, for the loop to report."""
    if isinstance(value, str):
        return value
    if value is None:
        return "{}"
    return json.dumps(value, ensure_ascii=False)


def parse_message(body: Any) -> Reply:
    """A Messages reply object as the Reply the loop reads."""
    if not isinstance(body, dict):
        raise BackendError("ai backend: reply is not a JSON object", kind="reply")
    error = error_object(body)
    if error is not None:
        raise error_of(error, "reply")
    blocks = body.get("content")
    if not isinstance(blocks, list):
        raise BackendError("ai backend: reply has no content blocks", kind="reply")
    content: list[str] = []
    reasoning: list[str] = []
    signature = ""
    redacted: list[str] = []
    calls: list[Call] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind not in KNOWN_BLOCKS or not isinstance(block, dict):
            raise unknown_block(kind)
        if kind == "text" and isinstance(block.get("text"), str):
            content.append(block["text"])
        elif kind == "thinking":
            if isinstance(block.get("thinking"), str):
                reasoning.append(block["thinking"])
            # The last thinking block's, as the stream reads it ("" when it has none).
            signed = block.get("signature")
            signature = signed if isinstance(signed, str) else ""
        elif kind == "redacted_thinking" and isinstance(block.get("data"), str):
            redacted.append(block["data"])
        elif kind == "tool_use":
            calls.append(call_of(block, input_text(block.get("input"))))
    finish, cut = finish_of(body.get("stop_reason"), bool(calls))
    text = clean("".join(reasoning))
    return Reply(
        content=clean("".join(content)),
        reasoning=text,
        reasoning_field="thinking" if text else "",
        finish_reason=finish,
        tool_calls=calls,
        usage=usage_of(body.get("usage")),
        context_cut=cut,
        top_level=frozenset(k for k in body if isinstance(k, str)),
        reasoning_signature=signature,
        reasoning_redacted=redacted,
    )


def parse_message_body(content: bytes) -> Reply:
    """A Messages reply as received; BackendError (reply) when it is not JSON."""
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):
        raise BackendError("ai backend: reply is not valid JSON", kind="reply") from None
    return parse_message(data)
