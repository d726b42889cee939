"""Claude Code (2026) on the Anthropic Messages wire.

What it sends, each rule with its public source:
- `system` as text blocks with `cache_control`, the first an attribution line
  (`x-anthropic-billing-header: cc_version=...; cc_entrypoint=cli; cch=<hex>;`) whose
  `cch` nonce is fresh on every request, which busts a server's prefix cache each turn
  (anthropics/claude-code#68900; ollama/ollama#14918: 74-93 s a turn at 28K tokens;
  ggml-org/llama.cpp#20623 shows the blocks).
- since 2.1.154, a `system`-role turn inside `messages` (reminders, after the first user
  turn), refused with 400 by vLLM before 0.23, Ollama and LM Studio
  (vllm-project/vllm#44000, ollama/ollama#16372).
- `metadata.user_id`, since 2.1.78 a JSON string of the device, account and session ids
  (ding113/claude-code-hub#939).
- every tool's `input_schema` with a `$schema` key (draft-07), as the MCP SDK's
  zod-to-json-schema writes it and Claude Code passes it on (lgazo/drawio-mcp-server#51).
- thinking enabled with a budget (anthropics/claude-code#7351), one token under
  `max_tokens` and never under the API's least of 1024: a run with a smaller
  `max_tokens` sends 1025 (vLLM 0.32 refuses a budget under 1024 with 400, as
  tests/real/vllm saw), and `stream: true`, with a non-streaming fallback only when the
  stream fails (eugr/spark-vllm-docker#297 turns it off).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import uuid
from typing import Any

from ..wire import Request
from .profile import ClientProfile, Shape

__all__ = ["CLAUDE_CODE", "MIN_BUDGET", "REMINDER", "VERSION"]

VERSION = "2.1.154"
_IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
REMINDER = (
    "<system-reminder>\nAs you answer the user's questions, you can use the following "
    "context: the tools listed are available in this session.\n</system-reminder>"
)
_SCHEMA = "http://json-schema.org/draft-07/schema#"
# The least thinking budget the Messages API takes (vLLM 0.32 refuses less with 400
# "Input should be greater than or equal to 1024").
MIN_BUDGET = 1024
_EPHEMERAL = {"type": "ephemeral"}


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(str(b.get("text", "")) for b in value if isinstance(b, dict))
    return ""


def _session() -> Shape:
    session = str(uuid.uuid4())
    device = hashlib.sha256(session.encode()).hexdigest()
    user_id = json.dumps(
        {"device_id": device, "account_uuid": "", "session_id": session}, separators=(",", ":")
    )
    last = [""]

    def shape(body: dict[str, Any], request: Request) -> dict[str, Any]:
        nonce = secrets.token_hex(4)
        while nonce == last[0]:  # fresh on every request, the one before included
            nonce = secrets.token_hex(4)
        last[0] = nonce
        header = (
            f"x-anthropic-billing-header: cc_version={VERSION}; cc_entrypoint=cli; cch={nonce};"
        )
        blocks = [header, _IDENTITY]
        given = _text(body.get("system"))
        if given:
            blocks.append(given)
        out = dict(body)
        out["system"] = [
            {"type": "text", "text": t, "cache_control": dict(_EPHEMERAL)} for t in blocks
        ]
        turns = list(out.get("messages") or [])
        # The reminder turn goes right after the first user turn, as Claude Code puts it.
        at = next((i + 1 for i, m in enumerate(turns) if m.get("role") == "user"), len(turns))
        turns.insert(at, {"role": "system", "content": REMINDER})
        out["messages"] = turns
        if isinstance(out.get("tools"), list):
            out["tools"] = [
                {**t, "input_schema": {"$schema": _SCHEMA, **dict(t.get("input_schema") or {})}}
                for t in out["tools"]
            ]
        out["metadata"] = {"user_id": user_id}
        budget = max(request.max_tokens - 1, MIN_BUDGET)
        out["thinking"] = {"type": "enabled", "budget_tokens": budget}
        out["max_tokens"] = max(request.max_tokens, budget + 1)
        out["stream"] = True
        return out

    return shape


CLAUDE_CODE = ClientProfile(
    "claude-code",
    "messages",
    (
        "anthropics/claude-code#68900",
        "ollama/ollama#14918",
        "vllm-project/vllm#44000",
        "ollama/ollama#16372",
        "ding113/claude-code-hub#939",
        "lgazo/drawio-mcp-server#51",
        "anthropics/claude-code#7351",
    ),
    stream=True,
    shaper=_session,
)
