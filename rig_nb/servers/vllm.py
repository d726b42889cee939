"""vLLM.

Recognised by the model list's owner (`vllm`). Thinking: `chat_template_kwargs`
`enable_thinking` and `thinking` (templates read either), a budget as
`thinking_token_budget`; reasoning goes back as `reasoning` (vllm-project/vllm#27752
renamed `reasoning_content`, #33402 removed it: vLLM >= 0.20 reads `reasoning` only,
vllm#38488). `/version` gives the version, the model list's `max_model_len` the window.
Its structured-outputs backends hold `$ref`, `pattern` and `format` in `response_format`;
tool arguments are constrained only with `strict` (vllm#49661).
A named tool's arguments are constrained only with strict (vllm-project/vllm#49661);
tool_choice=required runs to max tokens on some models (vllm-project/vllm#50399).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import ANY_CHAR, BASE, Ask, Facts, SchemaDialect, Thinking, dig, listed_window

__all__ = ["VLLM"]


def _facts(ask: Ask, model: str, listed: Mapping[str, Any], headers: Mapping[str, str]) -> Facts:
    return Facts(dig(ask("/version", None), "version"), listed_window(listed))


VLLM = BASE.derive(
    "vllm",
    owners=frozenset({"vllm"}),
    thinking=Thinking(
        ("enable_thinking", "thinking"), effort_off=False, budget_key="thinking_token_budget"
    ),
    replay_field="reasoning",
    facts=_facts,
    # xgrammar (their default structured-outputs backend) matches a pattern whole.
    schema_dialect=SchemaDialect(anchor=ANY_CHAR, sources=("mlc-ai/xgrammar#838", "vllm#46924")),
    texts={
        "honored_params:tool_choice=required": "vLLM's tool_choice required runs to max tokens "
        "without a call on some models (vllm-project/vllm#50399): send tool_choice auto and "
        "ask for the call in the prompt, or update vLLM",
        "honored_params:tool_choice=named": "vLLM constrains a named tool's arguments only with "
        "strict (vllm-project/vllm#49661): send strict: true in the function, or validate the "
        "arguments on the client (the loop feeds bad ones back as errors)",
        "honored_params": "vLLM accepted a parameter and did not apply it: check the "
        "--tool-call-parser and update vLLM (vllm-project/vllm#49661: arguments are "
        "constrained only with strict)",
        # vLLM answers tool_choice "auto" with 400 unless both flags are set (seen with 0.32:
        # '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be
        # set'), so a reply in text means they are: the parser did not read the model's call.
        "tool_choice_auto": "vLLM took tool_choice auto, so --enable-auto-tool-choice and a "
        "--tool-call-parser are set, but the model wrote no call that parser reads: pick the "
        "--tool-call-parser made for the model (hermes for Qwen and Hermes, mistral, "
        "llama3_json, openai for gpt-oss, ...) and a chat template that renders the tools "
        "(--chat-template)",
        "tool_choice_auto:rejected": "start vLLM with --enable-auto-tool-choice "
        "--tool-call-parser <parser for the model> (hermes for Qwen and Hermes, mistral, "
        "llama3_json, openai for gpt-oss, ...): without both it refuses tool_choice auto",
        "native_call_hygiene": "the server's tool-call parser misread this family's call "
        "markup: pick the --tool-call-parser made for the model (glm45, qwen3_coder, "
        "minimax_m2, kimi_k2, ...) and update vLLM; rig_nb feeds such calls back as errors "
        "instead of running them",
        "native_call_hygiene:empty": "vLLM's tool grammar fixes a call's wrapper, not its "
        "arguments, unless the tool is strict (vllm-project/vllm#49661): send strict: true on "
        "the tool, or start vLLM with --tool-strict-level parameter, so the arguments follow "
        "its schema",
        "reasoning_location": "start vLLM with --reasoning-parser <parser for the model> "
        "(deepseek_r1, qwen3, openai_gptoss, ...) so reasoning moves to the reasoning field",
        "leak_dialects:harmony": "serve gpt-oss with vLLM's harmony support (--reasoning-parser "
        "openai_gptoss --tool-call-parser openai --enable-auto-tool-choice)",
        "reasoning_tokens_reported": "vLLM reports reasoning_tokens only in recent versions: "
        "upgrade to count the reasoning budget",
        "concurrency": "vLLM batches at most --max-num-seqs sequences (and "
        "--max-num-batched-tokens per step): raise them if requests queue, within the KV-cache "
        "memory",
        "concurrency:crossed": "vLLM's tool-call parser mixed concurrent requests "
        "(vllm-project/vllm#48089, PR#49249): update vLLM; until then --max-num-seqs 1 keeps "
        "streams apart",
        "reasoning_replay": "vLLM >= 0.20 reads an assistant turn's reasoning only from "
        "`reasoning` (vllm-project/vllm#38488) and the model's template must render it: for "
        "Qwen3.6 send chat_template_kwargs.preserve_thinking: true (extra_body); "
        'RunRequest(reasoning_field="reasoning")',
        "thinking_switch": "vLLM still emits reasoning with enable_thinking: false for some "
        "templates (vllm-project/vllm#40816): start it with the model's --reasoning-parser so "
        "reasoning stays in its field, or set --default-chat-template-kwargs",
        "structured_output": "vLLM applies response_format through its structured-outputs "
        "backend: check that it is not disabled (--structured-outputs-config)",
        "structured_output:reasoning": "the JSON went to the reasoning field: update vLLM past "
        "vllm#48863, or send thinking off (chat_template_kwargs enable_thinking false) with "
        "structured requests",
        "context_window": "start vLLM with a larger --max-model-len (the model's limit and "
        "memory allow)",
        "prefix_cache": "start vLLM with --enable-prefix-caching; a template that drops earlier "
        "reasoning (Qwen3) re-renders the history: send chat_template_kwargs.preserve_thinking: "
        "true where the template takes it",
        "api_parity:responses": "vLLM's Responses route parses reasoning and tool calls apart "
        "from chat (vllm#36435, vllm#43395): start it with the same --reasoning-parser and "
        "--tool-call-parser, and prefer the wire whose row is clean",
        "tool_schemas:args_as_string": "vLLM sent an object argument as a string holding "
        "its JSON (with $defs in the schema: vllm-project/vllm#46924): inline $defs "
        '(rig_nb.schemas.sanitize_tools(tools, server="vllm")), update vLLM, or decode '
        "such strings before running the tool",
        "tool_schemas:fails_open": "vLLM did not hold the call to its schema: serve with "
        "structured outputs for tool calls (tool_choice required or named, or strict: true "
        "tools where the version supports it) and validate arguments before running a tool",
        "agent_clients:claude-code": "vLLM refuses Claude Code's thinking budget unless its "
        "reasoning config is set (seen with 0.32 and --reasoning-parser deepseek_v3: "
        "'thinking_token_budget is set but reasoning_config is not configured'; streamed, the "
        "refusal comes as an in-stream internal_error): start vLLM with --reasoning-config "
        "for the model's think tokens; vLLM before 0.23 also refuses the system turn inside "
        "messages (vllm-project/vllm#44000): update it",
        "agent_clients:codex": "vLLM takes a custom tool only in free-form text, not with "
        "a grammar: Codex's apply_patch carries a Lark grammar (seen with vLLM 0.32: 'Custom "
        "tools with a grammar format are not supported'; openai/codex#10635 on llama-server): "
        "put a proxy in front that sends apply_patch as a function tool or without its grammar",
    },
)
