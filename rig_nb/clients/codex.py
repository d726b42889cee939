"""OpenAI's Codex CLI (2026) on the Responses wire.

What it sends, each rule with its public source:
- a non-function tool beside the functions: `apply_patch` as `{"type": "custom", ...}`
  with a Lark grammar (a freeform tool), which llama-server refused with 400 "'type' of
  tool must be 'function'" (openai/codex#10635; ggml-org/llama.cpp#20156) until it
  skipped such tools (ggml-org/llama.cpp#23041).
- the stateless request: `instructions` (its base prompt), `store: false`, `include:
  ["reasoning.encrypted_content"]`, earlier items sent back without `id` and `status`
  (openai/codex#12669; proxies that forward Codex strip the ids too,
  decolua/9router#2930), `tool_choice: "auto"`, `parallel_tool_calls: false`, a
  `prompt_cache_key` fixed for the conversation, and `strict: false` on each function
  tool (the Responses function tool carries the field; the openai SDK's
  `FunctionToolParam` requires it) (openai/codex#12669).
"""

from __future__ import annotations

import uuid
from typing import Any

from ..wire import Request
from .profile import ClientProfile, Shape

__all__ = ["APPLY_PATCH", "CODEX", "INSTRUCTIONS"]

INSTRUCTIONS = (
    "You are Codex, a coding agent running in a terminal. Use the tools you are given; "
    "edit files with apply_patch."
)
_GRAMMAR = r"""start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?
hunk: add_hunk | delete_hunk | update_hunk
add_hunk: "*** Add File: " filename LF add_line+
delete_hunk: "*** Delete File: " filename LF
update_hunk: "*** Update File: " filename LF change_move? change?
filename: /(.+)/
add_line: "+" /(.*)/ LF -> line
change_move: "*** Move to: " filename LF
change: (change_context | change_line)+ eof_line?
change_context: ("@@" | "@@ " /(.+)/) LF
change_line: ("+" | "-" | " ") /(.*)/ LF
eof_line: "*** End of File" LF
%import common.LF
"""
APPLY_PATCH: dict[str, Any] = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Use the `apply_patch` tool to edit files. This is a FREEFORM tool, so do "
    "not wrap the patch in JSON.",
    "format": {"type": "grammar", "syntax": "lark", "definition": _GRAMMAR},
}
# What a stateless replay leaves out of every earlier item (openai/codex#12669).
_SERVER_KEPT = ("id", "status")


def _session() -> Shape:
    key = str(uuid.uuid4())

    def shape(body: dict[str, Any], request: Request) -> dict[str, Any]:
        out = dict(body)
        if not isinstance(out.get("instructions"), str):
            out["instructions"] = INSTRUCTIONS
        out["store"] = False
        out["include"] = ["reasoning.encrypted_content"]
        items = out.get("input")
        if isinstance(items, list):
            out["input"] = [
                {k: v for k, v in item.items() if k not in _SERVER_KEPT}
                if isinstance(item, dict)
                else item
                for item in items
            ]
        tools = [
            {**t, "strict": t.get("strict", False)} if t.get("type") == "function" else t
            for t in out.get("tools") or []
            if isinstance(t, dict)
        ]
        out["tools"] = [*tools, dict(APPLY_PATCH)]
        out["tool_choice"] = out.get("tool_choice", "auto")
        out["parallel_tool_calls"] = False
        out["prompt_cache_key"] = key
        return out

    return shape


CODEX = ClientProfile(
    "codex",
    "responses",
    (
        "openai/codex#10635",
        "openai/codex#12669",
        "ggml-org/llama.cpp#23041",
        "decolua/9router#2930",
    ),
    shaper=_session,
)
