"""LM Studio.

Recognised by the model list's owner (`organization_owner`). Thinking is
`reasoning_effort`; `/api/v0/models/ID` gives the loaded context length; tool schemas
are held as llama.cpp holds them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from .base import BASE, Ask, Facts, Thinking, dig, window
from .llama_cpp import SCHEMA_DIALECT

__all__ = ["LM_STUDIO"]


def _facts(ask: Ask, model: str, listed: Mapping[str, Any], headers: Mapping[str, str]) -> Facts:
    loaded = ask(f"/api/v0/models/{quote(model, safe='')}", None)
    return Facts(None, window(dig(loaded, "loaded_context_length")))


LM_STUDIO = BASE.derive(
    "lm-studio",
    owners=frozenset({"organization_owner"}),
    thinking=Thinking((), effort_off=True),
    facts=_facts,
    # GGUF models run on llama.cpp, whose grammar rules apply (the unanchored `pattern`
    # refusal of kubernetes-mcp-server#758 was seen on LM Studio too).
    schema_dialect=SCHEMA_DIALECT,
    texts={
        "tool_choice_auto": "load a model whose template supports tool use (LM Studio marks "
        "them with a hammer) and keep the OpenAI-compatible server's tool parsing on",
        "reasoning_location": "turn on 'separate reasoning_content in API responses' in LM "
        "Studio's developer settings",
        "reasoning_replay": "this model's template drops earlier reasoning in LM Studio: pick a "
        'template that renders it, or RunRequest(reasoning_field="content") to put <think> '
        "back inline",
        "thinking_switch": "LM Studio ignores reasoning_effort on /v1 for some models "
        "(lmstudio-ai/lmstudio-bug-tracker#2413): turn thinking off in the model's settings",
        "structured_output:reasoning": "LM Studio constrains the reasoning stream "
        "(lmstudio-bug-tracker#1773): turn thinking off for structured requests or read the "
        "JSON from reasoning_content",
        "context_window": "load the model with a larger context length in LM Studio (its "
        "overflow policy otherwise cuts or garbles the conversation, lmstudio-bug-tracker#1806)",
        "tool_schemas:rejected": "LM Studio refused the tool list's schema (its llama.cpp "
        "engine refuses unanchored patterns: 'Pattern must start with ^ and end with $', "
        "kubernetes-mcp-server#758): send rig_nb.schemas.sanitize_tools(tools, "
        'server="lm-studio") (patterns anchored, $refs inlined)',
        "agent_clients:claude-code": "LM Studio's /v1/messages refuses a system turn inside "
        "messages (Claude Code 2.1.154 and later, as vllm-project/vllm#44000 and "
        "ollama/ollama#16372 report for vLLM and Ollama): update LM Studio, or pin Claude "
        "Code below 2.1.154",
    },
)
