"""SGLang.

Recognised by the model list's owner (`sglang`). Thinking as vLLM's (`chat_template_kwargs`
`enable_thinking` and `thinking`, a budget as `thinking_token_budget`);
`/get_server_info` gives the version and the context length.
parallel_tool_calls=false is accepted and not enforced (sgl-project/sglang#37157).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import ANY_CHAR, BASE, Ask, Facts, SchemaDialect, Thinking, dig, listed_window, window

__all__ = ["SGLANG"]


def _facts(ask: Ask, model: str, listed: Mapping[str, Any], headers: Mapping[str, str]) -> Facts:
    info = ask("/get_server_info", None)
    stated = window(dig(info, "context_length"))
    return Facts(dig(info, "version"), stated if stated is not None else listed_window(listed))


SGLANG = BASE.derive(
    "sglang",
    owners=frozenset({"sglang"}),
    thinking=Thinking(
        ("enable_thinking", "thinking"), effort_off=False, budget_key="thinking_token_budget"
    ),
    facts=_facts,
    # xgrammar (their default structured-outputs backend) matches a pattern whole.
    schema_dialect=SchemaDialect(anchor=ANY_CHAR, sources=("mlc-ai/xgrammar#838",)),
    texts={
        "honored_params:parallel_tool_calls=false": "SGLang does not enforce "
        "parallel_tool_calls=false (sgl-project/sglang#37157): run one call per reply on the "
        "client (the loop runs them in order) or say so in the system prompt",
        "tool_choice_auto": "start SGLang with --tool-call-parser <parser for the model>",
        "reasoning_location": "start SGLang with --reasoning-parser <parser for the model>",
        "concurrency": "SGLang runs at most --max-running-requests at once: raise it if "
        "requests queue",
        "reasoning_replay": "the model's template drops earlier reasoning: send "
        "chat_template_kwargs.preserve_thinking: true where the template supports it (Qwen3.6)",
        "thinking_switch": "start SGLang with the model's --reasoning-parser, and check that its "
        "template reads chat_template_kwargs.enable_thinking",
        "context_window": "start SGLang with a larger --context-length",
        "prefix_cache": "keep RadixAttention on (no --disable-radix-cache); a template that "
        "drops earlier reasoning re-renders the history: chat_template_kwargs.preserve_thinking: "
        "true",
    },
)
