"""The doctor's `agent_clients` check: a short tool run shaped as each coding-agent client.

For each profile of `rig_nb.clients.CLIENTS`, over the wire that client speaks, a
two-turn tool run (a call to `get_weather`, then the answer: at most 2 requests) shaped
as that client sends it. Verdict: each profile with `ok`, `error <status>` (the server
refused the shape), the run's outcome (it ran but ended without an answer), `n/a`
when the endpoint does not answer that wire (404, 405, 501, or a reply that is not the
wire's), or `not checked` for a client that always streams in a report made with
`stream=False`: `claude-code ok; codex error 400; opencode ok`. Evidence: the server's message
or how the run ended, redacted, per profile. Advice: the server profile's
`agent_clients:<client>` text for each client it refused (400, 413, 415, 422, or an error
event in the stream).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..clients import CLIENTS, ClientProfile
from ..errors import BackendError
from ..loop import RunRequest, run_trace
from ..tool import Tool
from ..trace import Trace
from .replies import short

if TYPE_CHECKING:
    from ..backend import Backend
    from ..servers import Server

__all__ = ["AGENT_CLIENT_REQUESTS", "agent_clients_check"]

# Each profile's run: the call, then the answer.
AGENT_CLIENT_REQUESTS = 2
_NOT_HERE = frozenset({404, 405, 501})
# Statuses that say the server refused what was sent (the client's shape), not that it
# failed: these (and an error event in the stream) get the server profile's advice.
_REFUSED = frozenset({400, 413, 415, 422})
_MAX_TOKENS = 256
_SYSTEM = "You are a coding agent. Use the tools you are given."
_PROMPT = "What is the weather in Paris? Call get_weather once, then answer in one sentence."
_EVIDENCE = 200


def _weather(args: dict[str, Any]) -> str:
    return f"{args.get('city', 'Paris')}: 16 C, overcast"


_TOOL = Tool(
    "get_weather",
    "Get the current weather for a city.",
    {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "the city"}},
        "required": ["city"],
    },
    _weather,
)


def _one(backend: Backend, model: str, stream: bool, agent: ClientProfile) -> Trace:
    request = RunRequest(
        model,
        _MAX_TOKENS,
        system=_SYSTEM,
        prompt=_PROMPT,
        tools=(_TOOL,),
        max_iterations=AGENT_CLIENT_REQUESTS,
        stream=stream,
        client=agent.name,
    )
    return run_trace(backend, request)


def _said(trace: Trace, redact: Any) -> tuple[str, str, bool]:
    """(verdict, evidence, whether the server refused the client's shape) of one run."""
    exc = trace.exception
    first = len(trace.iterations) <= 1
    if isinstance(exc, BackendError):
        message = short(exc.message.removeprefix("ai backend: "), redact, _EVIDENCE)
        streamed = bool(trace.iterations) and trace.iterations[-1].streamed
        # A whole reply that is not the wire's says the route is not there; an error event
        # in a stream is the route's own answer (vLLM 0.32 sends its refusals so).
        foreign = exc.kind == "reply" and not streamed
        if first and (exc.status_code in _NOT_HERE or foreign):
            return "n/a", f"the wire is not answered ({message})", False
        if exc.status_code is not None:
            return f"error {exc.status_code}", message, exc.status_code in _REFUSED
        return trace.outcome or "error", message, exc.kind == "reply"
    rounds = len(trace.iterations)
    ended = f"ended {trace.ending or 'without a reply'} after {rounds} request"
    ended += "s" if rounds != 1 else ""
    if trace.outcome == "ok":
        return "ok", ended, False
    detail = short(trace.error, redact, _EVIDENCE) if trace.error else ""
    return trace.outcome or "error", f"{ended}: {detail}" if detail else ended, False


def agent_clients_check(
    client: Backend, model: str, server: Server, *, stream: bool = True
) -> tuple[str, str, str, Trace | None]:
    """`agent_clients`' (verdict, evidence, advice, trace): one short tool run per agent
    client profile over its wire (at most `AGENT_CLIENT_REQUESTS` requests each); the
    trace shown is the first that did not end ok, else the last."""
    verdicts: list[str] = []
    evidence: list[str] = []
    fixes: list[str] = []
    failed: Trace | None = None
    last: Trace | None = None
    for name, agent in CLIENTS.items():
        backend = client if agent.api == client.wire.name else client.over(agent.api)
        if agent.stream and not stream:
            # This client streams every request: a report without streaming sends none.
            verdicts.append(f"{name} not checked")
            evidence.append(f"{name}: streams every request; the report was not streamed")
            continue
        if backend.wire.name != agent.api:
            # A backend that speaks one wire only (rig_nb.testing.ScriptedBackend).
            verdicts.append(f"{name} n/a")
            evidence.append(f"{name}: this backend does not speak {agent.api}")
            continue
        trace = _one(backend, model, stream, agent)
        verdict, said, refused = _said(trace, client.redact)
        verdicts.append(f"{name} {verdict}")
        evidence.append(f"{name}: {said}")
        if refused:
            fixes.append(server.advice("agent_clients", name))
        if failed is None and verdict not in ("ok", "n/a"):
            failed = trace
        last = trace
    advice = "; ".join(dict.fromkeys(f for f in fixes if f))
    return "; ".join(verdicts), "; ".join(evidence), advice, failed or last
