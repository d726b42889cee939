"""LeakLab without a browser: live scans of pasted replies, marked and escaped."""

from __future__ import annotations

import pytest
from widget_tree import html_values

from rig_nb import reasoning_shape
from rig_nb._html import (
    _marked,
    marked_reasoning_html,
    reasoning_spans,
    shown_chars,
)
from rig_nb.demo import XSS_IMG, XSS_SCRIPT
from rig_nb.widgets import LeakLab
from rig_nb.widgets.leak_lab import EXAMPLES


def test_leak_lab_is_escaped_and_live() -> None:
    lab = LeakLab()
    lab.input.value = f"</think>{XSS_SCRIPT}{XSS_IMG}"
    for value in html_values(lab):
        assert "<script" not in value.lower() and "<img" not in value.lower()
    assert "&lt;img" in lab.stripped.value
    assert lab.shape.value == "unopened"


@pytest.mark.parametrize(
    ("example", "shape", "decoded"),
    [
        pytest.param("bare </think>: the template consumed the opening tag", "unopened", None),
        pytest.param("unclosed <think>: the budget ran out while thinking", "unclosed", None),
        pytest.param(
            "R1: a JSON sketch in the reasoning, then the real JSON",
            "closed",
            {"country": "France", "capital": "Paris"},
        ),
    ],
)
def test_leak_lab_examples(example: str, shape: str, decoded: dict[str, str] | None) -> None:
    lab = LeakLab()
    lab.examples.value = example
    assert lab.input.value == EXAMPLES[example]
    assert lab.shape.value == shape
    assert lab.result == decoded
    if decoded is None:
        assert lab.decode_error.value.split(":")[0] in ("NotJSONError", "InvalidJSONError")
    else:
        assert lab.decode_error.value == "ok" and "&quot;Paris&quot;" in lab.decoded.value


def test_leak_lab_marks_what_strip_removes() -> None:
    lab = LeakLab("<think>a</think>b</think>c")
    assert lab.stripped.value.endswith(">c</pre>")
    assert "<del>&lt;think&gt;a&lt;/think&gt;b&lt;/think&gt;</del>c" in lab.marked.value
    s = "<think>a</think>b</think>c"
    assert reasoning_spans(s) == [(0, 25, True), (25, 26, False)]
    assert reasoning_spans("x<think>y") == [(0, 1, False), (1, 9, True)]
    assert reasoning_spans("<think>a</think>b<think>c") == [
        (0, 16, True),
        (16, 17, False),
        (17, 25, True),
    ]


BLOCK = "<think>a</think>b"


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(BLOCK * 20_000, id="blocks"),
        pytest.param("x</think>" + BLOCK * 20_000, id="bare-first"),
        pytest.param(BLOCK * 20_000 + "x</think>" + BLOCK * 100, id="bare-past-the-head"),
        pytest.param(BLOCK * 2_000 + "y</think>" + BLOCK * 20_000, id="bare-in-the-head"),
        pytest.param(BLOCK * 3_000 + "<think><think>n</think>" + BLOCK * 9_000, id="nested"),
        pytest.param("<b>&" * 10 + BLOCK * 20_000 + "<think>open", id="markup-unclosed"),
        pytest.param("c" * 99_990 + BLOCK * 10, id="cut-in-a-tag"),
        pytest.param("\x01" + BLOCK * 20_000, id="control-characters"),
    ],
)
def test_marking_agrees_with_the_spans_on_long_replies(raw: str) -> None:
    # The fast marking (C-level replaces, one search past the shown head) against the
    # span-by-span rendering, with and without the recorded shape.
    n = shown_chars(raw)
    assert n < len(raw)
    for shape in (None, reasoning_shape(raw)):
        html = marked_reasoning_html(raw, shape)
        assert _marked(raw, reasoning_spans(raw, n, shape)) in html
        assert "more characters not shown" in html


def test_leak_lab_names_dialects_and_recoverable_calls() -> None:
    lab = LeakLab()
    lab.examples.value = "Hermes/Qwen: a tool call written as text"
    assert lab.leaks.value == "tool-call-tag"
    assert "get_weather" in lab.calls.value and "Lisbon" in lab.calls.value
    lab.examples.value = "gpt-oss without a harmony parser"
    assert lab.leaks.value == "harmony"
    assert "get_weather" in lab.calls.value
    lab.examples.value = "a clean answer"
    assert (lab.leaks.value, lab.calls.value) == ("none", "<i>none</i>")
