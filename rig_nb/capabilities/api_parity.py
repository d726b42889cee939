"""The doctor's `api_parity` check: the probe and the reasoning question over both wires.

The chat side is what the report already asked; this sends the same two requests over
`/responses` (two more requests) and compares how each turn ended, where reasoning
went, tool calls, finish, leaks and usage. Verdicts: `same`, `differs: ...`, or
`responses unsupported (STATUS)` when the route is not there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import BackendError
from ..probe import probe_trace

if TYPE_CHECKING:
    from ..backend import Backend
    from ..trace import Iteration, Trace

__all__ = ["api_parity"]

# Statuses that say "no such route" rather than "this request failed".
_NOT_HERE = frozenset({404, 405, 501})
_ADVICE_UNSUPPORTED = (
    'the server has no /v1/responses: keep api="chat", or upgrade to a server that has it '
    "(vLLM, llama.cpp's llama-server, Ollama >= 0.13.3, LM Studio, a LiteLLM proxy)"
)
_ADVICE_DIFFERS = {
    "llama.cpp": "llama-server converts /v1/responses to chat internally: it reports every "
    "reply as completed (no incomplete at the budget) and prefixes call ids with call_; "
    'prefer api="chat" where endings matter',
    "vllm": "vLLM's Responses route parses reasoning and tool calls apart from chat "
    "(vllm#36435, vllm#43395): start it with the same --reasoning-parser and "
    "--tool-call-parser, and prefer the wire whose row is clean",
    "": "the Responses route of this server handles replies differently from chat: run the "
    "agent over the wire whose row is clean",
}


def _where(it: Iteration) -> str:
    if it.reasoning_content:
        return "field"
    return "content" if it.reasoning_shape != "none" else "none"


def _status(trace: Trace) -> str:
    exc = trace.exception
    if isinstance(exc, BackendError) and exc.status_code is not None:
        return f"HTTP {exc.status_code}"
    if isinstance(exc, BackendError):
        return f"{exc.kind} error"
    return type(exc).__name__ if exc is not None else "error"


def _compare(label: str, chat: Trace, responses: Trace) -> list[str]:
    if not chat.iterations or not responses.iterations:
        return []
    a, b = chat.iterations[-1], responses.iterations[-1]
    if a.ending == "error" and b.ending == "error":
        return []
    if (a.ending == "error") != (b.ending == "error"):
        which = f"responses ({_status(responses)})" if b.ending == "error" else "chat"
        return [f"{label}: fails only over {which}"]
    diffs = []
    if a.ending != b.ending:
        diffs.append(f"{label}: ends {a.ending} over chat, {b.ending} over responses")
    if _where(a) != _where(b):
        diffs.append(f"{label}: reasoning in {_where(a)} over chat, {_where(b)} over responses")
    if a.leaks != b.leaks:
        leaks = [",".join(it.leaks) or "none" for it in (a, b)]
        diffs.append(f"{label}: leaks {leaks[0]} over chat, {leaks[1]} over responses")
    if a.finish_reason != b.finish_reason:
        diffs.append(f"{label}: finish {a.finish_reason} vs {b.finish_reason}")
    for key in ("reasoning_tokens", "completion_tokens"):
        if (key in a.usage) != (key in b.usage):
            side = "chat" if key in a.usage else "responses"
            diffs.append(f"{label}: {key} reported only over {side}")
    return diffs


def api_parity(
    client: Backend,
    model: str,
    server: str,
    ask: Callable[[Backend], Trace],
    question_here: Trace,
    probe_here: Trace,
) -> tuple[str, str, str, Trace]:
    """`api_parity`'s (verdict, evidence, advice, trace) from the traces the report has
    (over the client's wire) and the same two requests over the other wire (`ask(client)`
    asks the reasoning question). Verdicts read chat first whichever wire the report used."""
    here = [question_here, probe_here]
    if all(not t.iterations or t.iterations[-1].ending == "error" for t in here):
        # Nothing to compare against: the check says what the other checks say.
        exc = next((t.exception for t in here if isinstance(t.exception, BackendError)), None)
        status = exc.status_code if isinstance(exc, BackendError) else None
        verdict = f"error {status}" if status is not None else "error"
        return (verdict, f"every {client.api} request failed", "", probe_here)
    other = client.over("responses" if client.api == "chat" else "chat")
    probe_there = probe_trace(other, model)
    missing = probe_there.exception
    if (
        other.api == "responses"
        and isinstance(missing, BackendError)
        and missing.status_code in _NOT_HERE
    ):
        verdict = f"responses unsupported ({missing.status_code})"
        return (verdict, "the probe over /responses", _ADVICE_UNSUPPORTED, probe_there)
    question_there = ask(other)
    question = {client.api: question_here, other.api: question_there}
    probe = {client.api: probe_here, other.api: probe_there}
    diffs = _compare("question", question["chat"], question["responses"])
    diffs += _compare("probe", probe["chat"], probe["responses"])
    if not diffs:
        evidence = "the probe and the question end the same over chat and responses"
        return ("same", evidence, "", question["responses"])
    advice = _ADVICE_DIFFERS.get(server, _ADVICE_DIFFERS[""])
    return ("differs: " + "; ".join(diffs), "", advice, question["responses"])
