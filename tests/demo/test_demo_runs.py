"""The demo endpoint: every persona's tool run and probe end as its table row promises."""

from __future__ import annotations

import inspect
import re
from typing import NamedTuple

import httpx
import pytest
from demo_requests import TEXT, loop, probe
from shared import DIALECT_PERSONAS, PERSONAS

from rig_nb import Client
from rig_nb.demo import DemoServer
from rig_nb.demo.dialect_personas import dialect_personas

RECORDED = {p for p in PERSONAS if p.endswith("-recorded")}


class Run(NamedTuple):
    """What one persona's demo run promises: the probe's verdict, then the tool loop's."""

    model: str
    verdict: str
    outcome: str
    ending: str
    leaks: list[list[str]]  # each iteration's
    shapes: set[str]  # the iterations' reasoning shapes
    calls: int


NONE: list[str] = []
TAG, HARMONY, MISTRAL = ["tool-call-tag"], ["harmony"], ["mistral-tool-calls"]
CALL, NO_CALL, LIMIT = "tool call", "NoToolCallingError", "IterationLimitError"
DEMO_RUNS = [
    Run("well-behaved", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("qwen3-no-parser", CALL, "ok", "answer", [NONE] * 3, {"unopened"}, 3),
    Run("r1-json-sketch", CALL, "ok", "answer", [NONE] * 3, {"closed"}, 3),
    Run(
        "budget-think",
        "OutputLimitError",
        "OutputLimitError",
        "length_in_reasoning",
        [NONE],
        {"unclosed"},
        0,
    ),
    Run("reasoning-field", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("ollama-reasoning", CALL, "reasoning_only", "reasoning_only", [NONE] * 3, {"none"}, 3),
    Run("hermes-text-tools", NO_CALL, TEXT, TEXT, [TAG], {"closed"}, 0),
    Run("tool-spinner", CALL, LIMIT, "tool_calls", [NONE] * 8, {"none"}, 8),
    Run("html-injector", CALL, "ok", "answer", [NONE] * 2, {"closed"}, 2),
    Run("gpt-oss-raw-harmony", NO_CALL, TEXT, TEXT, [HARMONY], {"none"}, 0),
    Run("gpt-oss-stripped-tokens", CALL, "ok", "answer", [HARMONY] * 3, {"none"}, 3),
    Run("qwen3-coder-text-calls", NO_CALL, TEXT, TEXT, [[*TAG, "function-tag"]], {"none"}, 0),
    Run("mistral-text-calls", NO_CALL, TEXT, TEXT, [MISTRAL], {"none"}, 0),
    Run("mistral-mlx-text-calls", NO_CALL, TEXT, TEXT, [MISTRAL], {"none"}, 0),
    Run("draft-then-call", CALL, "ok", "answer", [TAG] * 3, {"closed"}, 3),
    Run("answer-in-reasoning", CALL, "reasoning_only", "reasoning_only", [NONE] * 3, {"none"}, 3),
    Run("gateway-reasoning-details", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("minimax-xml-calls", NO_CALL, TEXT, TEXT, [["minimax-tool-calls"]], {"closed"}, 0),
    Run(
        "gemma4-text-calls",
        NO_CALL,
        TEXT,
        TEXT,
        [["gemma-channel", "gemma-tool-call"]],
        {"none"},
        0,
    ),
    Run("deepseek-v31-tokens", NO_CALL, TEXT, TEXT, [["deepseek-tool-calls"]], {"unopened"}, 0),
    Run(
        "kimi-calls-in-reasoning",
        NO_CALL,
        "tool_calls_in_reasoning",
        "tool_calls_in_reasoning",
        [NONE],
        {"none"},
        0,
    ),
    Run("gpt-oss-analysis-recipient", NO_CALL, TEXT, TEXT, [HARMONY], {"none"}, 0),
    Run("glm-markup-in-tool-name", CALL, "ok", "answer", [NONE] * 2, {"none"}, 2),
    Run("deepseek-thinking-tools", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("vllm-reads-reasoning", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("ignores-thinking-switch", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("honors-thinking-switch", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("vllm-json-in-reasoning", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("lmstudio-json-in-reasoning", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("vllm-json-thinking-off", CALL, "ok", "answer", [NONE] * 3, {"closed"}, 3),
    Run("schema-ignored", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("agent-shape-text-calls", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("ollama-truncates-silently", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("llama-context-error", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("cache-breaking-template", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("prefix-keyed-cache", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("crossed-streams", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    # The demo's tools hold no $ref, pattern, format, enum or object argument.
    Run("schema-rejecting", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("schema-fails-open", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("args-as-string", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("custom-tool-rejecting", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("system-turn-rejecting", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("ollama-ignores-tool-choice", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("sglang-ignores-parallel", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("ignores-limits", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    Run("rejects-stop", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    # Real llama-server replies: SmolLM2 under a Qwen3-style template that opens <think>.
    Run(
        "llama-server-deepseek-recorded",
        NO_CALL,
        "reasoning_only",
        "reasoning_only",
        [NONE],
        {"none"},
        0,
    ),
    Run(
        "llama-server-none-recorded",
        NO_CALL,
        "reasoning_only",
        "reasoning_only",
        [NONE],
        {"unclosed"},
        0,
    ),
    Run("llama-server-skip-recorded", NO_CALL, "ok", "answer", [NONE], {"none"}, 0),
    Run("smollm2-chatml-recorded", NO_CALL, "ok", "answer", [NONE], {"none"}, 0),
    Run("smollm2-recorded", CALL, LIMIT, "tool_calls", [NONE] * 8, {"none"}, 8),
]


def test_the_table_covers_every_persona(demo: DemoServer) -> None:
    assert [run.model for run in DEMO_RUNS] == demo.models == PERSONAS


@pytest.mark.parametrize("run", DEMO_RUNS, ids=[run.model for run in DEMO_RUNS])
def test_demo_run_ends_as_the_persona_promises(
    demo_client: Client, demo: DemoServer, run: Run
) -> None:
    model, verdict, outcome, ending, leaks, shapes, calls = run
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
