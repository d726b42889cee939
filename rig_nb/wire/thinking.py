"""Reasoning across turns: the thinking switch as sent, and replay.

A server kind's profile (`rig_nb.servers`) maps `RunRequest.thinking` to the fields it
reads on the chat-shaped wires (DESIGN.md, "Reasoning across turns"); `with_thinking`
merges them under the caller's `extra_body`, whose keys win, and returns what was really
sent. `replay_field` picks the field an assistant turn's reasoning goes back in (a
`Turn` puts it there). Servers read reasoning back under other names than they write it:
vLLM >= 0.20 reads only `reasoning` (vllm-project/vllm#38488), llama.cpp and DeepSeek
`reasoning_content`; MiniMax's template reads `<think>` inline.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "REPLAY_FIELDS",
    "applied_template",
    "REPLAY_MODES",
    "THINKING_EFFORTS",
    "check_replay",
    "check_thinking",
    "describe_sent",
    "inline_reasoning",
    "needs_kind",
    "replay_field",
    "replays",
    "with_thinking",
]

THINKING_EFFORTS = ("low", "medium", "high")
REPLAY_MODES = ("none", "tool_turns", "all")
REPLAY_FIELDS = ("auto", "reasoning_content", "reasoning", "thinking", "content")
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
# Names one switch goes by (top level, or inside chat_template_kwargs): a caller who sets
# any of them gets none of the others from the mapping. `reasoning` is the Responses
# API's (and OpenRouter's) effort object.
_SWITCHES = (
    frozenset({"reasoning_effort", "reasoning"}),
    frozenset({"thinking_budget_tokens", "thinking_token_budget"}),
)
_TEMPLATE_SWITCHES = (frozenset({"enable_thinking", "thinking"}),)


def _taken(name: str, given: Mapping[str, Any], switches: tuple[frozenset[str], ...]) -> bool:
    """Whether the caller's `given` keys already set the switch `name` belongs to."""
    if name in given:
        return True
    return any(name in names and not names.isdisjoint(given) for names in switches)


def check_thinking(thinking: Any) -> None:
    """ValueError unless `thinking` is None, a bool, an effort name or a token budget >= 0."""
    if thinking is None or isinstance(thinking, bool):
        return
    if isinstance(thinking, int):
        if thinking < 0:
            raise ValueError(f"thinking budget must be >= 0 tokens, got {thinking}")
        return
    if isinstance(thinking, str) and thinking in THINKING_EFFORTS:
        return
    raise ValueError(
        f"thinking must be None, True, False, {', '.join(map(repr, THINKING_EFFORTS))} "
        f"or a token budget (int >= 0), got {thinking!r}"
    )


def check_replay(mode: Any, field: Any) -> None:
    """ValueError for an unknown `reasoning_replay` or `reasoning_field`."""
    if not isinstance(mode, str) or mode not in REPLAY_MODES:
        raise ValueError(f"reasoning_replay must be one of {', '.join(REPLAY_MODES)}, got {mode!r}")
    if not isinstance(field, str) or field not in REPLAY_FIELDS:
        raise ValueError(
            f"reasoning_field must be one of {', '.join(REPLAY_FIELDS)}, got {field!r}"
        )


def with_thinking(
    mapped: Mapping[str, Any], extra: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(`extra` with the `mapped` fields merged under it, the mapped fields actually sent).

    A key the caller set wins, inside `chat_template_kwargs` too, and the mapping then
    sends nothing beside it for that switch (a caller's `reasoning` means no mapped
    `reasoning_effort`; a caller's `enable_thinking` no mapped `thinking`). What is not
    sent is not recorded as sent.
    """
    merged = dict(extra)
    sent: dict[str, Any] = {}
    for key, value in mapped.items():
        given = merged.get(key)
        if isinstance(value, Mapping) and (key not in merged or isinstance(given, Mapping)):
            inner = dict(given) if isinstance(given, Mapping) else {}
            added = {k: v for k, v in value.items() if not _taken(k, inner, _TEMPLATE_SWITCHES)}
            if added:
                merged[key] = {**added, **inner}
                sent[key] = added
        elif not _taken(key, extra, _SWITCHES):
            merged[key] = value
            sent[key] = value
    return merged, sent


def describe_sent(sent: Mapping[str, Any]) -> str:
    """The fields of `sent` as dotted names (`chat_template_kwargs.enable_thinking`), joined."""
    names: list[str] = []
    for key, value in sent.items():
        if isinstance(value, Mapping):
            names.extend(f"{key}.{inner}" for inner in value)
        else:
            names.append(key)
    return ", ".join(names)


def replays(mode: str, has_calls: bool) -> bool:
    """Whether an echoed assistant turn carries its reasoning back under `mode`."""
    return mode == "all" or (mode == "tool_turns" and has_calls)


def replay_field(setting: str, reply_field: str) -> str:
    """The field to send reasoning back in: the setting, else the field the reply used;
    "" when the wire picks it (`Wire.replay_field`)."""
    if setting != "auto":
        return setting
    if reply_field in ("reasoning_content", "reasoning", "thinking"):
        return reply_field
    return ""


def needs_kind(reply_field: str) -> bool:
    """Whether the wire's pick for a reply's reasoning depends on the server kind: a
    `reasoning_details` list or inline reasoning goes back in the kind's input field."""
    return reply_field in ("", "reasoning_details")


def inline_reasoning(raw_content: str, text: str) -> str:
    """The reasoning a reply carried inline: its content without the answer and the tags."""
    rest = raw_content
    kept = text.strip()
    if kept and rest.rstrip().endswith(kept):
        rest = rest.rstrip()[: -len(kept)]
    return rest.replace(_THINK_OPEN, "").replace(_THINK_CLOSE, "").strip()


def applied_template(content: bytes) -> str | None:
    """The `prompt` of llama-server's `/apply-template` answer, None when it has none."""
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):
        return None
    prompt = data.get("prompt") if isinstance(data, dict) else None
    return prompt if isinstance(prompt, str) else None
