"""What the dialect tests share: a tagged call, a call a scan returns, decoder work counted,
each family's call opener left unclosed (benchmarks/dialects.py times the same replies)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rig_nb import RunRequest
from rig_nb.demo import demo_tools
from rig_nb.dialects import TextToolCall
from rig_nb.dialects import _call_json as call_json
from rig_nb.dialects import scan as dialect_scan
from rig_nb.loop import run_trace
from rig_nb.testing import ScriptedBackend, chat_reply
from rig_nb.trace import Trace

if TYPE_CHECKING:  # the benchmark imports this module without pytest
    import pytest

BAR = "\uff5c"  # DeepSeek's fullwidth vertical bar
# Each family's call opener, written once (or repeated) before the rest of the reply.
OPENERS = {
    "gemma": "<|tool_call>call:get_time{",
    "hermes": '<tool_call>{"name": "f", "arguments": {',
    "glm": "<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>",
    "qwen3-coder": "<function=f>\n<parameter=a>\n",
    "mistral v11": "[TOOL_CALLS]f[ARGS]{",
    "mistral array": '[TOOL_CALLS][{"name": "f", "arguments": {',
    "kimi": "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0"
    "<|tool_call_argument_begin|>{",
    "harmony": "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json"
    "<|message|>{",
    "minimax m2": '<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">',
    "minimax m3": ']<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="f">]<]minimax[>[<a>',
    "deepseek v3.1": f"<{BAR}tool\u2581calls\u2581begin{BAR}><{BAR}tool\u2581call\u2581begin{BAR}>f"
    f"<{BAR}tool\u2581sep{BAR}>{{",
    "deepseek r1": f"<{BAR}tool\u2581call\u2581begin{BAR}>function<{BAR}tool\u2581sep{BAR}>f\n"
    "```json\n{",
    "dsml": f'<{BAR}DSML{BAR}function_calls>\n<{BAR}DSML{BAR}invoke name="f">\n'
    f'<{BAR}DSML{BAR}parameter name="a" string="true">',
}
# Gemma's arguments inside a string that is never closed (issue 35).
GEMMA_STRING = OPENERS["gemma"] + 'city:<|"|>'
# What follows the opener, to the size: (start, unit repeated, end).
TAILS = {
    "bare letters": ("", "a", ""),
    "unclosed string": ('"', "a", ""),
    "nested braces": ("", '{"a":', ""),
}
_TOOLS = demo_tools()


def tagged(name: str, arguments: str) -> str:
    """A call in the `<tool_call>` JSON dialect."""
    return f'<tool_call>{{"name": "{name}", "arguments": {arguments}}}</tool_call>'


def want(dialect: str, name: str, arguments: str = "{}", error: str = "") -> TextToolCall:
    """The TextToolCall a scan is expected to return."""
    return TextToolCall(dialect, name, arguments, error)


class DecoderCount:
    """The characters the scanners hand the JSON decoder, in `handed` (set 0 to restart)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.handed = 0
        scan_once = call_json.scan_once

        def counting(s: str, start: int) -> tuple[Any, int]:
            self.handed += len(s) - start
            return scan_once(s, start)

        for module in (call_json, dialect_scan):
            monkeypatch.setattr(module, "scan_once", counting)


def opened(head: str, unit: str, tail: str, size: int) -> str:
    """`size` characters: `head`, then `unit` repeated (the last one cut), then `tail`."""
    body = unit * ((size - len(head) - len(tail)) // len(unit) + 1)
    return head + body[: size - len(head) - len(tail)] + tail


def decide_ending(content: str) -> Trace:
    """The loop's run of one reply of `content` (then "done") on an in-process backend."""
    backend = ScriptedBackend([chat_reply(content), chat_reply("done")])
    return run_trace(backend, RunRequest("m", 64, prompt="go", tools=_TOOLS))
