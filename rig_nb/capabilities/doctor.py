"""The endpoint doctor: what an endpoint really does, and what to change on the server.

    report = endpoint_report(client, "qwen3")
    report.server                      # "vllm", "llama.cpp", ... or "unknown"
    report.to_dataframe()              # check, verdict, evidence, advice

Every check is one entry of `_SPECS`: the shared requests it reads (`replies.ASKS`: the
tool_choice probes, the reasoning question, both streamed), the model requests of its own,
and how it judges. `CHECKS` maps each check's name to the most model requests it makes
(its own and the shared ones it reads, on a server that answers every wire); a report of
some checks sends the shared requests they read once, then each check's own, so it never
makes more than the sum of their budgets (`EndpointReport.requests` counts them). Besides
model requests, the model list and the server's metadata routes (version, context window;
at most 2), and on a server with a template route the renderings it asks for.

An address with no model list whose first probe is answered "not here" (404, 405, 501,
or a body that is not a chat completion) gets one check, `not_openai_compatible`, and
nothing more is asked. `progress` hears of each request and `cancel` ends the report
between requests. Every check keeps its trace. Evidence is redacted, then cut short, and
escaped wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._boundary import CancelFlag, Progress, request_scope
from ..clients import CLIENTS
from ..errors import BackendError, Cancelled, RigError
from ..servers import Models, entry_for, guess_server, profile, server_of_models
from ..trace import Trace
from ..wire import WIRES
from .advice import advice
from .agent_clients import AGENT_CLIENT_REQUESTS, agent_clients_check
from .api_parity import api_parity
from .concurrency import CONCURRENT_PROBES, concurrency_check
from .honored import HONORED_PARAMS, honored_params_check
from .long_context import context_window_check, prefix_cache_check, server_facts
from .replies import (
    ALL,
    ASKS,
    PROBES,
    STREAMED_ASKS,
    TOOL_CHOICES,
    Asked,
    ask_question,
    cut,
    hygiene_check,
    leak_dialects_check,
    native_call_hygiene,
    probe_check,
    reasoning_location,
    reasoning_tokens_check,
    reasons,
    replies,
    shared_request,
    stream_grammar_check,
    stream_parity_check,
    text_tool_calls_check,
    tool_choice_matrix,
    tool_choice_verdict,
    usage_check,
    verdict_of,
)
from .report import NOT_OPENAI_COMPATIBLE, Check, EndpointReport, describe_report, verdict_ok
from .structured import structured_output_check
from .thinking import (
    reasoning_replay_check,
    replay_advice,
    thinking_switch_advice,
    thinking_switch_check,
)
from .tool_schemas import (
    SCHEMA_FEATURES,
    TOOL_SCHEMAS_FEATURES,
    SchemaCheck,
    SchemaReport,
    tool_schema_report,
    tool_schemas_check,
)

if TYPE_CHECKING:
    from ..backend import Backend

__all__ = [
    "CHECKS",
    "NOT_OPENAI_COMPATIBLE",
    "SCHEMA_FEATURES",
    "TOOL_CHOICES",
    "Check",
    "EndpointReport",
    "SchemaCheck",
    "SchemaReport",
    "describe_report",
    "endpoint_report",
    "guess_server",
    "native_call_hygiene",
    "server_of_models",
    "tool_choice_matrix",
    "tool_choice_verdict",
    "tool_schema_report",
]

# Statuses that say "no such route or method here", not "this request failed".
_NOT_HERE = frozenset({404, 405, 501})
_FOREIGN_ADVICE = (
    "this address does not serve an OpenAI-compatible API: check the base URL "
    "(--base-url; it should end at /v1)"
)
# One check's findings before its Check is made: verdict, evidence, advice, trace.
Found = tuple[str, str, str, "Trace | None"]
Judged = tuple[str, str, "Trace | None"]


@dataclass(frozen=True)
class _Spec:
    """One check: the shared requests it reads, its own model requests, and how it judges:
    `run` gives its findings with their advice, or `judge` gives them without, and the
    server profile's advice for the verdict is added (`advice.advice`)."""

    needs: tuple[str, ...]
    own: int = 0
    run: Callable[[Asked], Found] | None = None
    judge: Callable[[Asked], Judged] | None = None

    def found(self, name: str, asked: Asked) -> Found:
        if self.run is not None:
            return self.run(asked)
        assert self.judge is not None
        verdict, evidence, trace = self.judge(asked)
        auto = verdict_of(asked.traces["auto"]) if "auto" in asked.traces else ""
        quiet = name == "reasoning_tokens_reported" and not reasons(replies(asked.got(*ALL)))
        fix = "" if quiet else advice(asked.server, name, verdict, auto=auto)
        return verdict, evidence, fix, trace


def _location(asked: Asked) -> Judged:
    return (*reasoning_location(asked), asked.traces.get("question"))


def _replay(asked: Asked) -> Found:
    location = reasoning_location(asked)[0]
    writes = location.removeprefix("field:") if location.startswith("field:") else ""
    verdict, evidence, trace = reasoning_replay_check(
        asked.client, asked.model, asked.server, writes
    )
    reads = asked.client.wire.replay_field(asked.server)
    # A model that showed no reasoning at all has none to lose: no advice.
    fix = replay_advice(asked.server, verdict, writes, reads) if location != "none" else ""
    return verdict, evidence, fix, trace


def _switch(asked: Asked) -> Found:
    verdict, why, trace, off = thinking_switch_check(asked.client, asked.model, asked.server)
    return verdict, why, thinking_switch_advice(asked.server, verdict, off), trace


def _structured(asked: Asked) -> Found:
    found = structured_output_check(asked.client, asked.model, asked.server)
    return found.verdict, found.evidence, found.advice, found.trace


def _window(asked: Asked) -> Found:
    facts = asked.facts
    window, where = (facts.context_window, facts.evidence) if facts else (None, "")
    _, verdict, evidence, fix, trace = context_window_check(
        asked.client, asked.model, asked.server, window, where
    )
    return verdict, evidence, fix, trace


def _prefix(asked: Asked) -> Found:
    probe, question = asked.traces.get("auto", Trace()), asked.traces.get("question", Trace())
    _, verdict, evidence, fix, trace = prefix_cache_check(
        asked.client, asked.model, asked.server, probe, question
    )
    return verdict, evidence, fix, trace


def _concurrency(asked: Asked) -> Found:
    return concurrency_check(asked.client, asked.model, asked.server)


def _tool_schemas(asked: Asked) -> Found:
    return tool_schemas_check(asked.client, asked.model, asked.server)


def _agent_clients(asked: Asked) -> Found:
    return agent_clients_check(asked.client, asked.model, asked.server, stream=asked.stream)


def _honored(asked: Asked) -> Found:
    found = honored_params_check(asked.client, asked.model, asked.server)
    return found.verdict, found.evidence, found.advice, found.trace


def _parity(asked: Asked) -> Found:
    model = asked.model
    verdict, evidence, fix, trace = api_parity(
        asked.client,
        model,
        asked.server,
        lambda c: ask_question(c, model, False)[0],
        asked.traces["question"],
        asked.traces["auto"],
    )
    return verdict, cut(evidence), fix, trace


_SPECS: dict[str, _Spec] = {
    "tool_choice_unset": _Spec(("unset", "auto"), judge=probe_check("unset")),
    "tool_choice_auto": _Spec(("auto",), judge=probe_check("auto")),
    "tool_choice_required": _Spec(("required", "auto"), judge=probe_check("required")),
    "reasoning_location": _Spec(("question", *PROBES), judge=_location),
    "leak_dialects": _Spec(ALL, judge=leak_dialects_check),
    "text_tool_calls": _Spec(ALL, judge=text_tool_calls_check),
    "native_call_hygiene": _Spec(
        (*PROBES, "question_streamed", "auto_streamed"), judge=hygiene_check
    ),
    "stream_parity": _Spec(
        ("question", "auto", "question_streamed", "auto_streamed"), judge=stream_parity_check
    ),
    "stream_grammar": _Spec(("question_streamed", "auto_streamed"), judge=stream_grammar_check),
    "usage_reported": _Spec(ALL, judge=usage_check),
    "reasoning_tokens_reported": _Spec(ALL, judge=reasoning_tokens_check),
    "reasoning_replay": _Spec(("question", *PROBES), 3, _replay),
    "thinking_switch": _Spec((), 2, _switch),
    "structured_output": _Spec((), 1, _structured),
    "context_window": _Spec((), 1, _window),
    "prefix_cache": _Spec(("auto", "question"), 2, _prefix),
    "concurrency": _Spec((), 1 + CONCURRENT_PROBES, _concurrency),
    "tool_schemas": _Spec((), len(TOOL_SCHEMAS_FEATURES), _tool_schemas),
    "honored_params": _Spec((), len(HONORED_PARAMS), _honored),
    "agent_clients": _Spec((), AGENT_CLIENT_REQUESTS * len(CLIENTS), _agent_clients),
    "api_parity": _Spec(("question", "auto"), 2 * (len(WIRES) - 1), _parity),
}

# Every check by name, in report order, with the most model requests it makes.
CHECKS: dict[str, int] = {name: len(set(s.needs)) + s.own for name, s in _SPECS.items()}
# Checks that run right after the shared requests, in this order: the prefix first, while
# the server may still hold it in its cache.
_EARLY = ("prefix_cache", "context_window")


def _selected(checks: Collection[str] | None) -> list[str]:
    """The checks to make, in report order; ValueError naming every check for an unknown one."""
    if checks is None:
        return list(CHECKS)
    if isinstance(checks, str) or not isinstance(checks, Collection):
        raise ValueError("checks must be None or a collection of check names")
    unknown = sorted(str(c) for c in checks if c not in CHECKS)
    if unknown:
        raise ValueError(f"unknown check {', '.join(unknown)}: the checks are {', '.join(CHECKS)}")
    return [name for name in CHECKS if name in checks]


def _shared(names: list[str], stream: bool) -> list[str]:
    """The shared requests the checks `names` read, in the order they are sent."""
    wanted = {n for name in names for n in _SPECS[name].needs}
    return [a for a in ASKS if a in wanted and (stream or a not in STREAMED_ASKS)]


def planned_requests(checks: Collection[str] | None = None, *, stream: bool = True) -> int:
    """The model requests a report of `checks` plans (the shared ones once), at most."""
    names = _selected(checks)
    return len(_shared(names, stream)) + sum(_SPECS[n].own for n in names)


def _not_here(error: BaseException | None) -> bool:
    return isinstance(error, BackendError) and (
        error.status_code in _NOT_HERE or error.kind == "reply"
    )


def _answered(error: BaseException | None, redact: Callable[[str], str]) -> str:
    if isinstance(error, BackendError) and error.status_code is not None:
        return f"HTTP {error.status_code}"
    if isinstance(error, BackendError):
        return cut(redact(error.message.removeprefix("ai backend: ")), 70)
    return "no error"


def _foreign(
    client: Backend, model: str, probe: Trace, models_error: RigError | None
) -> EndpointReport:
    """The report of an address that does not serve the API: one check, no more requests."""
    listed = _answered(models_error, client.redact)
    said = _answered(probe.exception, client.redact)
    evidence = f"GET models: {listed}; POST {client.wire.route.lstrip('/')}: {said}"
    check = Check(NOT_OPENAI_COMPATIBLE, "yes", evidence, _FOREIGN_ADVICE, trace=probe)
    return EndpointReport(model=model, server="unknown", checks=[check])


def endpoint_report(
    client: Backend,
    model: str,
    *,
    stream: bool = True,
    checks: Collection[str] | None = None,
    progress: Progress | None = None,
    cancel: CancelFlag | None = None,
) -> EndpointReport:
    """Probe `model` on `client`'s endpoint with a bounded set of requests: the checks
    `checks` names (None: every check in `CHECKS`; an unknown name is a ValueError listing
    them, before any request), each within its budget in `CHECKS`. `stream=False` leaves
    out the streamed requests (and `stream_parity` says `not checked`).

    `progress(done, planned)` is called from the calling thread before the first
    request and after each one. `cancel` (a threading.Event, or a callable that
    returns True) ends the report at the next request boundary: no request is
    sent after it, the one in flight ends or is cut by the Client's deadline,
    and the report keeps what was found; a check left without its reply says
    `cancelled`.
    """
    names = _selected(checks)
    # The model list and up to two metadata routes besides the model requests.
    planned = 3 + planned_requests(names, stream=stream)
    with request_scope(planned=planned, progress=progress, cancel=cancel) as scope:
        report = _report(client, model, stream, names)
    if scope.stopped:
        _mark_cancelled(report)
    for c in report.checks:
        c.ok = verdict_ok(c.name, c.verdict, c.advice)
    report.requests = scope.model_requests
    return report


# Verdicts that only say nothing was found: after a cancel, they say it was not looked for.
_UNJUDGED = frozenset({"no", "none", "n/a", "not checked"})
# These name findings gathered over several replies; their trace is only the one shown.
_GATHERED = frozenset(
    {
        "reasoning_location",
        "leak_dialects",
        "text_tool_calls",
        "native_call_hygiene",
        "usage_reported",
    }
)


def _mark_cancelled(report: EndpointReport) -> None:
    """A cancelled report: a check whose own reply never came, or that found nothing in
    the replies that did come, says `cancelled`; what was found stays."""
    for c in report.checks:
        own = c.trace is not None and isinstance(c.trace.exception, Cancelled)
        if c.verdict in _UNJUDGED or (own and c.name not in _GATHERED):
            c.verdict, c.advice = "cancelled", ""
            c.evidence = "cancelled before this check's reply came"


def _report(client: Backend, model: str, stream: bool, names: list[str]) -> EndpointReport:
    """`endpoint_report` without its progress and cancel."""
    models = Models()
    models_error: RigError | None = None
    try:
        models = client.list_models()
    except RigError as exc:
        models_error = exc
    asked = Asked(client, model, stream, profile("unknown"))
    for i, name in enumerate(_shared(names, stream)):
        shared_request(asked, name)
        trace = asked.traces[name]
        if i == 0 and _not_here(models_error) and _not_here(trace.exception):
            return _foreign(client, model, trace, models_error)
    listed = entry_for(models.items, model)
    asked.server = profile(server_of_models(models, model, asked.reply))
    # Right after turn 1 (the probes), before other requests evict its cached prefix.
    headers = asked.reply.headers if asked.reply is not None else None
    asked.facts = server_facts(client, model, asked.server, listed, headers)
    found: dict[str, Check] = {}
    # A verdict may quote what the endpoint sent (a fault's name, a finish reason): it is
    # redacted as evidence is.
    redact = client.redact
    for name in [*(n for n in _EARLY if n in names), *(n for n in names if n not in _EARLY)]:
        verdict, evidence, fix, shown = _SPECS[name].found(name, asked)
        found[name] = Check(name, redact(verdict), redact(evidence), fix, shown)
    return EndpointReport(
        model,
        asked.server.name,
        [found[name] for name in names],
        asked.facts.version,
        asked.facts.context_window,
    )
