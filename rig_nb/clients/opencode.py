"""opencode (2026) on the chat completions wire.

What it sends, each rule with its public source:
- earlier reasoning sent back as `reasoning` on assistant messages (its `interleaved`
  field set to `reasoning`, the name vLLM reads since it dropped `reasoning_content`:
  anomalyco/opencode#19988, anomalyco/opencode#13130).
- `tool_choice: "auto"` with its tools, and `stream: true`: the request of the AI SDK's
  openai-compatible provider, which streams every turn (anomalyco/opencode#13130 shows
  one).
"""

from __future__ import annotations

from typing import Any

from ..wire import Request
from .profile import ClientProfile, Shape

__all__ = ["OPENCODE"]

# Where other clients put it; opencode sends it back under `reasoning` alone.
_OTHER_FIELDS = ("reasoning_content",)


def _assistant(message: dict[str, Any]) -> dict[str, Any]:
    out = dict(message)
    for name in _OTHER_FIELDS:
        text = out.pop(name, None)
        if isinstance(text, str) and text and not out.get("reasoning"):
            out["reasoning"] = text
    return out


def _session() -> Shape:
    def shape(body: dict[str, Any], request: Request) -> dict[str, Any]:
        out = dict(body)
        messages = out.get("messages")
        if isinstance(messages, list):
            out["messages"] = [
                _assistant(m) if isinstance(m, dict) and m.get("role") == "assistant" else m
                for m in messages
            ]
        if out.get("tools"):
            out["tool_choice"] = "auto"
        out["stream"] = True
        return out

    return shape


OPENCODE = ClientProfile(
    "opencode",
    "chat",
    ("anomalyco/opencode#19988", "anomalyco/opencode#13130"),
    stream=True,
    replay_field="reasoning",
    shaper=_session,
)
