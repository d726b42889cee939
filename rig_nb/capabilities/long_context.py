"""The doctor's long-conversation checks: the server's own metadata, `context_window` and
`prefix_cache`.

`server_facts` reads the server's version and the tokens one request may hold from each
server kind's own routes (llama.cpp `/props`, vLLM `/version` and the model list's
`max_model_len`, Ollama `/api/version` and `/api/show`, SGLang `/get_server_info`,
LiteLLM's `x-litellm-version` header (else `/health/readiness`) and `/model/info`, LM
Studio `/api/v0/models/ID`): at most
two requests, each bounded by the Client's timeout, deadline and response cap. A route
that fails, answers HTML or lies (a window of 0, negative, 10**12, a string) leaves the
fact unknown.

`context_window` sends one request just past a known window (a marker at its start,
filler words of one token each, a question at its end): `error at N tokens` when the
server refuses clearly (BackendError kind `context`), `truncates silently (N of M tokens
kept)` when it answers with fewer prompt tokens than the window it was sent past,
`fits` when the window is larger than the doctor's bound (no request), `n/a` when no
window is known or usage is not reported. `prefix_cache` continues a conversation the
doctor already had (the tool_choice "auto" probe when it called the tool, else the
question) by one turn and reads the cached tokens the server reports: `reused N of M`,
`not reused` or `not reported`; on llama.cpp, when less than turn 1's prompt was reused,
`/apply-template` names where turn 2's prompt stops extending turn 1's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .. import strict_json
from .._backend_errors import stated_count as _window
from ..errors import BackendError, Cancelled, RigError
from ..probe import PROBE_TOOL
from ..record import record_one
from ..trace import Iteration, Trace
from ..usage import kept_count as _count
from ..wire import Call, Request, Turn, turns_of
from ..wire.thinking import inline_reasoning
from .advice import by_server
from .thinking import apply_template

if TYPE_CHECKING:
    from ..backend import Backend

__all__ = [
    "LONG_CONTEXT_CHECKS",
    "MAX_WINDOW_CHECKED",
    "OLLAMA_DEFAULT_WINDOW",
    "ServerFacts",
    "context_window_check",
    "long_context_advice",
    "long_context_checks",
    "prefix_cache_check",
    "report_head",
    "server_facts",
    "template_break",
]

LONG_CONTEXT_CHECKS = ("context_window", "prefix_cache")
# The doctor's bound: a window larger than this is not filled (`fits`, no request).
MAX_WINDOW_CHECKED = 32768
# Ollama's num_ctx when neither the model nor the request sets it (its /v1 cannot).
OLLAMA_DEFAULT_WINDOW = 4096
MARKER = "RIGNB-CONTEXT-MARKER-7431"
# One token per word on the tokenizers seen (a space and a common short word).
FILLER_WORD = "the"
FOLLOW_UP = "Thank you. Now say it again in one short sentence."
# Turn 2 is read for its usage, not its answer: a short budget keeps it quick.
PREFIX_MAX_TOKENS = 16
_VERSION_CHARS = 80
_EVIDENCE_CHARS = 200

# One check as `endpoint_report` makes it: name, verdict, evidence, advice, trace.
Found = tuple[str, str, str, str, Trace | None]


@dataclass
class ServerFacts:
    """What a server says about itself: its version ("" when none) and the tokens one
    request may hold (None when unknown), and where each came from."""

    version: str = ""
    context_window: int | None = None
    evidence: str = ""


def _version(value: Any) -> str:
    if not isinstance(value, str):
        return ""
    text = " ".join(value.split())
    return text[:_VERSION_CHARS]


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _ollama_window(shown: Any) -> int | None:
    """num_ctx in effect: the model's `parameters` line `num_ctx N`, else Ollama's default."""
    params = _get(shown, "parameters")
    if isinstance(params, str):
        for line in params.splitlines()[:200]:
            parts = line.split()
            if len(parts) == 2 and parts[0] == "num_ctx" and parts[1].isdigit():
                return _window(int(parts[1][:12]))
    return OLLAMA_DEFAULT_WINDOW if isinstance(shown, dict) else None


def _litellm_window(info: Any, model: str) -> int | None:
    entries = _get(info, "data")
    if not isinstance(entries, list):
        return None
    for entry in entries[:1000]:
        if isinstance(entry, dict) and entry.get("model_name") == model:
            return _window(_get(entry, "model_info", "max_input_tokens"))
    return None


def _json_route(client: Backend, path: str, body: Mapping[str, Any] | None) -> Any:
    """A metadata route's JSON (`Backend.server_route`); BackendError when it is not JSON."""
    content = client.server_route(path, body)
    try:
        return strict_json.loads(content)
    except ValueError:
        raise BackendError(
            f"ai backend: {path.split('?')[0]} did not answer JSON", kind="reply"
        ) from None


def server_facts(
    client: Backend,
    model: str,
    server: str,
    listed: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> ServerFacts:
    """The server's version and context window from its own routes (at most two requests);
    `listed` is the model's entry in the model list (vLLM and SGLang put `max_model_len`
    there), `headers` a reply's (LiteLLM names its version in `x-litellm-version`). Never
    raises a RigError: a route that fails or is cancelled says nothing."""
    facts = ServerFacts()
    listed_window = _window((listed or {}).get("max_model_len"))
    asked: list[str] = []

    def ask(path: str, body: Mapping[str, Any] | None = None) -> Any:
        asked.append(path.split("?")[0])
        try:
            return _json_route(client, path, body)
        except RigError as exc:  # Cancelled too: the report keeps what was found
            asked[-1] += " (cancelled)" if isinstance(exc, Cancelled) else " (failed)"
            return None

    if server == "llama.cpp":
        props = ask(f"/props?model={quote(model, safe='')}")
        facts.version = _version(_get(props, "build_info"))
        per_slot = _window(_get(props, "default_generation_settings", "n_ctx"))
        facts.context_window = per_slot if per_slot is not None else _window(_get(props, "n_ctx"))
    elif server == "vllm":
        facts.version = _version(_get(ask("/version"), "version"))
        facts.context_window = listed_window
    elif server == "sglang":
        info = ask("/get_server_info")
        facts.version = _version(_get(info, "version"))
        window = _window(_get(info, "context_length"))
        facts.context_window = window if window is not None else listed_window
    elif server == "ollama":
        facts.version = _version(_get(ask("/api/version"), "version"))
        facts.context_window = _ollama_window(ask("/api/show", {"model": model}))
    elif server == "litellm":
        facts.version = _version((headers or {}).get("x-litellm-version"))
        if not facts.version:
            facts.version = _version(_get(ask("/health/readiness"), "litellm_version"))
        facts.context_window = _litellm_window(ask("/model/info"), model)
    elif server == "lm-studio":
        loaded = ask(f"/api/v0/models/{quote(model, safe='')}")
        facts.context_window = _window(_get(loaded, "loaded_context_length"))
    else:
        facts.context_window = listed_window
    where = ", ".join(asked) or "no metadata route for this server kind"
    facts.evidence = client.redact(where)
    facts.version = client.redact(facts.version)
    return facts


def _cut(text: str, limit: int = _EVIDENCE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _status(exc: BaseException | None) -> str:
    if isinstance(exc, Cancelled):
        return "cancelled"
    if isinstance(exc, BackendError) and exc.status_code is not None:
        return f"error {exc.status_code}"
    return "error"


def long_prompt(words: int) -> str:
    """A user message of about `words` tokens: the marker first, filler, a question last."""
    filler = " ".join([FILLER_WORD] * max(0, words))
    return (
        f"{MARKER}: remember this code. {filler}\n"
        "What was the code at the very start of this message? Answer with the code only."
    )


def context_window_check(
    client: Backend, model: str, server: str, window: int | None, asked: str = ""
) -> Found:
    """(name, verdict, evidence, advice, trace) of `context_window`; one request at most.
    `asked` names the metadata routes read (ServerFacts.evidence)."""
    name = "context_window"
    if window is None:
        why = f"no context window known ({asked or 'no route asked'})"
        return name, "n/a", why, "", None
    if window > MAX_WINDOW_CHECKED:
        why = f"window {window} tokens, larger than the doctor's bound of {MAX_WINDOW_CHECKED}"
        return name, "fits", why, "", None
    sent = window + max(64, window // 8)
    request = Request(model, (Turn("user", long_prompt(sent)),), 16)
    trace, _ = record_one(client, request, {"kind": "context_window", "window": window})
    it = trace.iterations[-1]
    exc = trace.exception
    if isinstance(exc, BackendError) and exc.kind == "context":
        at = exc.context_window or window
        said = client.redact(exc.message)
        verdict = f"error at {at} tokens"
        evidence = _cut(f"{sent} words sent past a window of {window}: {said}")
    elif exc is not None:
        verdict = _status(exc)
        evidence = _cut(client.redact(trace.error))
    else:
        kept = _count(it.usage.get("prompt_tokens"))
        if not kept:  # none, or LM Studio's 0 for usage it does not count
            verdict = "n/a"
            evidence = f"answered {sent} words sent past a window of {window}; usage not reported"
        elif kept <= window:
            verdict = f"truncates silently ({kept} of {sent} tokens kept)"
            evidence = f"{sent} words sent past a window of {window}: prompt_tokens {kept}"
        else:
            verdict = "fits"
            evidence = f"{kept} prompt tokens taken, past the stated window of {window}"
    fix = long_context_advice(server, name, verdict, window)
    return name, verdict, evidence, fix, trace


def _turn_one(probe: Trace, question: Trace) -> Iteration | None:
    """The reply to continue: the auto probe's when it called the tool, else the question's."""
    for trace, need_calls in ((probe, True), (question, False)):
        if not trace.iterations:
            continue
        it = trace.iterations[-1]
        if it.ending == "error" or "prompt_tokens" not in it.usage:
            continue
        if need_calls and it.tool_calls and all(c.id for c in it.tool_calls):
            return it
        if not need_calls and it.ending == "answer":
            return it
    return None


def _continued(it: Iteration) -> tuple[Turn, ...]:
    """Turn 1's turns, its reply echoed as the loop echoes it, and what comes next."""
    turns = turns_of(it.messages)
    if it.tool_calls:
        calls = tuple(Call(c.id, c.name, c.arguments.strip() or "{}") for c in it.tool_calls)
        replayed = it.reasoning_content and it.reasoning_field in ("reasoning_content", "reasoning")
        echoed = Turn(
            "assistant",
            it.text,
            reasoning=it.reasoning_content if replayed else "",
            reasoning_field=it.reasoning_field if replayed else "",
            calls=calls,
        )
        results = tuple(Turn("tool", "pong", call_id=c.id, name=c.name) for c in it.tool_calls)
        return (*turns, echoed, *results)
    return (*turns, Turn("assistant", it.text), Turn("user", FOLLOW_UP))


def template_break(client: Backend, first: Request, second: Request, reasoning: str) -> str:
    """Where llama-server's `/apply-template` rendering of `second` stops extending that of
    `first`, and whether `reasoning` (turn 1's) is missing from it; "" when it cannot say."""
    try:
        one = apply_template(client, first)
        two = apply_template(client, second)
    except RigError:  # Cancelled too
        return ""
    at = 0
    limit = min(len(one), len(two))
    while at < limit and one[at] == two[at]:
        at += 1
    if at == len(one):
        where = f"turn 2's prompt extends turn 1's whole ({len(one)} characters)"
    else:
        where = (
            f"turn 2's prompt stops extending turn 1's at character {at} of {len(one)}: "
            f"{one[at : at + 24]!r} became {two[at : at + 24]!r}"
        )
    if reasoning.strip() and reasoning.strip()[:200] not in two:
        where += "; earlier reasoning dropped there"
    return where


def prefix_cache_check(
    client: Backend, model: str, server: str, probe: Trace, question: Trace
) -> Found:
    """(name, verdict, evidence, advice, trace) of `prefix_cache`: one request, and on
    llama.cpp two `/apply-template` requests when less than turn 1's prompt was reused."""
    name = "prefix_cache"
    first = _turn_one(probe, question)
    if first is None:
        return name, "n/a", "no earlier reply with usage to continue", "", None
    spec = (PROBE_TOOL,) if first.tool_calls else ()
    choice = probe.settings.get("tool_choice", "auto") if spec else None
    request = Request(model, _continued(first), PREFIX_MAX_TOKENS, tools=spec, tool_choice=choice)
    settings = {"kind": "prefix_cache", "max_tokens": PREFIX_MAX_TOKENS}
    trace, _ = record_one(client, request, settings)
    it = trace.iterations[-1]
    if trace.exception is not None:
        return name, _status(trace.exception), _cut(client.redact(trace.error)), "", trace
    before = _count(first.usage.get("prompt_tokens")) or 0
    cached = _count(it.usage.get("cached_tokens"))
    if cached is None:
        verdict = "not reported"
    elif cached == 0:
        verdict = "not reused"
    else:
        verdict = f"reused {cached} of {before}"
    evidence = f"turn 1: {before} prompt tokens; turn 2: {_count(it.usage.get('prompt_tokens'))}"
    evidence += f" prompt tokens, {cached if cached is not None else 'no'} cached"
    broke = False
    if server == "llama.cpp" and cached is not None and cached < before:
        first_body = Request(model, turns_of(first.messages), 1, tools=spec, tool_choice=choice)
        second_body = Request(model, request.turns, 1, tools=spec, tool_choice=choice)
        reasoning = first.reasoning_content or inline_reasoning(first.raw_content, first.text)
        said = template_break(client, first_body, second_body, reasoning)
        evidence += f"; /apply-template: {said}" if said else ""
        broke = "stops extending" in said
    partial = broke or (cached is not None and 0 < cached < before // 2)
    fix = long_context_advice(server, name, "not reused" if partial else verdict)
    return name, verdict, _cut(client.redact(evidence), 320), fix, trace


def long_context_checks(
    client: Backend, model: str, server: str, facts: ServerFacts, probe: Trace, question: Trace
) -> list[Found]:
    """`context_window` and `prefix_cache`, in that order; the prefix is asked first, while
    the server may still hold turn 1 in its cache."""
    prefix = prefix_cache_check(client, model, server, probe, question)
    window = context_window_check(client, model, server, facts.context_window, facts.evidence)
    return [window, prefix]


def report_head(
    model: str, server: str, version: str, window: int | None, foreign: bool = False
) -> str:
    """The doctor's first printed line: the model, the server kind, its version and window."""
    head = f"{model}: server {server}" + (f" {version}" if version else "")
    if foreign:
        return head
    return head + (f", context window {window} tokens" if window else ", context window unknown")


_WINDOW_FIX = {
    "ollama": "Ollama's window is num_ctx ({window} in effect; 4096 unless set), which its /v1 "
    "cannot change: send num_ctx over the native wire (Client(api='ollama'), "
    "RunRequest(context_window=N)) or start the server with OLLAMA_CONTEXT_LENGTH=N",
    "llama.cpp": "llama-server splits -c across its -np slots: one request holds -c / -np "
    "tokens; raise -c or lower -np",
    "vllm": "start vLLM with a larger --max-model-len (the model's limit and GPU memory allow)",
    "sglang": "start SGLang with a larger --context-length",
    "lm-studio": "load the model with a larger context length in LM Studio (its overflow "
    "policy otherwise cuts or garbles the conversation, lmstudio-bug-tracker#1806)",
    "litellm": "the window is the backend's: raise it on the server behind the proxy",
    "": "raise the server's context window for this model, or keep conversations shorter",
}
_SILENT = {
    "ollama": "Ollama keeps the system prompt and the newest messages within num_ctx and drops "
    "the oldest without a word (ollama#18107): ",
    "": "this server drops part of a prompt that does not fit, without an error: ",
}
_CACHE_FIX = {
    "llama.cpp": "llama-server reuses a slot's cached prefix only when the new prompt extends "
    "it: use a chat template that renders earlier turns unchanged (keep earlier reasoning: "
    "--reasoning-preserve, or a template that renders reasoning_content), keep the system "
    "prompt fixed, and enough context per slot (-c / -np)",
    "vllm": "start vLLM with --enable-prefix-caching; a template that drops earlier reasoning "
    "(Qwen3) re-renders the history: send chat_template_kwargs.preserve_thinking: true where "
    "the template takes it",
    "sglang": "keep RadixAttention on (no --disable-radix-cache); a template that drops "
    "earlier reasoning re-renders the history: chat_template_kwargs.preserve_thinking: true",
    "ollama": "Ollama reuses its cache only for the same prefix: keep the system prompt fixed "
    "and num_ctx large enough that nothing is shifted out",
    "": "keep the system prompt fixed and the arguments' order stable, and use a template that "
    "renders earlier turns unchanged (a template that drops earlier reasoning: the flag that "
    "keeps it, such as chat_template_kwargs.preserve_thinking)",
}


def long_context_advice(server: str, check: str, verdict: str, window: int | None = None) -> str:
    """The server-side fix for a `context_window` or `prefix_cache` verdict ("" when none)."""

    if check == "context_window" and verdict.startswith(("truncates silently", "error at")):
        fix = by_server(_WINDOW_FIX, server).replace(
            "{window}", str(window or OLLAMA_DEFAULT_WINDOW)
        )
        silent = verdict.startswith("truncates silently")
        return (by_server(_SILENT, server) if silent else "") + fix
    if check == "prefix_cache" and verdict == "not reused":
        return by_server(_CACHE_FIX, server)
    return ""
