"""The doctor's long-conversation checks: the server's own metadata, `context_window` and
`prefix_cache`.

`server_facts` reads the server's version and the tokens one request may hold from each
server kind's own routes (`Server.facts` of each profile in `rig_nb.servers`: llama.cpp
`/props`, vLLM `/version` and the model list's `max_model_len`, Ollama `/api/version` and
`/api/show`, SGLang `/get_server_info`, LiteLLM's `x-litellm-version` header and
`/model/info`, LM Studio `/api/v0/models/ID`): at most two requests, each bounded by the
Client's timeout, deadline and response cap. A route that fails, answers HTML or lies (a
window of 0, negative, 10**12, a string) leaves the fact unknown.

`context_window` sends one request just past a known window (a marker at its start,
filler words of one token each, a question at its end): `error at N tokens` when the
server refuses clearly (BackendError kind `context`), `truncates silently (N of M tokens
kept)` when it answers with fewer prompt tokens than the window it was sent past,
`fits` when the window is larger than the doctor's bound (no request), `n/a` when no
window is known or usage is not reported. `prefix_cache` continues a conversation the
doctor already had (the tool_choice "auto" probe when it called the tool, else the
question) by one turn, and by a third when turn 2 reused all of turn 1's prompt, and
reads the cached tokens the server reports: `reused N of M`, `not reused` or `not
reported`, for the first turn whose reuse fell. The evidence names the first break in the
requests as sent (`Iteration.prefix_break`) or says they only grew; on a server with a
template route (llama.cpp), that route names where the turn's prompt stops extending the
one before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import strict_json
from ..errors import BackendError, Cancelled, RigError
from ..prefix import first_difference
from ..probe import PROBE_TOOL
from ..record import finalizing, record_one, record_round
from ..servers.base import window as stated_window
from ..servers.ollama import DEFAULT_WINDOW
from ..trace import Iteration, Trace
from ..usage import kept_count as _count
from ..wire import Call, Reply, Request, Turn, turns_of
from ..wire.base import profile_of
from ..wire.sent import Sent
from ..wire.thinking import inline_reasoning
from .thinking import apply_template

if TYPE_CHECKING:
    from ..backend import Backend
    from ..servers import Server

__all__ = [
    "LONG_CONTEXT_CHECKS",
    "MAX_WINDOW_CHECKED",
    "OLLAMA_DEFAULT_WINDOW",
    "ServerFacts",
    "context_window_check",
    "long_context_advice",
    "long_context_checks",
    "prefix_cache_check",
    "server_facts",
    "template_break",
]

LONG_CONTEXT_CHECKS = ("context_window", "prefix_cache")
# The doctor's bound: a window larger than this is not filled (`fits`, no request).
MAX_WINDOW_CHECKED = 32768
# Ollama's num_ctx when neither the model nor the request sets it (its /v1 cannot).
OLLAMA_DEFAULT_WINDOW = DEFAULT_WINDOW
MARKER = "RIGNB-CONTEXT-MARKER-7431"
# One token per word on the tokenizers seen (a space and a common short word).
FILLER_WORD = "the"
FOLLOW_UP = "Thank you. Now say it again in one short sentence."
# The text echoed for a turn-2 reply with none (cut in its reasoning at the short budget).
CUT_STAND_IN = "(cut short)"
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
    server: Server | str,
    listed: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> ServerFacts:
    """The server's version and context window from its own routes (`Server.facts`, at most
    two requests); `listed` is the model's entry in the model list (vLLM and SGLang put
    `max_model_len` there), `headers` a reply's (LiteLLM names its version in
    `x-litellm-version`). Never raises a RigError: a route that fails or is cancelled says
    nothing."""
    asked: list[str] = []

    def ask(path: str, body: Mapping[str, Any] | None = None) -> Any:
        asked.append(path.split("?")[0])
        try:
            return _json_route(client, path, body)
        except RigError as exc:  # Cancelled too: the report keeps what was found
            asked[-1] += " (cancelled)" if isinstance(exc, Cancelled) else " (failed)"
            return None

    found = profile_of(server).facts(ask, model, listed or {}, headers or {})
    where = ", ".join(asked) or "no metadata route for this server kind"
    return ServerFacts(
        client.redact(_version(found.version)),
        stated_window(found.context_window),
        client.redact(where),
    )


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
    client: Backend, model: str, server: Server | str, window: int | None, asked: str = ""
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


def template_break(
    client: Backend, first: Request, second: Request, reasoning: str, route: str, turn: int = 2
) -> str:
    """Where the server's template route (llama-server's `/apply-template`) renders `second`
    (turn `turn`) no longer extending `first` (the turn before), and whether `reasoning`
    (the turn before's) is missing from it; "" when it cannot say."""
    try:
        one = apply_template(client, first, route)
        two = apply_template(client, second, route)
    except RigError:  # Cancelled too
        return ""
    at = first_difference(one, two)
    if at == len(one):
        where = f"turn {turn}'s prompt extends turn {turn - 1}'s whole ({len(one)} characters)"
    else:
        where = (
            f"turn {turn}'s prompt stops extending turn {turn - 1}'s at character {at} of "
            f"{len(one)}: "
            f"{one[at : at + 24]!r} became {two[at : at + 24]!r}"
        )
    if reasoning.strip() and reasoning.strip()[:200] not in two:
        where += "; earlier reasoning dropped there"
    return where


def _echoed(turns: tuple[Turn, ...], it: Iteration, reply: Reply) -> tuple[Turn, ...]:
    """Turn 2's turns, its reply echoed as the loop echoes it, and what comes next."""
    whole = reply.finish_reason != "length" and all(c.id for c in reply.tool_calls)
    calls = tuple(Call(c.id, c.name, c.arguments.strip() or "{}") for c in reply.tool_calls)
    replayed = it.reasoning_content and it.reasoning_field in ("reasoning_content", "reasoning")
    # Turn 3 is read for how much of turn 2's prompt was reused, which the reply does not
    # change: a reply cut in its reasoning at the doctor's budget goes back with a stand-in.
    echoed = Turn(
        "assistant",
        it.text or (CUT_STAND_IN if not (whole and calls) else ""),
        reasoning=it.reasoning_content if replayed else "",
        reasoning_field=it.reasoning_field if replayed else "",
        calls=calls if whole else (),
    )
    if whole and calls:
        results = tuple(Turn("tool", "pong", call_id=c.id, name=c.name) for c in calls)
        return (*turns, echoed, *results)
    return (*turns, echoed, Turn("user", FOLLOW_UP))


def _sent_turn(
    client: Backend, trace: Trace, request: Request, index: int
) -> tuple[Iteration, Reply | None]:
    """One more turn of the check's conversation, recorded on `trace` (no retries)."""
    it = Iteration(index=index, messages=request.messages())
    trace.iterations.append(it)
    try:
        with finalizing(trace):
            return it, record_round(client, request, it, trace, retries=False)
    except RigError:
        return it, None


def _reuse(before: int, cached: int | None) -> str:
    if cached is None:
        return "not reported"
    return "not reused" if cached == 0 else f"reused {cached} of {before}"


def prefix_cache_check(
    client: Backend, model: str, server: Server | str, probe: Trace, question: Trace
) -> Found:
    """(name, verdict, evidence, advice, trace) of `prefix_cache`: the conversation the
    doctor had (turn 1) continued by one turn, and by a third when turn 2 reused all of turn
    1's prompt (a template that re-renders earlier reasoning away breaks the prefix only
    from turn 3: issue 45); at most two requests, and on a server with a template route
    (llama.cpp) two requests there when reuse fell.

    The verdict reads the first turn whose reuse fell (turn 2 when none did): `reused N of
    M` (N cached of the M prompt tokens the turn before sent), `not reused`, `not reported`.
    Reuse fell at turn 2 when less than turn 1's prompt was cached, at turn 3 when turn 3
    cached no more than turn 2 did (nothing turn 2 added was reused: a cache that keeps
    blocks, vLLM's 16 tokens, still grows). The evidence names the first break in the
    requests as sent (`Iteration.prefix_break`), or says they only grew."""
    name = "prefix_cache"
    first = _turn_one(probe, question)
    if first is None:
        return name, "n/a", "no earlier reply with usage to continue", "", None
    spec = (PROBE_TOOL,) if first.tool_calls else ()
    choice = probe.settings.get("tool_choice", "auto") if spec else None
    trace = Trace(settings={"kind": "prefix_cache", "max_tokens": PREFIX_MAX_TOKENS})
    trace.model, trace.endpoint = model, client.endpoint
    turns = turns_of(first.messages)
    opening = Request(model, turns, PREFIX_MAX_TOKENS, tools=spec, tool_choice=choice)
    trace.iterations.append(dataclasses.replace(first, index=0, tool_calls=list(first.tool_calls)))
    # Turn 1 as its request went out (its trace keeps it in memory; else rendered again, not
    # sent): turn 2 is measured on it.
    had = next((t for t in (probe, question) if t.iterations and t.iterations[-1] is first), None)
    before_sent = had.last_sent if had is not None else None
    trace.last_sent = before_sent or Sent.of(client.wire.body(opening), opening)
    request = Request(model, _continued(first), PREFIX_MAX_TOKENS, tools=spec, tool_choice=choice)
    second, reply = _sent_turn(client, trace, request, 1)
    if trace.exception is not None:
        return name, _status(trace.exception), _cut(client.redact(trace.error)), "", trace
    before = _count(first.usage.get("prompt_tokens")) or 0
    cached = _count(second.usage.get("cached_tokens"))
    prompt = _count(second.usage.get("prompt_tokens"))
    evidence = f"turn 1: {before} prompt tokens; turn 2: {prompt} prompt tokens, "
    evidence += f"{cached if cached is not None else 'no'} cached"
    verdict, fell, pair = _reuse(before, cached), 0, (opening, request)
    if cached is not None and cached < before:
        fell = 2
    if not fell and cached and prompt and reply is not None:
        follow = _echoed(request.turns, second, reply)
        third_request = Request(model, follow, PREFIX_MAX_TOKENS, tools=spec, tool_choice=choice)
        third, _ = _sent_turn(client, trace, third_request, 2)
        if trace.exception is None:
            cached3 = _count(third.usage.get("cached_tokens"))
            evidence += f"; turn 3: {_count(third.usage.get('prompt_tokens'))} prompt tokens, "
            evidence += f"{cached3 if cached3 is not None else 'no'} cached"
            if cached3 is not None and cached3 < prompt and cached3 <= cached:
                verdict, fell, pair = _reuse(prompt, cached3), 3, (request, third_request)
        else:
            evidence += f"; turn 3: {_cut(client.redact(trace.error), 80)}"
    # A break in the requests as sent is the cause wherever reuse fell.
    named = trace.iterations[fell - 1].prefix_break if fell else None
    broke = bool(named)
    if fell:
        evidence += f"; reuse fell at turn {fell}: " + (
            f"first break: {named}"
            if named
            else "the requests as sent only grew (the server rendered them differently)"
        )
    route = profile_of(server).template_route
    if route and fell:
        reasoning = _reasoning_of(trace.iterations[fell - 2])
        said = template_break(
            client, _one_token(pair[0]), _one_token(pair[1]), reasoning, route, fell
        )
        evidence += f"; {route}: {said}" if said else ""
        broke = broke or "stops extending" in said
    partial = broke or fell == 3 or (cached is not None and 0 < cached < before // 2)
    fix = long_context_advice(server, name, "not reused" if partial else verdict)
    return name, verdict, _cut(client.redact(evidence), 480), fix, trace


def _one_token(request: Request) -> Request:
    return Request(
        request.model, request.turns, 1, tools=request.tools, tool_choice=request.tool_choice
    )


def _reasoning_of(it: Iteration) -> str:
    return it.reasoning_content or inline_reasoning(it.raw_content, it.text)


def long_context_checks(
    client: Backend, model: str, server: Server, facts: ServerFacts, probe: Trace, question: Trace
) -> list[Found]:
    """`context_window` and `prefix_cache`, in that order; the prefix is asked first, while
    the server may still hold turn 1 in its cache."""
    prefix = prefix_cache_check(client, model, server, probe, question)
    window = context_window_check(client, model, server, facts.context_window, facts.evidence)
    return [window, prefix]


def long_context_advice(
    server: Server | str, check: str, verdict: str, window: int | None = None
) -> str:
    """The server-side fix for a `context_window` or `prefix_cache` verdict on `server` (a
    profile, or a kind's name); "" when none."""
    server = profile_of(server)
    if check == "context_window" and verdict.startswith(("truncates silently", "error at")):
        fix = server.advice(check).replace("{window}", str(window or OLLAMA_DEFAULT_WINDOW))
        silent = verdict.startswith("truncates silently")
        return (server.advice(check, "silent") if silent else "") + fix
    if check == "prefix_cache" and verdict == "not reused":
        return server.advice(check)
    return ""
