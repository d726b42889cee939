"""A LiteLLM proxy.

Recognised by an `x-litellm-*` response header, the model list's owner (`litellm`), or a
model list whose every entry has LiteLLM's fixed creation time (its proxy lists models
with `created` 1677610602, its DEFAULT_MODEL_CREATED_AT_TIME, and owned_by the provider:
"openai" for its openai/ provider). Thinking is `reasoning_effort`, which it maps per
provider. Its version comes from `x-litellm-version` (else `/health/readiness`), the window
from `/model/info`'s `max_input_tokens`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import BASE, Ask, Facts, Thinking, dig, window

__all__ = ["LITELLM"]

_CREATED = 1677610602


def _headers_say(headers: Mapping[str, str]) -> bool:
    return any(k.startswith("x-litellm") for k in headers)


def _models_say(items: list[dict[str, Any]]) -> bool:
    # OpenAI gives that time to gpt-3.5-turbo alone.
    return (
        bool(items)
        and all(m.get("created") == _CREATED for m in items)
        and any(m.get("id") != "gpt-3.5-turbo" for m in items)
    )


def _window(info: Any, model: str) -> int | None:
    entries = dig(info, "data")
    if not isinstance(entries, list):
        return None
    for entry in entries[:1000]:
        if isinstance(entry, dict) and entry.get("model_name") == model:
            return window(dig(entry, "model_info", "max_input_tokens"))
    return None


def _facts(ask: Ask, model: str, listed: Mapping[str, Any], headers: Mapping[str, str]) -> Facts:
    version = headers.get("x-litellm-version")
    if not isinstance(version, str) or not version.strip():
        version = dig(ask("/health/readiness", None), "litellm_version")
    return Facts(version, _window(ask("/model/info", None), model))


LITELLM = BASE.derive(
    "litellm",
    owners=frozenset({"litellm"}),
    headers_say=_headers_say,
    models_say=_models_say,
    thinking=Thinking((), effort_off=True),
    facts=_facts,
    texts={
        "tool_choice_auto": "fix tool calling on the server behind the proxy; LiteLLM passes "
        "tool_calls through as the backend sends them",
        "reasoning_location": "parse reasoning on the server behind the proxy (vLLM "
        "--reasoning-parser, llama-server --reasoning-format deepseek): LiteLLM splits a "
        "leading <think> block only in non-streamed replies",
        "stream_parity": "LiteLLM rewrites non-streamed replies (a content that starts with a "
        "<think> block becomes content plus reasoning_content) but not streamed ones: parse "
        "reasoning on the backend (llama-server --reasoning-format deepseek, vLLM "
        "--reasoning-parser) so both paths agree",
        "stream_grammar": "the proxy's stream breaks its grammar: check the backend's own "
        "stream, then upgrade LiteLLM if only the proxy's stream has the faults; rig_nb forgave "
        "them, the openai SDK's stream helpers may not",
        "concurrency": "LiteLLM passes the load to the server behind it: raise its parallelism "
        "there (llama-server -np, vLLM --max-num-seqs, OLLAMA_NUM_PARALLEL) and check the "
        "proxy's max_parallel_requests",
        "concurrency:rate_limited": "the proxy refused requests under load: raise its rpm/tpm "
        "or max_parallel_requests for this model, or send fewer at once (compare's load)",
        "reasoning_replay": "LiteLLM strips replayed reasoning for hosted_vllm backends "
        "(BerriAI/litellm PR#41380): route the model through the openai/ provider, or reach the "
        "backend directly",
        "thinking_switch": "LiteLLM maps reasoning_effort per provider and may drop it "
        "(BerriAI/litellm#26413): set the backend's own switch in extra_body",
        "context_window": "the window is the backend's: raise it on the server behind the proxy",
        "api_parity:messages": "LiteLLM turns /v1/messages into a chat request upstream and "
        "drops the upstream's reasoning on the way back: run a reasoning model's agent over "
        "chat, or point the Anthropic client at the server itself",
        "agent_clients:claude-code": "LiteLLM maps Claude Code's thinking to reasoning.effort "
        "and refuses it for a model it does not know to reason (litellm.UnsupportedParamsError, "
        "seen with 1.108.7): set litellm_settings.drop_params: true, or supports_reasoning: "
        "true in the model's model_info; a backend may also refuse the system turn inside "
        "messages (vllm-project/vllm#44000)",
        "agent_clients:codex": "the proxy or the server behind it refused Codex's Responses "
        "request (a custom apply_patch tool: openai/codex#10635): update LiteLLM and the "
        "backend, or drop the custom tool in the proxy",
    },
)
