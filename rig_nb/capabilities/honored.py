"""The doctor's `honored_params` check: which request parameters the server applies.

A server may accept a parameter with a 200 and not apply it. Six requests, each a
baseline with one parameter changed, show it:

    tool_choice=none           two tools, a prompt that needs one: ignored when a call
                               comes back
    tool_choice=named          the same prompt, the second tool (`get_time`) named:
                               ignored when the other is called
    tool_choice=required       a prompt that needs no tool: ignored when no call comes back
    parallel_tool_calls=false  a prompt asking about two cities: ignored when one reply
                               holds two or more calls
    max_tokens                 a plain question asking for a long answer, 16 tokens
                               allowed: ignored when the completion tokens exceed it
    stop                       a plain question whose answer holds the stop string:
                               ignored when the stop string is in the answer

Each parameter is `honored`, `ignored`, `rejected <status>` (the server refused the
request: HTTP status), `error <kind>` (no answer: the request failed without a status,
e.g. a timeout, or the reply could not be read), `n/a` (the wire has no field for it:
the Responses API has no stop, Ollama's /api/chat no parallel_tool_calls; nothing is
sent), `cancelled`, or `unclear`. A reply shows a parameter honored only when it did
what the parameter asks and could have done otherwise: `unclear` when it cannot tell,
so a model that cannot follow the prompt is never counted for the server. That is a
named tool with no call at all (forced, but the model made no call: nothing shows
whether the name was applied), `parallel_tool_calls=false` with no call, `max_tokens`
without a completion count, and `stop` whose answer (or, with no answer, reasoning)
never reached the text before the stop string; and `tool_choice=none` and
`tool_choice=required` when no request brought a tool call back at all (a server without
a tool-call parser answers every one in text). `honored` for `tool_choice=none` and
`parallel_tool_calls=false` says the reply kept to them; a model that would have made
no call (or one) anyway looks the same, as does, for `stop`, a model that stopped by
itself right before the stop string.

The verdict is `all honored` when every parameter sent was honored (`; n/a: ...` added
for those the wire cannot send), else the parameters grouped by what happened to them,
the bad news first: `ignored: tool_choice=none, parallel_tool_calls=false; rejected
400: stop`. The evidence says per parameter what came back (redacted, cut); the advice
is the server profile's for each parameter ignored or refused (`honored_params:<name>`,
then `honored_params`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import BackendError, Cancelled
from ..record import record_one
from ..trace import Iteration, Trace
from ..wire import Reply, Request, ToolSpec, Turn
from ..wire.base import profile_of
from .replies import short

if TYPE_CHECKING:
    from ..backend import Backend
    from ..servers import Server

__all__ = [
    "HONORED_PARAMS",
    "HONORED_TOOLS",
    "Honored",
    "honored_params_check",
]

_CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
# The baseline's two tools; the named choice names the second.
HONORED_TOOLS = (
    ToolSpec("get_weather", "Current weather for a city.", _CITY),
    ToolSpec("get_time", "Current local time in a city.", _CITY),
)
_WEATHER_PROMPT = "What is the weather in Paris right now? Use the get_weather tool."
_NO_TOOL_PROMPT = "Reply with the single word: hello."
_TWO_CITIES_PROMPT = "What is the weather in Paris and in Tokyo right now? Look up both cities."
_LONG_PROMPT = "Write a 300-word story about a lighthouse keeper."
_STOP_PROMPT = "List the words alpha, beta, gamma and delta, one per line, and nothing else."
_STOP = "gamma"
_BEFORE_STOP = "beta"
_NAMED = HONORED_TOOLS[1].name
_TOOL_MAX_TOKENS = 512
_LIMIT = 16
_PER_PARAM = 90

# The parameters, in the order they are asked and reported.
HONORED_PARAMS = (
    "tool_choice=none",
    "tool_choice=named",
    "tool_choice=required",
    "parallel_tool_calls=false",
    "max_tokens",
    "stop",
)
# The `Wire.params` field each parameter needs (the others every wire sends).
_NEEDS = {"parallel_tool_calls=false": "parallel_tool_calls", "stop": "stop"}
_WIRE_LACKS = {
    "parallel_tool_calls=false": "this wire has no parallel_tool_calls (not sent)",
    "stop": "this wire has no stop (not sent)",
}


def _request(model: str, param: str) -> Request:
    """The baseline with `param` changed."""
    user = Turn
    if param == "tool_choice=none":
        return Request(
            model, (user("user", _WEATHER_PROMPT),), _TOOL_MAX_TOKENS, HONORED_TOOLS, "none"
        )
    if param == "tool_choice=named":
        named = {"type": "function", "function": {"name": _NAMED}}
        prompt = _WEATHER_PROMPT.removesuffix(" Use the get_weather tool.")
        return Request(model, (user("user", prompt),), _TOOL_MAX_TOKENS, HONORED_TOOLS, named)
    if param == "tool_choice=required":
        return Request(
            model, (user("user", _NO_TOOL_PROMPT),), _TOOL_MAX_TOKENS, HONORED_TOOLS, "required"
        )
    if param == "parallel_tool_calls=false":
        return Request(
            model,
            (user("user", _TWO_CITIES_PROMPT),),
            _TOOL_MAX_TOKENS,
            HONORED_TOOLS,
            parallel_tool_calls=False,
        )
    if param == "max_tokens":
        return Request(model, (user("user", _LONG_PROMPT),), _LIMIT)
    return Request(model, (user("user", _STOP_PROMPT),), _TOOL_MAX_TOKENS, stop=(_STOP,))


def _settings(request: Request, param: str) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "kind": "honored_params",
        "param": param,
        "max_tokens": request.max_tokens,
    }
    if request.tools:
        settings["tool_choice"] = request.tool_choice
    if request.parallel_tool_calls is not None:
        settings["parallel_tool_calls"] = request.parallel_tool_calls
    if request.stop:
        settings["stop"] = list(request.stop)
    return settings


def _failed(trace: Trace) -> str | None:
    """The verdict of a request that brought no reply, None when one came."""
    exc = trace.exception
    if isinstance(exc, Cancelled):
        return "cancelled"
    if isinstance(exc, BackendError):
        if exc.status_code is not None:
            return f"rejected {exc.status_code}"
        return f"error {exc.kind or 'request'}"
    if exc is not None:
        return f"error {type(exc).__name__}"
    if not trace.iterations:
        return "error request"
    return None


def _said(it: Iteration, calls: list[str]) -> str:
    made = "called " + ", ".join(n or "?" for n in calls) if calls else "no tool call"
    return f"finish {it.finish_reason or '-'}, {made}"


def _judge(param: str, it: Iteration, reply: Reply) -> tuple[str, str]:
    """(verdict, what the reply showed) for one parameter's answered request; only the
    server's own tool calls count (a call written as text is the model's, not the
    server's doing)."""
    calls = [c.name for c in reply.tool_calls]
    said = _said(it, calls)
    if param == "tool_choice=none":
        return ("ignored" if calls else "honored"), said
    if param == "tool_choice=named":
        if any(name != _NAMED for name in calls):
            return "ignored", said
        if calls:
            return "honored", said
        return "unclear", f"{said} - forced, yet no call: the name shows nothing"
    if param == "tool_choice=required":
        return ("honored" if calls else "ignored"), said
    if param == "parallel_tool_calls=false":
        if len(calls) >= 2:
            return "ignored", f"{said} in one reply"
        if calls:
            return "honored", said
        return "unclear", f"{said} - nothing to run in parallel"
    if param == "max_tokens":
        used = it.usage.get("completion_tokens")
        if not isinstance(used, int):
            return "unclear", f"finish {it.finish_reason or '-'}, no completion token count"
        shown = f"{used} completion tokens for max_tokens {_LIMIT}, finish {it.finish_reason}"
        return ("ignored" if used > _LIMIT else "honored"), shown
    answer = it.text
    if _STOP in answer:
        return "ignored", f'"{_STOP}" in the answer'
    if _BEFORE_STOP in answer.lower():
        return "honored", f'the answer ends before "{_STOP}"'
    if not answer.strip() and _BEFORE_STOP in it.reasoning_content.lower():
        if _STOP not in it.reasoning_content:
            return "honored", f'no answer, the reasoning ends before "{_STOP}"'
    return "unclear", f'finish {it.finish_reason or "-"}, the answer never reached "{_STOP}"'


@dataclass(frozen=True)
class Honored:
    """What the `honored_params` check found: the verdict, the evidence, the advice, the
    trace shown (the first parameter not honored, else the first asked), and per parameter
    its verdict and trace (None for one not sent)."""

    verdict: str
    evidence: str
    advice: str
    trace: Trace | None
    params: dict[str, str]
    traces: dict[str, Trace | None]


def _verdict(params: dict[str, str]) -> str:
    """`all honored` (with `; n/a: ...`), else the parameters not honored grouped by what
    happened to them, the bad news first (those honored are in the evidence)."""
    groups: dict[str, list[str]] = {}
    for name, said in params.items():
        groups.setdefault(said, []).append(name)
    if set(groups) <= {"honored", "n/a"} and "honored" in groups:
        rest = f"; n/a: {', '.join(groups['n/a'])}" if "n/a" in groups else ""
        return "all honored" + rest
    if set(groups) == {"cancelled"}:
        return "cancelled"
    order = ("ignored", "rejected", "unclear", "error", "cancelled", "n/a")
    shown = sorted(
        (said for said in groups if said != "honored"),
        key=lambda said: (next(i for i, o in enumerate(order) if said.startswith(o)), said),
    )
    return "; ".join(f"{said}: {', '.join(groups[said])}" for said in shown)


def _advice(server: Server, params: dict[str, str]) -> str:
    """The profile's advice for each parameter ignored (`honored_params:<name>`, else
    `honored_params`) or refused (`honored_params:rejected`), each said once."""
    said: list[str] = []
    for name, verdict in params.items():
        if verdict == "ignored":
            fix = server.advice("honored_params", name) or server.advice("honored_params")
        elif verdict.startswith("rejected"):
            fix = server.advice("honored_params", "rejected")
        else:
            continue
        if fix and fix not in said:
            said.append(fix)
    return "; ".join(said)


# What the tool parameters said when no request brought a call back at all.
_CALL_BLIND = {"tool_choice=none": "honored", "tool_choice=required": "ignored"}


def _no_calls_at_all(params: dict[str, str], evidence: list[str], called: bool) -> None:
    """No request brought a tool call back: the server returns none at all (no tool-call
    parser, calls written as text), so "no call" says nothing of tool_choice: `unclear`
    (tool_choice_auto says why)."""
    if called:
        return
    for i, param in enumerate(params):
        if _CALL_BLIND.get(param) == params[param]:
            params[param] = "unclear"
            evidence[i] = evidence[i].replace(f"{param} {_CALL_BLIND[param]}", param + " unclear")
            evidence[i] += " - no request brought a tool call back"


def honored_params_check(client: Backend, model: str, server: Server | str) -> Honored:
    """The `honored_params` check for `endpoint_report`: one request per parameter of
    `HONORED_PARAMS` the wire can send (at most six), advice included; `server` is a
    profile or a kind's name.

    When the first request fails for another reason than a refusal of what it sent (any
    status but 400 and 422, no answer at all, a cancel) the endpoint is not answering:
    the verdict is that failure (`error <status>`, `error <kind>`, `cancelled`) and
    nothing more is sent. When every request sent was refused alike, the refusal is of
    the baseline, not of a parameter: `error <status>`.
    """
    server = profile_of(server)
    params: dict[str, str] = {}
    evidence: list[str] = []
    traces: dict[str, Trace | None] = {}
    called = False
    for param in HONORED_PARAMS:
        field = _NEEDS.get(param)
        if field is not None and field not in client.wire.params:
            params[param], traces[param] = "n/a", None
            evidence.append(f"{param} n/a ({_WIRE_LACKS[param]})")
            continue
        request = _request(model, param)
        trace, reply = record_one(client, request, _settings(request, param))
        traces[param] = trace
        failed = _failed(trace)
        if failed is not None or reply is None:
            failed = failed or "error reply"
            shown = trace.error.removeprefix("BackendError: ").removeprefix("ai backend: ")
            if failed == "cancelled" or (
                len(traces) == 1 and failed not in ("rejected 400", "rejected 422")
            ):
                said = failed.replace("rejected", "error", 1)
                words = "cancelled before the reply" if failed == "cancelled" else shown
                return Honored(said, short(words, client.redact), "", trace, {param: said}, traces)
            params[param] = failed
        else:
            params[param], shown = _judge(param, trace.iterations[-1], reply)
            called = called or bool(reply.tool_calls)
        evidence.append(f"{param} {params[param]} ({short(shown, client.redact, _PER_PARAM)})")
    _no_calls_at_all(params, evidence, called)
    sent = {v for p, v in params.items() if traces[p] is not None}
    verdict = _verdict(params)
    if len(sent) == 1 and next(iter(sent)).startswith("rejected"):
        verdict = next(iter(sent)).replace("rejected", "error", 1)
    shown_trace = next(
        (traces[p] for p, v in params.items() if v != "honored" and traces[p] is not None),
        next((t for t in traces.values() if t is not None), None),
    )
    fix = "" if verdict.startswith("error") else _advice(server, params)
    return Honored(verdict, "; ".join(evidence), fix, shown_trace, params, traces)
