"""The demo's family personas (rig_nb/demo/family_personas.py): recovery, reports, sources."""

from __future__ import annotations

import inspect
import json
import re

import pytest
from demo_requests import CALLS, loop

from rig_nb import Client
from rig_nb.demo import DemoServer
from rig_nb.demo.family_personas import family_personas

# Each persona's outcome once its calls run: Gemma 4's thought channel stays in its answer
# (split_reasoning reads no `<|channel>thought`), so the run is `leaked`, not ok.
RECOVERED = {
    "minimax-xml-calls": "ok",
    "gemma4-text-calls": "leaked",
    "deepseek-v31-tokens": "ok",
    "gpt-oss-analysis-recipient": "ok",
}


@pytest.mark.parametrize("model", RECOVERED)
def test_text_calls_of_every_family_run_when_recovered(demo_client: Client, model: str) -> None:
    _, trace = loop(demo_client, model, recover_text_tool_calls=True)
    assert trace.outcome == RECOVERED[model]
    calls = [(c.name, json.loads(c.arguments), c.source) for c in trace.tool_calls]
    assert calls == [(n, a, "text") for n, a in CALLS]


def test_calls_in_reasoning_are_reported_not_run(demo_client: Client) -> None:
    _, trace = loop(demo_client, "kimi-calls-in-reasoning", recover_text_tool_calls=True)
    (it,) = trace.iterations
    assert (it.ending, it.reasoning_leaks, it.tool_calls) == (
        "tool_calls_in_reasoning",
        ["kimi-tool-calls"],
        [],
    )


def test_markup_in_native_names_is_fed_back(demo_client: Client) -> None:
    _, trace = loop(demo_client, "glm-markup-in-tool-name", recover_text_tool_calls=False)
    first = trace.iterations[0]
    assert [c.name.split("<")[0] for c in first.tool_calls] == ["get_weather", "get_weather"]
    assert all(c.is_error and "holds markup" in c.result for c in first.tool_calls)
    assert trace.outcome == "ok"


@pytest.mark.parametrize("persona", family_personas(), ids=lambda p: p.name)
def test_family_personas_name_their_public_source(demo: DemoServer, persona: object) -> None:
    doc = inspect.getdoc(persona) or ""
    assert re.search(r"[\w-]+/[\w.-]+ ?(?:PR)?#\d+", doc), doc
    assert persona.name in demo.models  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("example", "leak"),
    [
        ("MiniMax-M2: <minimax:tool_call> XML calls", "minimax-tool-calls"),
        ("Gemma 4: <|tool_call>call:NAME{...}", "gemma-tool-call"),
        ("DeepSeek V3.1: tool-call tokens after </think>", "deepseek-tool-calls"),
        ("Kimi-K2-Thinking: a call before its reasoning closes", "kimi-tool-calls"),
        ("gpt-oss: a call from the analysis channel", "harmony"),
    ],
)
def test_leak_lab_shows_every_family(example: str, leak: str) -> None:
    from rig_nb.widgets import LeakLab

    lab = LeakLab()
    lab.examples.value = example
    assert leak in lab.leaks.value.split(", ")
    assert "get_weather" in lab.calls.value and "Lisbon" in lab.calls.value
    lab.close()
