"""LeakLab: paste a reply, see what the library makes of it, side by side.

strip_reasoning, reasoning_shape, leak_dialects, the tool calls that
`recover_text_tool_calls` would run, and decode_json_object, updated as you
type. Every output is escaped; long texts are cut for display only.
"""

from __future__ import annotations

import json
from typing import Any

import ipywidgets as widgets

from .._html import esc, marked_reasoning_html, pre, table_html
from ..content import decode_json_object, strip_with_shape, text_for_calls
from ..dialects import find_text_tool_calls, leak_dialects
from ..errors import RigError
from ..record import describe
from ._tree import close_tree

__all__ = ["EXAMPLES", "EXPLAIN", "LeakLab"]

# Reply shapes as reported from real servers (see field-reports.md).
EXAMPLES: dict[str, str] = {
    "closed <think> block, then the answer": (
        "<think>The user wants the capital of France. That is Paris.</think>\n\n"
        "The capital of France is Paris."
    ),
    "bare </think>: the template consumed the opening tag": (
        "Okay, the user asks for the capital of France. I remember it is Paris, "
        "no need to overthink this.\n</think>\n\nThe capital of France is Paris."
    ),
    "unclosed <think>: the budget ran out while thinking": (
        "<think>Let me work through 17 * 23 step by step. 17 * 20 = 340, and 17 * 3 ="
    ),
    "R1: a JSON sketch in the reasoning, then the real JSON": (
        '<think>I should answer with {"capital": ...}. Add the country too.</think>'
        'json{"country": "France", "capital": "Paris"}'
    ),
    "reasoning forced into a JSON grammar": (
        '{"{"role": "assistant", "content": "Okay, the user just said hi'
    ),
    "Hermes/Qwen: a tool call written as text": (
        '<think>\n\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": '
        '{"city": "Lisbon"}}\n</tool_call>'
    ),
    "gpt-oss without a harmony parser": (
        "<|channel|>analysis<|message|>User asks for the weather in Lisbon. Need the tool."
        "<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
        '<|constrain|>json<|message|>{"city": "Lisbon"}<|call|>'
    ),
    "gpt-oss with its special tokens stripped": (
        'analysisUser says "Hello World!" Respond politely.assistantfinalHello! '
        "How can I help you today?"
    ),
    "Qwen3-Coder: <function=...> as text": (
        "<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call>"
    ),
    "Mistral: [TOOL_CALLS] as text": '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
    "MiniMax-M2: <minimax:tool_call> XML calls": (
        "<think>\nThe user wants the weather in Lisbon.\n</think>\n\n<minimax:tool_call>\n"
        '<invoke name="get_weather">\n<parameter name="city">Lisbon</parameter>\n</invoke>\n'
        "</minimax:tool_call>"
    ),
    "Gemma 4: <|tool_call>call:NAME{...}": (
        "<|channel>thought\nNeed the weather tool.<channel|>"
        '<|tool_call>call:get_weather{city:<|"|>Lisbon<|"|>}<tool_call|>'
    ),
    "DeepSeek V3.1: tool-call tokens after </think>": (
        "The user wants the weather.</think><\uff5ctool\u2581calls\u2581begin\uff5c>"
        "<\uff5ctool\u2581call\u2581begin\uff5c>get_weather<\uff5ctool\u2581sep\uff5c>"
        '{"city": "Lisbon"}<\uff5ctool\u2581call\u2581end\uff5c>'
        "<\uff5ctool\u2581calls\u2581end\uff5c>"
    ),
    "Kimi-K2-Thinking: a call before its reasoning closes": (
        "<think>I need the weather in Lisbon. <|tool_calls_section_begin|><|tool_call_begin|>"
        'functions.get_weather:0<|tool_call_argument_begin|>{"city": "Lisbon"}<|tool_call_end|>'
        "<|tool_calls_section_end|>"
    ),
    "gpt-oss: a call from the analysis channel": (
        "<|channel|>analysis to=functions.get_weather <|constrain|>json<|message|>"
        '{"city": "Lisbon"}<|call|>'
    ),
    "markup in a reply (shown as text, never run)": (
        "</think>Done. <script>window.__rig_xss=1</script><img src=x onerror=alert(1)>"
    ),
    "a clean answer": "The capital of France is Paris.",
}
EXPLAIN = (
    "shape: which &lt;think&gt; rules strip_reasoning applied (closed block, unopened = a bare "
    "&lt;/think&gt;, unclosed = cut inside reasoning). leaks: other reasoning or tool-call "
    "markup in the reply (gpt-oss harmony, &lt;tool_call&gt;, [TOOL_CALLS], ...). recovered "
    "calls: what RunRequest(recover_text_tool_calls=True) would run, for declared tools only, "
    "never from inside closed reasoning (a call opener ends an unclosed block)."
)
_CALL_HEADER = ["dialect", "name", "arguments", "problem"]


def _column(title: str, body: Any, width: str = "33%") -> Any:
    return widgets.VBox(
        [widgets.HTML(value=f"<b>{esc(title)}</b>"), body],
        layout=widgets.Layout(width=width, padding="0 4px", min_width="0"),
    )


class LeakLab(widgets.VBox):  # type: ignore[misc]
    """Type or paste a reply; every result updates as you type."""

    def __init__(self, text: str = "") -> None:
        self.examples = widgets.Dropdown(
            options=["(your own text)", *EXAMPLES], value="(your own text)", description="Example"
        )
        self.input = widgets.Textarea(
            value=text,
            placeholder="Paste a model reply here",
            continuous_update=True,
            rows=8,
            layout=widgets.Layout(width="100%"),
        )
        self.shape = widgets.Label(value="")
        self.leaks = widgets.Label(value="")
        self.marked = widgets.HTML(value="")
        self.stripped = widgets.HTML(value="")
        self.decoded = widgets.HTML(value="")
        self.decode_error = widgets.Label(value="")
        self.calls = widgets.HTML(value="")
        self.result: dict[str, Any] | None = None
        super().__init__(
            [
                self.examples,
                self.input,
                widgets.HTML(value=f'<div style="font-size:11px;color:#666">{EXPLAIN}</div>'),
                widgets.HBox([widgets.Label(value="reasoning_shape:"), self.shape]),
                widgets.HBox([widgets.Label(value="leak_dialects:"), self.leaks]),
                widgets.HBox(
                    [
                        _column("raw (struck through: removed)", self.marked),
                        _column("strip_reasoning", self.stripped),
                        _column(
                            "decode_json_object", widgets.VBox([self.decode_error, self.decoded])
                        ),
                    ],
                    layout=widgets.Layout(width="100%"),
                ),
                _column("tool calls recovered from the text", self.calls, width="100%"),
            ]
        )
        self.input.observe(lambda _change: self.update(), names="value")
        self.examples.observe(self._on_example, names="value")
        self.update()

    def _on_example(self, change: dict[str, Any]) -> None:
        if change["new"] in EXAMPLES:
            self.input.value = EXAMPLES[change["new"]]

    def update(self) -> None:
        """Recompute every output from the input (called on each edit)."""
        text = str(self.input.value)
        stripped, self.shape.value = strip_with_shape(text)
        self.leaks.value = ", ".join(leak_dialects(text)) or "none"
        self.marked.value = marked_reasoning_html(text, self.shape.value)
        self.stripped.value = pre(stripped)
        found = find_text_tool_calls(text_for_calls(text))
        if found:
            rows = [[c.dialect, c.name, c.arguments, c.error] for c in found]
            styles = [["white-space:pre-wrap;word-break:break-word"] * 4 for _ in rows]
            self.calls.value = table_html(_CALL_HEADER, rows, styles)
        else:
            self.calls.value = "<i>none</i>"
        try:
            # decode_json_object strips first; the stripped text strips to itself.
            self.result = decode_json_object(stripped)
        except RigError as exc:
            self.result = None
            self.decode_error.value = describe(exc)
            self.decoded.value = ""
        else:
            self.decode_error.value = "ok"
            self.decoded.value = pre(json.dumps(self.result, indent=2, ensure_ascii=False))

    def close(self) -> None:
        close_tree(self)  # Box.close leaves its children open: a closed view must free them
        super().close()
