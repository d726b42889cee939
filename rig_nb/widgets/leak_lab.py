"""LeakLab: paste a reply, see strip_reasoning, reasoning_shape and decode_json_object at once."""

from __future__ import annotations

import json
from typing import Any

import ipywidgets as widgets

from ..content import decode_json_object, reasoning_shape, strip_reasoning
from ..errors import RigError
from .render import marked_reasoning_html, pre

__all__ = ["EXAMPLES", "LeakLab"]

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
    "markup in a reply (shown as text, never run)": (
        "</think>Done. <script>window.__rig_xss=1</script><img src=x onerror=alert(1)>"
    ),
    "a clean answer": "The capital of France is Paris.",
}


def _column(title: str, body: Any) -> Any:
    return widgets.VBox(
        [widgets.HTML(value=f"<b>{title}</b>"), body],
        layout=widgets.Layout(width="33%", padding="0 4px"),
    )


class LeakLab(widgets.VBox):  # type: ignore[misc]
    """Type or paste a reply; the three functions' results update as you type."""

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
        self.marked = widgets.HTML(value="")
        self.stripped = widgets.HTML(value="")
        self.decoded = widgets.HTML(value="")
        self.decode_error = widgets.Label(value="")
        self.result: dict[str, Any] | None = None
        super().__init__(
            [
                self.examples,
                self.input,
                widgets.HBox([widgets.Label(value="reasoning_shape:"), self.shape]),
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
        self.shape.value = reasoning_shape(text)
        self.marked.value = marked_reasoning_html(text)
        self.stripped.value = pre(strip_reasoning(text))
        try:
            self.result = decode_json_object(text)
        except RigError as exc:
            self.result = None
            self.decode_error.value = f"{type(exc).__name__}: {exc}"
            self.decoded.value = ""
        else:
            self.decode_error.value = "ok"
            self.decoded.value = pre(json.dumps(self.result, indent=2, ensure_ascii=False))
