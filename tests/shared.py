"""Names and tools shared by several test modules (pinned lists: a new persona shows up here)."""

from __future__ import annotations

from typing import Any

from rig_nb import Tool

DIALECT_PERSONAS = [
    "gpt-oss-raw-harmony",
    "gpt-oss-stripped-tokens",
    "qwen3-coder-text-calls",
    "mistral-text-calls",
    "mistral-mlx-text-calls",
    "draft-then-call",
    "answer-in-reasoning",
    "gateway-reasoning-details",
]
FAMILY_PERSONAS = [
    "minimax-xml-calls",
    "gemma4-text-calls",
    "deepseek-v31-tokens",
    "kimi-calls-in-reasoning",
    "gpt-oss-analysis-recipient",
    "glm-markup-in-tool-name",
]
REASONING_PERSONAS = [
    "deepseek-thinking-tools",
    "vllm-reads-reasoning",
    "ignores-thinking-switch",
    "honors-thinking-switch",
]
EVALUATION_PERSONAS = [
    "vllm-json-in-reasoning",
    "lmstudio-json-in-reasoning",
    "vllm-json-thinking-off",
    "schema-ignored",
    "agent-shape-text-calls",
]
CONTEXT_PERSONAS = [
    "ollama-truncates-silently",
    "llama-context-error",
    "cache-breaking-template",
    "prefix-keyed-cache",
]
LOAD_PERSONAS = ["crossed-streams"]
SCHEMA_PERSONAS = ["schema-rejecting", "schema-fails-open", "args-as-string"]
CLIENT_PERSONAS = ["custom-tool-rejecting", "system-turn-rejecting"]
PARAM_PERSONAS = [
    "ollama-ignores-tool-choice",
    "sglang-ignores-parallel",
    "ignores-limits",
    "rejects-stop",
]
PERSONAS = [
    "well-behaved",
    "qwen3-no-parser",
    "r1-json-sketch",
    "budget-think",
    "reasoning-field",
    "ollama-reasoning",
    "hermes-text-tools",
    "tool-spinner",
    "html-injector",
    *DIALECT_PERSONAS,
    *FAMILY_PERSONAS,
    *REASONING_PERSONAS,
    *EVALUATION_PERSONAS,
    *CONTEXT_PERSONAS,
    *LOAD_PERSONAS,
    *SCHEMA_PERSONAS,
    *CLIENT_PERSONAS,
    *PARAM_PERSONAS,
    "llama-server-deepseek-recorded",
    "llama-server-none-recorded",
    "llama-server-skip-recorded",
    "smollm2-chatml-recorded",
    "smollm2-recorded",
]


def _echo(args: dict[str, Any]) -> str:
    return f"echo {args['text']}"


ECHO = Tool(
    "echo",
    "Echo the text back.",
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    _echo,
)


# The doctor's checks with a real-tier test of their own (test_real_tool_schemas.py,
# test_real_honored_params.py, test_real_agent_clients.py and vLLM's): a whole report on a
# llama.cpp server or LiteLLM leaves them out, 18 slow model requests a report fewer.
OWN_REAL_TESTS = ("tool_schemas", "honored_params", "agent_clients")


def report_checks() -> list[str]:
    """The checks a whole report on a real llama.cpp server or proxy asks for."""
    from rig_nb.capabilities import CHECKS

    return [c for c in CHECKS if c not in OWN_REAL_TESTS]


def doctor_model_requests() -> int:
    """endpoint_report's bound on model requests: DESIGN's 18 (the probes 3, the question 1,
    both streamed 2, reasoning_replay 3, thinking_switch 2, structured_output 1,
    context_window 1, prefix_cache 1, api_parity 2 over the second wire), concurrency's four
    at once, api_parity's two over each further wire, prefix_cache's third turn (issue 45),
    and round 5's tool_schemas, honored_params and agent_clients."""
    from rig_nb.capabilities import CHECKS
    from rig_nb.capabilities.concurrency import CONCURRENT_PROBES
    from rig_nb.wire import WIRES

    return (
        18
        + CONCURRENT_PROBES
        + 2 * (len(WIRES) - 2)
        + 1
        + CHECKS["tool_schemas"]
        + CHECKS["honored_params"]
        + CHECKS["agent_clients"]
    )
