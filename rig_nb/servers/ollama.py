"""Ollama.

Recognised by the model list's owner (`library`, `ollama`; its native `/api/tags` is read
as owned by `ollama`). Thinking on its /v1 is `reasoning_effort` alone (it ignores
`think` there; the native wire sends `think`); reasoning goes back as `reasoning`.
`/api/version` gives the version; the window is `num_ctx` in effect: the model's
`parameters` line from `/api/show`, else Ollama's default of 4096, held to the model's
trained length.
tool_choice is accepted and ignored (forced and none) on its OpenAI and Anthropic layers
(ollama/ollama#17921); /v1/chat/completions ignores max_tokens (ollama/ollama#18575).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import strict_json
from ..usage import kept_count as _int
from .base import BASE, Ask, Facts, SchemaDialect, Thinking, dig, window

__all__ = ["DEFAULT_WINDOW", "OLLAMA", "context_window", "shown_window"]

# num_ctx when neither the model nor the request sets it (its /v1 cannot set it).
DEFAULT_WINDOW = 4096


def _parameter(text: Any, name: str) -> int | None:
    """An int parameter from /api/show's `parameters` text (`name value` lines): ASCII digits
    only, else None."""
    if not isinstance(text, str):
        return None
    for line in text.splitlines()[:200]:
        key, _, value = line.strip().partition(" ")
        if key == name:
            digits = value.strip().strip('"')
            if digits.isascii() and digits.isdigit() and len(digits) <= 12:
                return int(digits)
            return None
    return None


def context_window(show: bytes, requested: int | None = None) -> int | None:
    """The context one request gets, from an `/api/show` body (`shown_window` of its JSON)."""
    try:
        data = strict_json.loads(show)
    except ValueError:
        data = None
    return shown_window(data, requested)


def shown_window(data: Any, requested: int | None = None) -> int | None:
    """The context one request gets, from `/api/show`'s answer as decoded: `requested` (a
    request's num_ctx), else the Modelfile's `num_ctx`, else Ollama's default of 4096; held
    to the model's trained length (`model_info["<arch>.context_length"]`) when reported.
    None when it is not /api/show's answer."""
    if not isinstance(data, dict) or not any(
        k in data for k in ("model_info", "parameters", "details", "modelfile")
    ):
        return None
    window = requested or _parameter(data.get("parameters"), "num_ctx") or DEFAULT_WINDOW
    info = data.get("model_info")
    if isinstance(info, dict):
        arch = info.get("general.architecture")
        trained = _int(info.get(f"{arch}.context_length")) if isinstance(arch, str) else None
        if trained is not None and trained > 0:
            window = min(window, trained)
    return window


def _facts(ask: Ask, model: str, listed: Mapping[str, Any], headers: Mapping[str, str]) -> Facts:
    version = dig(ask("/api/version", None), "version")
    shown = ask("/api/show", {"model": listed.get("id") or model})
    return Facts(version, window(shown_window(shown)))


OLLAMA = BASE.derive(
    "ollama",
    owners=frozenset({"library", "ollama"}),
    thinking=Thinking((), effort_off=True),
    replay_field="reasoning",
    facts=_facts,
    # A tool's parameters are decoded into Go structs and every other key is lost before the
    # template renders the tool (api.ToolFunctionParameters, api.ToolProperty; ollama#13472,
    # nested properties dropped until ollama#13508, `$defs` and `items` kept since
    # ollama#10091); tool arguments are not grammar-constrained.
    schema_dialect=SchemaDialect(
        root_keys=frozenset({"type", "$defs", "items", "required", "properties"}),
        property_keys=frozenset({"anyOf", "type", "items", "description", "enum", "properties"}),
        sources=(
            "ollama api/types.go ToolProperty",
            "ollama#13472",
            "ollama#13508",
            "ollama#10091",
        ),
    ),
    texts={
        "honored_params:tool_choice=none": "Ollama ignores tool_choice none on its OpenAI and "
        "Anthropic layers (ollama/ollama#17921): leave the tools out of a request that must not "
        "call one",
        "honored_params:tool_choice=named": "Ollama ignores a forced tool_choice on its OpenAI "
        "and Anthropic layers (ollama/ollama#17921): offer only the tool that must be called "
        "(rig_nb does so on the native /api/chat)",
        "honored_params:tool_choice=required": "Ollama ignores a forced tool_choice on its "
        "OpenAI and Anthropic layers (ollama/ollama#17921): ask for the call in the prompt and "
        "check that a call came back",
        "honored_params:max_tokens": "Ollama's /v1/chat/completions ignores max_tokens "
        "(ollama/ollama#18575): set num_predict in the Modelfile, or use the native /api/chat "
        '(api="ollama" sends options.num_predict)',
        "tool_choice_auto": "use a model whose template supports tools (`ollama show --template "
        "MODEL` shows `.Tools`); update Ollama for the model's tool parser",
        "reasoning_location": 'send "think": true (or a level for gpt-oss) and update Ollama: '
        "it then puts the reasoning in the `reasoning` field",
        "stream_grammar": "Ollama's OpenAI-compatible stream breaks its grammar: tool call "
        "fragments without index were fixed in Ollama 0.4.7 (ollama/ollama#7881), one index for "
        "every call is ollama/ollama#15457: upgrade Ollama; rig_nb forgave these, the openai "
        "SDK's stream helpers may not",
        "concurrency": "Ollama serves OLLAMA_NUM_PARALLEL requests per model at once (set it on "
        "the server, with OLLAMA_MAX_QUEUE); each parallel slot takes its own context memory",
        "concurrency:crossed": "Ollama mixed concurrent requests' replies: update Ollama; until "
        "then OLLAMA_NUM_PARALLEL=1 keeps streams apart",
        "reasoning_replay": "Ollama's /v1 drops replayed reasoning for some model families "
        "(ollama PR#18281); its native /api/chat reads messages[].thinking",
        "thinking_switch": 'Ollama /v1 ignores "think"; reasoning_effort "none" is its switch '
        "there: update Ollama, or use a model whose template has a thinking switch",
        "context_window": "Ollama's window is num_ctx ({window} in effect; 4096 unless set), "
        "which its /v1 cannot change: send num_ctx over the native wire "
        "(Client(api='ollama'), RunRequest(context_window=N)) or start the server with "
        "OLLAMA_CONTEXT_LENGTH=N",
        "context_window:silent": "Ollama keeps the system prompt and the newest messages within "
        "num_ctx and drops the oldest without a word (ollama#18107): ",
        "prefix_cache": "Ollama reuses its cache only for the same prefix: keep the system "
        "prompt fixed and num_ctx large enough that nothing is shifted out",
        "tool_schemas:fails_open": "Ollama does not hold tool calls to the whole schema (it "
        "strips nested object properties, ollama/ollama#13472): flatten nested objects "
        '(rig_nb.schemas.sanitize_tools(tools, server="ollama")) and validate arguments '
        "before running a tool",
        "tool_schemas:rejected": "Ollama refused the tool list's schema (an unanchored pattern "
        "is refused as llama.cpp refuses it, kubernetes-mcp-server#758): send "
        'rig_nb.schemas.sanitize_tools(tools, server="ollama")',
        "agent_clients:claude-code": "Ollama's Anthropic layer refuses a system turn inside "
        "messages (Claude Code 2.1.154 and later: ollama/ollama#16372), and Claude Code's "
        "per-request cch nonce in its first system block defeats the prompt cache "
        "(ollama/ollama#14918): update Ollama, or pin Claude Code below 2.1.154",
        "agent_clients:codex": "Ollama refused Codex's Responses request (a custom apply_patch "
        "tool, items replayed without id): update Ollama, or run Codex over chat",
    },
)
