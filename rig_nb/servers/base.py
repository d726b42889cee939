"""What rig_nb knows of a server kind, as one value: `Server`, and the base profile.

A `Server` holds how a kind is recognised (the model list's owners, response headers, a
reply's fingerprint), how `RunRequest.thinking` maps onto its fields on the OpenAI-shaped
wires and the field it reads reasoning back from, its metadata routes (version and
context window), its tool-schema dialect, and its advice for each doctor check. `BASE`
is the profile of a server the guess cannot place (`unknown`): generic advice, the
generic thinking mapping, no metadata route. A kind's module builds its `Server` with
`BASE.derive(...)`: what it does not say, it has from the base.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..usage import stated_count

if TYPE_CHECKING:
    from ..wire import Reply

__all__ = [
    "ANY_CHAR",
    "BASE",
    "Ask",
    "Facts",
    "SchemaDialect",
    "Server",
    "Thinking",
    "dig",
    "listed_window",
    "window",
]

# A metadata route asked through the backend: its JSON, or None when it failed.
Ask = Callable[[str, "Mapping[str, Any] | None"], Any]


@dataclass(frozen=True)
class Facts:
    """What a server's own routes said: its version as sent (any JSON value) and the tokens
    one request may hold (None when unknown)."""

    version: Any = None
    context_window: int | None = None


@dataclass(frozen=True)
class Thinking:
    """How `RunRequest.thinking` maps onto a server's fields on the chat-shaped wires.

    `template_keys` are the `chat_template_kwargs` switches it reads (none: the server
    takes `reasoning_effort` alone, True as "medium"); `effort_off` sends
    `reasoning_effort: "none"` beside them for False; `budget_key` names the field a token
    budget goes out in ("" when the server takes none: not sent).
    """

    template_keys: tuple[str, ...] = ("enable_thinking",)
    effort_off: bool = True
    budget_key: str = ""

    def fields(self, thinking: bool | str | int | None) -> dict[str, Any]:
        """The request fields `thinking` maps to ({} when nothing is sent)."""
        if thinking is None:
            return {}
        effort: str | None = None
        if isinstance(thinking, str):
            effort, on = thinking, True
        elif isinstance(thinking, bool):
            on = thinking
        else:
            return {self.budget_key: thinking} if self.budget_key else {}
        if not self.template_keys:
            return {"reasoning_effort": effort or ("medium" if on else "none")}
        fields: dict[str, Any] = {"chat_template_kwargs": {k: on for k in self.template_keys}}
        if not on and self.effort_off:
            fields["reasoning_effort"] = "none"
        if effort is not None:
            fields["reasoning_effort"] = effort
        return fields


# "Any character" as JSON Schema's regular expressions (ECMA-262) spell it: what anchors an
# unanchored pattern (P becomes ^ANY*(?:P)ANY*$, the same language as an unanchored match).
ANY_CHAR = r"[\s\S]"


@dataclass(frozen=True)
class SchemaDialect:
    """What a server's tool-call grammar engine holds a tool's JSON Schema to: the rules
    `rig_nb.schemas.sanitize` applies on top of the base every dialect shares (local `$ref`s
    inlined, `type` lists as `anyOf`, `$schema`/`$id`/`$comment` dropped)."""

    # The spelling of "any character" that anchors an unanchored `pattern` (the engine
    # matches a pattern whole); None: patterns are left as they are.
    anchor: str | None = None
    # Keywords the server never reads: dropped wherever they stand in a schema.
    unenforced: frozenset[str] = frozenset()
    # The `format` values it holds; None: every format is kept.
    formats: frozenset[str] | None = None
    # minimum/maximum/exclusiveMinimum/exclusiveMaximum hold for "type": "integer" only.
    integer_bounds_only: bool = False
    # minLength/maxLength are not read beside a pattern or a held format.
    lengths_beside_pattern_ignored: bool = False
    # minItems/maxItems are not read for a tuple; prefixItems is not read beside items.
    tuple_rules: bool = False
    # The keys the parameters object itself keeps; None: all.
    root_keys: frozenset[str] | None = None
    # The keys a property's schema keeps (properties' values, anyOf branches); None: all.
    property_keys: frozenset[str] | None = None
    # Where the rules come from.
    sources: tuple[str, ...] = ()


def _no_facts(ask: Ask, model: str, listed: Mapping[str, Any], headers: Mapping[str, str]) -> Facts:
    return Facts(context_window=listed_window(listed))


def _never(_: Any) -> bool:
    return False


@dataclass(frozen=True)
class Server:
    """One server kind: all rig_nb knows of it (see the module docstring)."""

    name: str
    # The model list's `owned_by` values that name this kind (compared lower-cased).
    owners: frozenset[str] = frozenset()
    # True when a response's headers (lower-cased names) say this kind.
    headers_say: Callable[[Mapping[str, str]], bool] = _never
    # True when a reply's own marks (top-level fields, fingerprint) say this kind.
    reply_says: Callable[[Reply], bool] = _never
    # True when the model list as a whole says this kind (its entries, not one owner).
    models_say: Callable[[list[dict[str, Any]]], bool] = _never
    # A weaker mark, read after the owners (OpenAI's `fp_` fingerprints).
    reply_hints: Callable[[Reply], bool] = _never
    thinking: Thinking = Thinking()
    # The field an assistant turn's reasoning goes back in on the chat-shaped wires.
    replay_field: str = "reasoning_content"
    # The server's version and context window from its own routes (at most two requests).
    facts: Callable[[Ask, str, Mapping[str, Any], Mapping[str, str]], Facts] = _no_facts
    # The server renders its chat template on request (llama-server's `/apply-template`).
    template_route: str = ""
    schema_dialect: SchemaDialect = SchemaDialect()
    # Advice by check name, or "check:variant" for a verdict's own fix.
    texts: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def __repr__(self) -> str:
        return f"<server {self.name}>"

    def thinking_fields(self, thinking: bool | str | int | None) -> dict[str, Any]:
        """The fields `thinking` maps to on the chat-shaped wires ({} when none)."""
        return self.thinking.fields(thinking)

    def advice(self, check: str, variant: str = "") -> str:
        """This kind's advice for a doctor check (`variant` names a verdict's own fix, such as
        `concurrency`'s "crossed"); the base profile's when this kind has none; "" when no
        fix is known."""
        key = f"{check}:{variant}" if variant else check
        said = self.texts.get(key)
        if said is None and self is not BASE:
            said = BASE.texts.get(key)
        return said or ""

    def derive(
        self, name: str, *, texts: Mapping[str, str] = MappingProxyType({}), **kw: Any
    ) -> Server:
        """A profile built on this one: `texts` are this kind's own advice (the rest falls
        back to the base profile's)."""
        return replace(self, name=name, texts=MappingProxyType(dict(texts)), **kw)


def dig(data: Any, *keys: str) -> Any:
    """`data[k1][k2]...`, or None where a level is not an object."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def window(value: Any) -> int | None:
    """A context window a server states: an int from 1 to a sane bound, else None."""
    return stated_count(value)


def listed_window(listed: Mapping[str, Any]) -> int | None:
    """The window the model list's entry states (`max_model_len`: vLLM, SGLang)."""
    return window(listed.get("max_model_len"))


# Generic advice: what to change on any server, for each check (DESIGN.md's advice column).
_GENERIC = {
    "tool_choice_auto": "enable the server's tool-call parser for this model (vLLM "
    "--enable-auto-tool-choice --tool-call-parser, llama.cpp --jinja, a tool-capable chat "
    "template)",
    "tool_choice_unset": "this endpoint only calls tools when tool_choice is sent: keep "
    'tool_choice "auto" (the loop\'s default)',
    "tool_choice_required": 'this endpoint rejects tool_choice "required": send "auto" (the '
    "loop's default)",
    "native_call_hygiene": "the server's tool-call parser misread this family's call markup "
    "(markup in a tool name or argument name): use the parser made for the model and update "
    "the server; rig_nb feeds such calls back as errors instead of running them",
    "reasoning_location": "enable the server's reasoning parser (vLLM --reasoning-parser, "
    "llama.cpp --reasoning-format deepseek, SGLang --reasoning-parser)",
    "leak_dialects:harmony": "the server does not parse gpt-oss's harmony format: use a server "
    "version and chat template that do (vLLM's openai_gptoss parser, llama.cpp --jinja)",
    "stream_parity": "the streamed and non-streamed paths of this server differ: check the "
    "server's streaming parser, and run the loop the way it will run in production",
    "stream_grammar": "the server (or a proxy in front of it) streams what its wire's grammar "
    "does not allow: upgrade it and report the faults upstream; rig_nb forgave them, the "
    "openai SDK's stream helpers and other clients may not",
    "usage_reported": "the endpoint reports no token usage: token columns stay empty (for "
    "streams the loop asks for it with stream_options.include_usage)",
    "reasoning_tokens_reported": "the endpoint does not report "
    "completion_tokens_details.reasoning_tokens, so the share of the budget spent thinking "
    "is unknown",
    "concurrency": "the server runs fewer requests at once than were sent: raise its "
    "parallelism (llama-server -np, vLLM --max-num-seqs, OLLAMA_NUM_PARALLEL)",
    "concurrency:rate_limited": "the endpoint (or a proxy in front of it) refused requests "
    "under load: raise its rate or parallel-request limit, or send fewer at once (compare's "
    "load)",
    "concurrency:crossed": "the server mixed concurrent requests' tool calls (a parser with "
    "state shared across requests: vllm-project/vllm#48089, ml-explore/mlx-lm#965): update "
    "it, or serve one request at a time (llama-server -np 1, vLLM --max-num-seqs 1, "
    "OLLAMA_NUM_PARALLEL=1)",
    "reasoning_replay": "the template drops earlier reasoning: send "
    "chat_template_kwargs.preserve_thinking: true where the template supports it (Qwen3.6), "
    'or RunRequest(reasoning_field="content") for templates that read <think> inline '
    "(MiniMax)",
    "thinking_switch": "this server ignores the thinking switch it was sent: set the field its "
    "template reads by hand in RunRequest(extra_body=...)",
    "structured_output": "the server ignored response_format: use a server that enforces "
    "json_schema, or validate and retry on the client",
    "structured_output:reasoning": "the server applied the schema to the reasoning, not the "
    "answer: send thinking off with structured requests, or update the server's reasoning "
    "parser",
    "context_window": "raise the server's context window for this model, or keep "
    "conversations shorter",
    "context_window:silent": "this server drops part of a prompt that does not fit, without an "
    "error: ",
    "prefix_cache": "keep the system prompt fixed and the arguments' order stable, and use a "
    "template that renders earlier turns unchanged (a template that drops earlier reasoning: "
    "the flag that keeps it, such as chat_template_kwargs.preserve_thinking)",
    "honored_params": "the server accepted a parameter and did not apply it: do not rely on "
    "it with this server; check what comes back on the client",
    "honored_params:tool_choice=none": "the server ignores tool_choice none: leave the tools "
    "out of a request that must not call one",
    "honored_params:tool_choice=named": "the server ignores a named tool_choice: offer only "
    "the tool that must be called",
    "honored_params:tool_choice=required": 'the server ignores tool_choice "required": ask '
    "for the call in the prompt and check that one came back",
    "honored_params:parallel_tool_calls=false": "the server ignores parallel_tool_calls "
    "false: run one call per reply on the client, or say so in the system prompt",
    "honored_params:max_tokens": "the server ignores max_tokens: replies can run long; bound "
    "them with the server's own limit and the Client's deadline",
    "honored_params:stop": "the server ignores stop: cut the answer at the stop string on "
    "the client",
    "honored_params:rejected": "the server refused a parameter (its words are in the "
    "evidence): leave it out of requests to this server",
    "api_parity": "this wire's route handles replies differently from chat: run the agent "
    "over the wire whose row is clean",
    "api_parity:responses": "the Responses route of this server handles replies differently "
    "from chat: run the agent over the wire whose row is clean",
    "api_parity:messages": "the Messages route of this server handles replies differently "
    "from chat: run the agent over the wire whose row is clean",
    "tool_schemas:rejected": "the server refused a tool list for its schemas: send "
    "rig_nb.schemas.sanitize_tools(tools, server=KIND) (local $refs inlined, type lists as "
    "anyOf, $schema dropped, the kind's own rules), or drop the tools it names",
    "tool_schemas:fails_open": "the server let the model write arguments the schema does not "
    "admit: it does not enforce these keywords; sanitize the tools for it "
    "(rig_nb.schemas.sanitize_tools) and validate arguments before running a tool",
    "tool_schemas:args_as_string": "the server sent an object or array argument as a string "
    "holding its JSON: inline $defs (rig_nb.schemas.sanitize_tools), or decode such strings "
    "before running the tool",
    "tool_schemas:no_call": "the server made no call although a tool was named in "
    "tool_choice: it may ignore a named tool_choice; check the tool-call parser",
    "tool_schemas:stalled": "the server did not answer a tool list within the deadline: a "
    "grammar for many or large schemas is slow to build, or refused (a 25-tool server's "
    "596-rule grammar, Atomic-Chat#272); send fewer tools or simpler schemas",
    "agent_clients:claude-code": "the server refused Claude Code's request shape (a system "
    "turn inside messages since 2.1.154: vllm-project/vllm#44000, ollama/ollama#16372): update "
    "the server, or put a proxy in front that merges such turns into system",
    "agent_clients:codex": "the server refused Codex's request shape (a custom apply_patch "
    "tool beside the functions: openai/codex#10635; items replayed without id and status: "
    "openai/codex#12669): update the server, or put a proxy in front that drops custom tools",
    "agent_clients:opencode": "the server refused opencode's request shape (earlier "
    "reasoning sent back as reasoning on assistant messages: anomalyco/opencode#19988): set "
    "opencode's interleaved field to the one this server reads, or update the server",
}

BASE = Server("unknown", texts=MappingProxyType(_GENERIC))
