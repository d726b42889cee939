"""Text tool calls as the dialect tests write them: a tagged call, and a call a scan returns."""

from __future__ import annotations

from rig_nb.dialects import TextToolCall

BAR = "\uff5c"  # DeepSeek's fullwidth vertical bar


def tagged(name: str, arguments: str) -> str:
    """A call in the `<tool_call>` JSON dialect."""
    return f'<tool_call>{{"name": "{name}", "arguments": {arguments}}}</tool_call>'


def want(dialect: str, name: str, arguments: str = "{}", error: str = "") -> TextToolCall:
    """The TextToolCall a scan is expected to return."""
    return TextToolCall(dialect, name, arguments, error)
