"""The doctor's `api_parity` check: the probe and the reasoning question over every wire.

The report's own wire is what it already asked; this sends the same two requests over
each other wire (two more requests a wire) and compares how each turn ended, where
reasoning went, tool calls, finish, leaks and usage. Verdicts: `same`, `differs: ...`,
or `NAME unsupported (STATUS)` for a wire whose route is not there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import BackendError
from ..probe import probe_trace
from ..wire import WIRES

if TYPE_CHECKING:
    from ..backend import Backend
    from ..servers import Server
    from ..trace import Iteration, Trace

__all__ = ["api_parity"]

# Statuses that say "no such route" rather than "this request failed".
_NOT_HERE = frozenset({404, 405, 501})
# What to do when a wire's route is not there, by wire.
_ADVICE_UNSUPPORTED = {
    "responses": 'the server has no /v1/responses: keep api="chat", or upgrade to a server '
    "that has it (vLLM, llama.cpp's llama-server, Ollama >= 0.13.3, LM Studio, a LiteLLM proxy)",
    "messages": "the server has no Anthropic /v1/messages: an agent built on the Anthropic "
    "SDK (Claude Code) cannot use it; put a LiteLLM proxy in front, or upgrade to a server "
    "that has it (llama.cpp's llama-server, vLLM, Ollama >= 0.14, LM Studio)",
    "ollama": "the server has no /api/chat (Ollama's native API, at the base URL without /v1): "
    'not an Ollama server, or a proxy that passes /v1 only; keep api="chat" here. On Ollama, '
    'api="ollama" is the wire that honours num_ctx and think, which its /v1 ignores',
}


def _advice_differs(wire: str, other: str, server: Server) -> str:
    """What to do about a difference between `wire` and `other`: the server's advice for
    either wire (chat has none of its own), else its advice for any wire."""
    return (
        server.advice("api_parity", wire)
        or server.advice("api_parity", other)
        or server.advice("api_parity")
    )


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


def _compare(label: str, first: tuple[str, Trace], second: tuple[str, Trace]) -> list[str]:
    """How the same request ended over two wires, (name, trace) each, as short lines."""
    (one, x), (two, y) = first, second
    if not x.iterations or not y.iterations:
        return []
    a, b = x.iterations[-1], y.iterations[-1]
    if a.ending == "error" and b.ending == "error":
        return []
    if (a.ending == "error") != (b.ending == "error"):
        which = f"{two} ({_status(y)})" if b.ending == "error" else f"{one} ({_status(x)})"
        return [f"{label}: fails only over {which}"]
    diffs = []
    if a.ending != b.ending:
        diffs.append(f"{label}: ends {a.ending} over {one}, {b.ending} over {two}")
    if _where(a) != _where(b):
        diffs.append(f"{label}: reasoning in {_where(a)} over {one}, {_where(b)} over {two}")
    if a.leaks != b.leaks:
        leaks = [",".join(it.leaks) or "none" for it in (a, b)]
        diffs.append(f"{label}: leaks {leaks[0]} over {one}, {leaks[1]} over {two}")
    if a.finish_reason != b.finish_reason:
        diffs.append(f"{label}: finish {a.finish_reason} vs {b.finish_reason}")
    carried = WIRES[one].usage_keys & WIRES[two].usage_keys
    for key in ("reasoning_tokens", "completion_tokens"):
        if key not in carried:
            continue  # a wire with no field for it cannot report it
        if (key in a.usage) != (key in b.usage):
            side = one if key in a.usage else two
            diffs.append(f"{label}: {key} reported only over {side}")
    return diffs


def _in_order(pair: dict[str, Trace]) -> tuple[tuple[str, Trace], tuple[str, Trace]]:
    """Two wires' traces in the order of WIRES, whichever wire the report used."""
    first, second = sorted(pair.items(), key=lambda kv: list(WIRES).index(kv[0]))
    return first, second


def api_parity(
    client: Backend,
    model: str,
    server: Server,
    ask: Callable[[Backend], Trace],
    question_here: Trace,
    probe_here: Trace,
) -> tuple[str, str, str, Trace]:
    """`api_parity`'s (verdict, evidence, advice, trace) from the traces the report has
    (over the client's wire) and the same two requests over every other wire
    (`ask(backend)` asks the reasoning question); a wire whose probe is answered "no
    such route" is `NAME unsupported (STATUS)` and asked nothing more. Each pair reads in
    the order of WIRES, whichever wire the report used."""
    here = [question_here, probe_here]
    if all(not t.iterations or t.iterations[-1].ending == "error" for t in here):
        # Nothing to compare against: the check says what the other checks say.
        exc = next((t.exception for t in here if isinstance(t.exception, BackendError)), None)
        status = exc.status_code if isinstance(exc, BackendError) else None
        verdict = f"error {status}" if status is not None else "error"
        return (verdict, f"every {client.api} request failed", "", probe_here)
    diffs: list[str] = []
    unsupported: list[str] = []
    compared: list[str] = []
    shown = question_here
    fixes: list[str] = []
    differing: list[str] = []  # the advice for each wire that differs, in order
    for name in WIRES:
        if name == client.api:
            continue
        other = client.over(name)
        probe_there = probe_trace(other, model)
        missing = probe_there.exception
        if isinstance(missing, BackendError) and missing.status_code in _NOT_HERE:
            unsupported.append(f"{name} unsupported ({missing.status_code})")
            fixes.append(_ADVICE_UNSUPPORTED.get(name, ""))
            shown = probe_there
            continue
        question_there = ask(other)
        compared.append(name)
        found = _compare("question", *_in_order({client.api: question_here, name: question_there}))
        found += _compare("probe", *_in_order({client.api: probe_here, name: probe_there}))
        if found:
            differing.append(_advice_differs(name, client.api, server))
        diffs += found
        shown = question_there
    fixes[:0] = list(dict.fromkeys(differing))
    advised = "; ".join(f for f in fixes if f)
    if diffs:
        verdict = "differs: " + "; ".join([*diffs, *unsupported])
        return (verdict, "", advised, shown)
    if unsupported and not compared:
        return ("; ".join(unsupported), "the probe over each wire", advised, shown)
    wires = " and ".join([client.api, *compared])
    evidence = f"the probe and the question end the same over {wires}"
    verdict = "; ".join(["same", *unsupported])
    return (verdict, evidence, advised, shown)
