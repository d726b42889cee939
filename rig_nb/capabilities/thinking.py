"""The doctor's reasoning-across-turns checks: `reasoning_replay` and `thinking_switch`.

`reasoning_replay` asks whether the endpoint reads back the reasoning of an earlier
tool-call turn, and from which field: a two-turn conversation (a question, a
tool-call turn, its result) whose tool-call turn carries a marker reasoning in
one candidate field at a time, judged against the same conversation without it:
by the server's template route where its profile names one (llama.cpp's
`/apply-template`: the marker is in the rendered prompt or not), else by
`usage.prompt_tokens`. A conversation that
fails without the field and passes with it (DeepSeek's 400 "Missing
`reasoning_content` field") also shows the field is read. Verdict `rendered via
FIELD`, `ignored`, `error STATUS` or `n/a` (no token counts to judge by).

`thinking_switch` asks one short question with thinking off and with thinking on,
each mapped to the fields the server reads (its profile in `rig_nb.servers`). Off must
leave no reasoning field, no reasoning tokens and no reasoning markup in content;
on is the contrast. Verdict `honored`, `ignored`, `error STATUS`, or `n/a` when
thinking on shows no reasoning either. At most 3 + 2 requests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import BackendError, RigError
from ..record import record_one
from ..trace import Iteration, Trace
from ..usage import kept_count
from ..wire import WIRES, Call, Request, ToolSpec, Turn
from ..wire.thinking import applied_template, describe_sent

if TYPE_CHECKING:
    from ..backend import Backend
    from ..servers import Server

# One check as `endpoint_report` makes it: name, verdict, evidence, advice, trace.
Found = tuple[str, str, str, str, Trace | None]

__all__ = [
    "REPLAY_CANDIDATES",
    "TEMPLATE_CANDIDATES",
    "THINKING_CHECKS",
    "reasoning_checks",
    "reasoning_replay_check",
    "replay_advice",
    "replay_conversation",
    "thinking_switch_advice",
    "thinking_switch_check",
]

THINKING_CHECKS = ("reasoning_replay", "thinking_switch")
# The fields servers read an assistant turn's reasoning from, in the order tried; a rendered
# template costs no generation, so llama.cpp's /apply-template also tries `thinking` (what
# gpt-oss's template reads).
REPLAY_CANDIDATES = ("reasoning_content", "reasoning")
TEMPLATE_CANDIDATES = (*REPLAY_CANDIDATES, "thinking")
SWITCH_QUESTION = "What is 17 * 23? Give the result in one short sentence."
SWITCH_MAX_TOKENS = 256
_CALL_ID = "call_rig_nb_replay"
_WEATHER = "Lisbon: 21 C, clear sky"


def _marker(field: str) -> str:
    return (
        f"rig-nb marker {field}: the user wants the weather in Lisbon, so I call get_weather "
        "with the city Lisbon and then answer with the temperature and the sky."
    )


def replay_conversation(field: str | None) -> tuple[Turn, ...]:
    """A question, a tool-call turn (its reasoning in `field`, none for None), its result."""
    call = Call(_CALL_ID, "get_weather", '{"city": "Lisbon"}')
    reasoning = _marker(field) if field is not None else ""
    return (
        Turn("user", "What is the weather in Lisbon right now?"),
        Turn("assistant", "", reasoning=reasoning, reasoning_field=field or "", calls=(call,)),
        Turn("tool", _WEATHER, call_id=_CALL_ID, name="get_weather"),
    )


def _tools() -> tuple[ToolSpec, ...]:
    return (
        ToolSpec(
            "get_weather",
            "Current weather for a city.",
            {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        ),
    )


def _round(
    client: Backend,
    model: str,
    turns: tuple[Turn, ...],
    max_tokens: int,
    *,
    tools: tuple[ToolSpec, ...] = (),
    extra: dict[str, Any] | None = None,
    kind: str,
) -> Trace:
    """One recorded request, never raising a RigError: its trace."""
    request = Request(model, turns, max_tokens, tools=tools, extra=extra or {})
    settings = {"kind": kind, "max_tokens": max_tokens, "extra_body": extra or {}}
    return record_one(client, request, settings, extra)[0]


def _status(trace: Trace) -> str:
    exc = trace.exception
    if isinstance(exc, BackendError) and exc.status_code is not None:
        return f"error {exc.status_code}"
    return "error"


def _prompt_tokens(trace: Trace) -> int | None:
    if trace.ending == "error" or not trace.iterations:
        return None
    return kept_count(trace.iterations[-1].usage.get("prompt_tokens"))


def _by_template(client: Backend, model: str, route: str) -> tuple[str, str] | None:
    """(verdict, evidence) from the server's template route (llama-server's
    /apply-template), None when it cannot say."""
    found: list[str] = []
    for field in TEMPLATE_CANDIDATES:
        request = Request(model, replay_conversation(field), 1, tools=_tools())
        try:
            prompt = apply_template(client, request, route)
        except RigError:
            return None
        if _marker(field) in prompt:
            found.append(field)
    if found:
        return f"rendered via {found[0]}", f"{route} renders {', '.join(found)}"
    return "ignored", f"{route} renders none of {', '.join(TEMPLATE_CANDIDATES)}"


def reasoning_replay_check(
    client: Backend, model: str, server: Server, writes: str = ""
) -> tuple[str, str, Trace | None]:
    """(verdict, evidence, trace) of `reasoning_replay`; `writes` is the field replies use."""
    if server.template_route:
        judged = _by_template(client, model, server.template_route)
        if judged is not None:
            return judged[0], judged[1], None
    tools = _tools()
    base = _round(client, model, replay_conversation(None), 1, tools=tools, kind="replay")
    tries = {
        f: _round(client, model, replay_conversation(f), 1, tools=tools, kind="replay")
        for f in REPLAY_CANDIDATES
    }
    answered = {f: t for f, t in tries.items() if t.ending != "error"}
    if base.ending == "error":
        if not answered:
            return _status(base), "every request failed", base
        field = next(iter(answered))
        why = f"{_status(base)} without it, answered with {field}"
        return f"rendered via {field}", why, answered[field]
    plain = _prompt_tokens(base)
    if plain is None:
        return "n/a", "no prompt_tokens reported to judge by", base
    counts = {f: _prompt_tokens(t) for f, t in answered.items()}
    seen = ", ".join(f"{f} {n}" for f, n in counts.items())
    evidence = f"prompt_tokens without reasoning {plain}; with {seen or 'no reply'}"
    for field, count in counts.items():
        if count is not None and count > plain:
            return f"rendered via {field}", evidence, tries[field]
    if not answered:
        return _status(next(iter(tries.values()))), evidence, base
    return "ignored", evidence, base


def _reasons(it: Iteration) -> bool:
    return bool(
        it.reasoning_content.strip()
        or (kept_count(it.usage.get("reasoning_tokens")) or 0) > 0
        or it.reasoning_shape != "none"
    )


def thinking_switch_check(
    client: Backend, model: str, server: Server
) -> tuple[str, str, Trace | None, dict[str, Any]]:
    """(verdict, evidence, trace, fields sent for off) of `thinking_switch`."""
    off = client.wire.thinking_fields(False, server)
    on = client.wire.thinking_fields(True, server)
    question = (Turn("user", SWITCH_QUESTION),)
    t_off = _round(client, model, question, SWITCH_MAX_TOKENS, extra=off, kind="thinking off")
    if t_off.ending == "error":
        return _status(t_off), f"thinking off sent as {describe_sent(off)}", t_off, off
    t_on = _round(client, model, question, SWITCH_MAX_TOKENS, extra=on, kind="thinking on")
    it_off = t_off.iterations[-1]
    sent = f"off sent as {describe_sent(off)}"
    if _reasons(it_off):
        where = (
            f"reasoning in {it_off.reasoning_field}"
            if it_off.reasoning_content.strip()
            else (
                f"reasoning markup ({it_off.reasoning_shape}) in content"
                if it_off.reasoning_shape != "none"
                else "reasoning_tokens reported"
            )
        )
        return "ignored", f"{sent}; still {where}", t_off, off
    if t_on.ending != "error" and _reasons(t_on.iterations[-1]):
        return "honored", f"{sent}; no reasoning off, reasoning on", t_off, off
    return "n/a", f"{sent}; no reasoning with thinking on either", t_on, off


def apply_template(client: Backend, request: Request, route: str) -> str:
    """The server's template route (llama-server's `POST /apply-template`, at the server
    root): the prompt its chat template renders for `request` (sent as the chat completions
    body that route takes). One request, no retries; BackendError when it fails or sends
    no prompt."""
    prompt = applied_template(client.server_route(route, WIRES["chat"].body(request)))
    if prompt is None:
        raise BackendError(f"ai backend: {route} sent no prompt", kind="reply")
    return prompt


def replay_advice(server: Server, verdict: str, writes: str, input_field: str = "") -> str:
    """The fix for a `reasoning_replay` verdict; `writes` is the field the replies used."""
    if verdict == "ignored":
        return server.advice("reasoning_replay")
    field = verdict.removeprefix("rendered via ")
    if field == verdict:
        return ""
    # What RunRequest(reasoning_field="auto") sends back: the field replies use, else the
    # server kind's input field.
    auto = writes if writes in ("reasoning_content", "reasoning", "thinking") else ""
    sent = auto or input_field
    if sent == field:
        return ""
    return (
        f"this endpoint reads reasoning back only as {field}, the loop would send {sent}: "
        f'run with RunRequest(reasoning_field="{field}")'
    )


def thinking_switch_advice(server: Server, verdict: str, off: dict[str, Any]) -> str:
    """The fix for a `thinking_switch` verdict; `off` is what thinking=False was sent as."""
    if verdict == "ignored":
        return server.advice("thinking_switch")
    # A 400 or 422 to the request that carried the switch: a field the server refuses.
    if verdict in ("error 400", "error 422") and off:
        return (
            f"the endpoint rejects the thinking switch sent as {describe_sent(off)}: set the "
            "field this server takes by hand in RunRequest(extra_body=...), with thinking unset"
        )
    return ""


def reasoning_checks(client: Backend, model: str, server: Server, location: str) -> list[Found]:
    """Both checks for `endpoint_report`, advice included; `location` is reasoning_location's
    verdict (`field:NAME` names the field the replies used)."""
    writes = location.removeprefix("field:") if location.startswith("field:") else ""
    verdict, evidence, trace = reasoning_replay_check(client, model, server, writes)
    # A model that showed no reasoning at all has none to lose: no advice.
    reads = client.wire.replay_field(server)
    fix = replay_advice(server, verdict, writes, reads) if location != "none" else ""
    replay: Found = ("reasoning_replay", verdict, evidence, fix, trace)
    switch, why, switch_trace, off = thinking_switch_check(client, model, server)
    thinking: Found = (
        "thinking_switch",
        switch,
        why,
        thinking_switch_advice(server, switch, off),
        switch_trace,
    )
    return [replay, thinking]
