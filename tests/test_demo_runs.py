"""The demo endpoint: every persona's tool run and probe end as its table row promises."""

from __future__ import annotations

import inspect
import re
from typing import Any

import httpx
import pytest
from demo_requests import TEXT, loop, probe
from shared import DIALECT_PERSONAS, PERSONAS

from rig_nb import (
    Client,
)
from rig_nb.demo import (
    DemoServer,
)
from rig_nb.demo.dialect_personas import dialect_personas

RECORDED = {p for p in PERSONAS if p.endswith("-recorded")}


def _row(
    model: str,
    verdict: str,
    outcome: str,
    ending: str,
    leaks: list[list[str]],
    shapes: set[str],
    calls: int,
) -> Any:
    return pytest.param(model, verdict, outcome, ending, leaks, shapes, calls, id=model)


NONE: list[str] = []
TAG, HARMONY, MISTRAL = ["tool-call-tag"], ["harmony"], ["mistral-tool-calls"]
CALL, NO_CALL, LIMIT = "tool call", "NoToolCallingError", "IterationLimitError"
DEMO_RUNS = [
    _row("well-behaved", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("qwen3-no-parser", CALL, "ok", "answer", [NONE] * 3, {"unopened"}, 3),
    _row("r1-json-sketch", CALL, "ok", "answer", [NONE] * 3, {"closed"}, 3),
    _row(
        "budget-think",
        "OutputLimitError",
        "OutputLimitError",
        "length_in_reasoning",
        [NONE],
        {"unclosed"},
        0,
    ),
    _row("reasoning-field", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("ollama-reasoning", CALL, "reasoning_only", "reasoning_only", [NONE] * 3, {"none"}, 3),
    _row("hermes-text-tools", NO_CALL, TEXT, TEXT, [TAG], {"closed"}, 0),
    _row("tool-spinner", CALL, LIMIT, "tool_calls", [NONE] * 8, {"none"}, 8),
    _row("html-injector", CALL, "ok", "answer", [NONE] * 2, {"closed"}, 2),
    _row("gpt-oss-raw-harmony", NO_CALL, TEXT, TEXT, [HARMONY], {"none"}, 0),
    _row("gpt-oss-stripped-tokens", CALL, "ok", "answer", [HARMONY] * 3, {"none"}, 3),
    _row("qwen3-coder-text-calls", NO_CALL, TEXT, TEXT, [[*TAG, "function-tag"]], {"none"}, 0),
    _row("mistral-text-calls", NO_CALL, TEXT, TEXT, [MISTRAL], {"none"}, 0),
    _row("mistral-mlx-text-calls", NO_CALL, TEXT, TEXT, [MISTRAL], {"none"}, 0),
    _row("draft-then-call", CALL, "ok", "answer", [TAG] * 3, {"closed"}, 3),
    _row("answer-in-reasoning", CALL, "reasoning_only", "reasoning_only", [NONE] * 3, {"none"}, 3),
    _row("gateway-reasoning-details", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("minimax-xml-calls", NO_CALL, TEXT, TEXT, [["minimax-tool-calls"]], {"closed"}, 0),
    _row(
        "gemma4-text-calls",
        NO_CALL,
        TEXT,
        TEXT,
        [["gemma-channel", "gemma-tool-call"]],
        {"none"},
        0,
    ),
    _row("deepseek-v31-tokens", NO_CALL, TEXT, TEXT, [["deepseek-tool-calls"]], {"unopened"}, 0),
    _row(
        "kimi-calls-in-reasoning",
        NO_CALL,
        "tool_calls_in_reasoning",
        "tool_calls_in_reasoning",
        [NONE],
        {"none"},
        0,
    ),
    _row("gpt-oss-analysis-recipient", NO_CALL, TEXT, TEXT, [HARMONY], {"none"}, 0),
    _row("glm-markup-in-tool-name", CALL, "ok", "answer", [NONE] * 2, {"none"}, 2),
    _row("deepseek-thinking-tools", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("vllm-reads-reasoning", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("ignores-thinking-switch", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("honors-thinking-switch", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("vllm-json-in-reasoning", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("lmstudio-json-in-reasoning", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("vllm-json-thinking-off", CALL, "ok", "answer", [NONE] * 3, {"closed"}, 3),
    _row("schema-ignored", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("agent-shape-text-calls", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("ollama-truncates-silently", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("llama-context-error", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("cache-breaking-template", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("crossed-streams", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    # Real llama-server replies: SmolLM2 under a Qwen3-style template that opens <think>.
    _row(
        "llama-server-deepseek-recorded",
        NO_CALL,
        "reasoning_only",
        "reasoning_only",
        [NONE],
        {"none"},
        0,
    ),
    _row(
        "llama-server-none-recorded",
        NO_CALL,
        "reasoning_only",
        "reasoning_only",
        [NONE],
        {"unclosed"},
        0,
    ),
    _row("llama-server-skip-recorded", NO_CALL, "ok", "answer", [NONE], {"none"}, 0),
    _row("smollm2-chatml-recorded", NO_CALL, "ok", "answer", [NONE], {"none"}, 0),
    _row("smollm2-recorded", CALL, LIMIT, "tool_calls", [NONE] * 8, {"none"}, 8),
]


def test_the_table_covers_every_persona(demo: DemoServer) -> None:
    assert [p.values[0] for p in DEMO_RUNS] == demo.models == PERSONAS


@pytest.mark.parametrize(
    ("model", "verdict", "outcome", "ending", "leaks", "shapes", "calls"), DEMO_RUNS
)
def test_demo_run_ends_as_the_persona_promises(
    demo_client: Client,
    demo: DemoServer,
    model: str,
    verdict: str,
    outcome: str,
    ending: str,
    leaks: list[list[str]],
    shapes: set[str],
    calls: int,
) -> None:
    assert probe(demo_client, model) == verdict
    got, trace = loop(demo_client, model)
    assert got == outcome
    assert trace.outcome == outcome
    assert trace.iterations[-1].ending == ending
    assert [it.leaks for it in trace.iterations] == leaks
    assert {it.reasoning_shape for it in trace.iterations} == shapes
    assert len(trace.tool_calls) == calls
    assert all("completion_tokens" in it.usage for it in trace.iterations)
    if model not in RECORDED:
        # The docstring is the promise: it names the ending and the outcome.
        doc = " ".join((inspect.getdoc(demo.personas[model]) or "").split())
        promise = re.search(r"Demo run: ends `(\w+)`[^;]*?, outcome (\w+)", doc)
        assert promise is not None, doc
        assert promise.groups() == (ending, outcome)


@pytest.mark.parametrize("model", DIALECT_PERSONAS)
def test_dialect_personas_name_their_public_source(demo: DemoServer, model: str) -> None:
    doc = inspect.getdoc(demo.personas[model]) or ""
    assert re.search(r"[\w-]+/[\w.-]+ ?(?:PR)?#\d+", doc), doc
    described = {
        m["id"]: m["description"]
        for m in httpx.get(f"{demo.base_url}/models", timeout=10).json()["data"]
    }
    assert described[model] == doc.splitlines()[0]
    assert [p.name for p in dialect_personas()] == DIALECT_PERSONAS
