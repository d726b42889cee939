"""The endpoint doctor: what an endpoint really does, and what to change on the server.

    report = endpoint_report(client, "qwen3")
    report.server                      # "vllm", "llama.cpp", ... or "unknown"
    report.to_dataframe()              # check, verdict, evidence, advice

The model list, the tool_choice matrix (tool_choice
unset, "auto", "required": a llama.cpp server with SmolLM2 answers in text,
calls a tool, and fails with HTTP 500), one short reasoning question, and,
with `stream=True`, that question and the "auto" probe again streamed, to
see whether the two paths agree; then up to 5 for reasoning across turns
(`capabilities.thinking`: `reasoning_replay`, `thinking_switch`), and one
question asked with `response_format` (`capabilities.structured`:
`structured_output`). `progress` hears of each request and `cancel` ends the
report between requests. An address with no model list whose first
probe is answered "not here" (404, 405, 501, or a body that is not a chat
completion) gets one check, `not_openai_compatible`, and nothing more is
asked. A check whose every request failed says so (`error <status>`, `n/a`),
never `same` or `no`. Every check keeps its trace. Evidence is redacted, then
cut short, and escaped wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._boundary import CancelFlag, Progress, request_scope
from ..dialects import TOOL_CALL_DIALECTS
from ..errors import BackendError, Cancelled, RigError
from ..loop import markup_in_call
from ..probe import probe_trace
from ..record import record_one
from ..servers import guess_server, server_of_models
from ..trace import Iteration, Trace
from ..wire import TOOL_CHOICES as ALL_TOOL_CHOICES
from ..wire import WIRES, Reply, Request, Turn
from .advice import advice
from .api_parity import api_parity
from .stream_grammar import stream_grammar
from .structured import STRUCTURED_CHECKS, structured_output_check
from .thinking import THINKING_CHECKS, reasoning_checks

if TYPE_CHECKING:
    import pandas as pd

    from ..backend import Backend

__all__ = [
    "CHECKS",
    "NOT_OPENAI_COMPATIBLE",
    "TOOL_CHOICES",
    "Check",
    "EndpointReport",
    "describe_report",
    "endpoint_report",
    "guess_server",
    "server_of_models",
    "tool_choice_matrix",
    "tool_choice_verdict",
]

# The matrix: what an endpoint does with tool_choice unset, "auto" and "required", in that order.
TOOL_CHOICES: dict[str, str | None] = {
    k: ALL_TOOL_CHOICES[k] for k in ("unset", "auto", "required")
}
CHECKS = (
    "tool_choice_unset",
    "tool_choice_auto",
    "tool_choice_required",
    "reasoning_location",
    "leak_dialects",
    "text_tool_calls",
    "native_call_hygiene",
    "stream_parity",
    "stream_grammar",
    "usage_reported",
    "reasoning_tokens_reported",
    *THINKING_CHECKS,
    *STRUCTURED_CHECKS,
    "api_parity",
)
# The one check of an address that does not serve the API: no other check is made.
NOT_OPENAI_COMPATIBLE = "not_openai_compatible"
# Statuses that say "no such route or method here", not "this request failed".
_NOT_HERE = frozenset({404, 405, 501})
_FOREIGN_ADVICE = (
    "this address does not serve an OpenAI-compatible API: check the base URL "
    "(--base-url; it should end at /v1)"
)
QUESTION = "What is 17 * 23? Think it through briefly, then give the result in one sentence."
QUESTION_MAX_TOKENS = 512
_EVIDENCE_CHARS = 160


@dataclass
class Check:
    """One finding: its verdict, the evidence for it, the server-side fix, and its trace."""

    name: str
    verdict: str
    evidence: str = ""
    advice: str = ""
    trace: Trace | None = field(default=None, repr=False)


@dataclass
class EndpointReport:
    """What `endpoint_report` found: the model, the guessed server kind, and each check."""

    model: str
    server: str
    checks: list[Check] = field(default_factory=list)

    def check(self, name: str) -> Check:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "server": self.server,
            "checks": [
                {"name": c.name, "verdict": c.verdict, "evidence": c.evidence, "advice": c.advice}
                for c in self.checks
            ],
        }

    def to_dataframe(self) -> pd.DataFrame:
        """One row per check: check, verdict, evidence, advice."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("this needs pandas: pip install 'rig_nb[notebook]'") from None
        rows = [(c.name, c.verdict, c.evidence, c.advice) for c in self.checks]
        df: pd.DataFrame = pd.DataFrame(rows, columns=["check", "verdict", "evidence", "advice"])
        return df


def tool_choice_verdict(client: Backend, model: str, tool_choice: str | None) -> str:
    """One probe: "tool call", "text", "length", "error <status>", or "error"."""
    return _verdict(probe_trace(client, model, tool_choice=tool_choice))


def tool_choice_matrix(client: Backend, model: str) -> dict[str, str]:
    """Probe `model` once per tool_choice setting (unset, "auto", "required"), in that order."""
    return {key: tool_choice_verdict(client, model, choice) for key, choice in TOOL_CHOICES.items()}


def _verdict(trace: Trace) -> str:
    exc = trace.exception
    if isinstance(exc, Cancelled):
        return "cancelled"
    if trace.outcome == "ok":
        return "tool call"
    if trace.ending == "tool_calls_in_reasoning":
        return "call in reasoning"  # the server's parser left the family's call unparsed
    if trace.outcome == "NoToolCallingError":
        return "text"
    if trace.outcome == "OutputLimitError":
        return "length"
    if isinstance(exc, BackendError):
        return "error" if exc.status_code is None else f"error {exc.status_code}"
    return f"error {trace.outcome}"


Redact = Callable[[str], str]


def _cut(text: str, limit: int = _EVIDENCE_CHARS) -> str:
    """`text` on one line, cut to `limit`; endpoint text goes through _short instead."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _short(text: str, redact: Redact, limit: int = _EVIDENCE_CHARS) -> str:
    """Endpoint text redacted, then cut: a key cut first would no longer match."""
    return _cut(redact(text), limit)


def _said(it: Iteration, redact: Redact, raw: bool = False) -> str:
    """A short account of one reply: finish, calls, the answer (or with `raw`, the content)."""
    n = len(it.tool_calls)
    parts = [f"finish {it.finish_reason or '-'}", f"{n} tool call{'' if n == 1 else 's'}"]
    if it.ending:
        parts.append(f"ending {it.ending}")
    if it.text and not raw:
        parts.append(f'answer "{_short(it.text, redact, 80)}"')
    elif it.raw_content.strip():
        parts.append(f'content "{_short(it.raw_content, redact, 80)}"')
    if it.reasoning_shape != "none":
        parts.append(f"shape {it.reasoning_shape}")
    if it.reasoning_content:
        parts.append(f'{it.reasoning_field} "{_short(it.reasoning_content, redact, 60)}"')
    return "; ".join(parts)


def _evidence(trace: Trace, redact: Redact) -> str:
    if not trace.iterations:
        return ""
    it = trace.iterations[-1]
    if it.ending == "error":
        return _short(trace.error, redact)
    return _cut(_said(it, redact))


def _failed(traces: list[Trace]) -> bool:
    """True when no request of `traces` got a reply."""
    return all(it.ending == "error" for t in traces for it in t.iterations)


def _error_verdict(traces: list[Trace]) -> str:
    """The verdict of a check whose every request failed: the first failure's `error <status>`."""
    if any(isinstance(t.exception, Cancelled) for t in traces):
        return "cancelled"
    for t in traces:
        if isinstance(t.exception, BackendError) and t.exception.status_code is not None:
            return f"error {t.exception.status_code}"
    return "error"


def _not_here(error: BaseException | None) -> bool:
    return isinstance(error, BackendError) and (
        error.status_code in _NOT_HERE or error.kind == "reply"
    )


def _ask(client: Backend, model: str, stream: bool) -> tuple[Trace, Reply | None]:
    """The reasoning question as one recorded round; the trace and the reply (None on failure)."""
    request = Request(model, (Turn("user", QUESTION),), QUESTION_MAX_TOKENS, stream=stream)
    return record_one(client, request, {"kind": "question", "max_tokens": QUESTION_MAX_TOKENS})


def _replies(traces: list[Trace]) -> list[Iteration]:
    return [it for t in traces for it in t.iterations if it.ending != "error"]


def _reasoning_location(its: list[Iteration], redact: Redact) -> tuple[str, str]:
    for it in its:
        if it.reasoning_shape != "none":
            return f"content:{it.reasoning_shape}", _said(it, redact, raw=True)
    for it in its:
        if it.reasoning_content:
            return f"field:{it.reasoning_field}", _said(it, redact)
    return "none", "no reasoning seen in content or in a reasoning field"


def _parity(plain: tuple[Trace, Trace], probe: tuple[Trace, Trace] | None) -> tuple[str, str]:
    """How the streamed replies differ from the unstreamed ones, structurally."""
    diffs: list[str] = []
    pairs = [("question", *plain)] + ([("auto probe", *probe)] if probe else [])
    compared = 0
    for label, whole, streamed in pairs:
        a, b = whole.iterations[-1], streamed.iterations[-1]
        if a.ending == "error" and b.ending == "error":
            continue  # nothing to compare: both requests failed
        compared += 1
        if (a.ending == "error") != (b.ending == "error"):
            which = "streamed" if b.ending == "error" else "not streamed"
            diffs.append(f"{label}: fails only when {which}")
            continue
        if a.reasoning_shape != b.reasoning_shape:
            diffs.append(
                f"{label}: tags {a.reasoning_shape} not streamed, {b.reasoning_shape} streamed"
            )
        if bool(a.reasoning_content) != bool(b.reasoning_content):
            where = "not streamed" if a.reasoning_content else "streamed"
            diffs.append(f"{label}: reasoning in the field only when {where}")
        elif a.reasoning_field != b.reasoning_field:
            diffs.append(f"{label}: reasoning field {a.reasoning_field} vs {b.reasoning_field}")
        if bool(a.tool_calls or a.finish_reason == "tool_calls") != bool(
            b.tool_calls or b.finish_reason == "tool_calls"
        ) or (whole.outcome == "ok") != (streamed.outcome == "ok"):
            where = "not streamed" if whole.outcome == "ok" else "streamed"
            diffs.append(f"{label}: tool calls only when {where}")
        if a.leaks != b.leaks:
            diffs.append(f"{label}: leaks {a.leaks} vs {b.leaks}")
    if not compared:
        traces = [t for pair in (plain, *((probe,) if probe else ())) for t in pair]
        return _error_verdict(traces), "every request failed, streamed and not"
    if not diffs:
        return "same", "streamed and not streamed replies have the same structure"
    return "differs: " + "; ".join(diffs), ""


def _answered(error: BaseException | None, redact: Redact) -> str:
    if isinstance(error, BackendError) and error.status_code is not None:
        return f"HTTP {error.status_code}"
    if isinstance(error, BackendError):
        return _short(error.message.removeprefix("ai backend: "), redact, 70)
    return "no error"


def _foreign(
    client: Backend, model: str, probe: Trace, models_error: RigError | None
) -> EndpointReport:
    """The report of an address that does not serve the API: one check, no more requests."""
    listed = _answered(models_error, client.redact)
    said = _answered(probe.exception, client.redact)
    evidence = f"GET models: {listed}; POST chat/completions: {said}"
    check = Check(NOT_OPENAI_COMPATIBLE, "yes", evidence, _FOREIGN_ADVICE, trace=probe)
    return EndpointReport(model=model, server="unknown", checks=[check])


def endpoint_report(
    client: Backend,
    model: str,
    *,
    stream: bool = True,
    progress: Progress | None = None,
    cancel: CancelFlag | None = None,
) -> EndpointReport:
    """Probe `model` on `client`'s endpoint with a bounded set of requests: the model
    list, and at most 14 requests to the model (the probes 3, the question 1, both
    streamed 2; round 3's checks as DESIGN defines them: reasoning_replay 3,
    thinking_switch 2, structured_output 1, api_parity 2); on llama.cpp, reasoning_replay
    asks `/apply-template` first (up to 3 requests) and the model only when it cannot.

    `progress(done, planned)` is called from the calling thread before the first
    request and after each one. `cancel` (a threading.Event, or a callable that
    returns True) ends the report at the next request boundary: no request is
    sent after it, the one in flight ends or is cut by the Client's deadline,
    and the report keeps what was found; a check left without its reply says
    `cancelled`.
    """
    planned = 1 + len(TOOL_CHOICES) + 1 + (2 if stream else 0) + _LATER_REQUESTS
    with request_scope(planned=planned, progress=progress, cancel=cancel) as scope:
        report = _report(client, model, stream=stream)
    if scope.stopped:
        _mark_cancelled(report)
    return report


# Requests after the stream parity pair: reasoning_replay (3), thinking_switch (2),
# structured_output (1), api_parity (2 over each other wire). Progress counts what was
# sent when it differs.
_LATER_REQUESTS = 6 + 2 * (len(WIRES) - 1)
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


def _report(client: Backend, model: str, *, stream: bool) -> EndpointReport:
    """`endpoint_report` without its progress and cancel.

    An address with no model list whose first probe is answered "not here" gets one
    check, `not_openai_compatible`, after those two requests.
    """
    redact = client.redact
    owned_by = ""
    models_error: RigError | None = None
    try:
        for m in client.list_models().items:
            if m.get("id") == model and isinstance(m.get("owned_by"), str):
                owned_by = m["owned_by"]
    except RigError as exc:
        models_error = exc
    probes: dict[str, Trace] = {}
    for key, choice in TOOL_CHOICES.items():
        probes[key] = probe_trace(client, model, tool_choice=choice)
        if len(probes) == 1 and _not_here(models_error) and _not_here(probes[key].exception):
            return _foreign(client, model, probes[key], models_error)
    plain, reply = _ask(client, model, stream=False)
    streamed: tuple[Trace, Trace] | None = None
    if stream:
        streamed = (_ask(client, model, stream=True)[0], probe_trace(client, model, stream=True))
    server = guess_server(owned_by, reply)
    checks = [
        Check(f"tool_choice_{key}", _verdict(t), _evidence(t, redact), trace=t)
        for key, t in probes.items()
    ]
    traces = [plain, *probes.values(), *(streamed or ())]
    its = _replies(traces)
    # A check that had no reply to judge says why, instead of "no" or "none".
    unjudged = _error_verdict(traces) if not its else ""
    asked = [plain, *probes.values()]
    location, where = _reasoning_location(_replies(asked), redact)
    if _failed(asked):
        location, where = _error_verdict(asked), "no request got a reply"
    checks.append(Check("reasoning_location", location, _cut(where), trace=plain))
    leaks = list(dict.fromkeys(name for it in its for name in it.leaks))
    leak_its = [it for it in its if it.leaks]
    checks.append(
        Check(
            "leak_dialects",
            ",".join(leaks) or unjudged or "no",
            _cut(_said(leak_its[0], redact, raw=True)) if leak_its else "",
            trace=plain,
        )
    )
    text_calls = [it for it in its if it.ending == "text_tool_calls"]
    # Harmony carries calls only as commentary messages: it counts when a turn ended in one.
    dialects = [d for it in text_calls for d in it.leaks if d in TOOL_CALL_DIALECTS | {"harmony"}]
    verdict = ",".join(dict.fromkeys(dialects)) or ("yes" if text_calls else unjudged or "no")
    text_trace = next((t for t in probes.values() if t.ending == "text_tool_calls"), None)
    checks.append(
        Check(
            "text_tool_calls",
            verdict,
            _cut(_said(text_calls[0], redact)) if text_calls else "",
            trace=text_trace or probes["auto"],
        )
    )
    hygiene, why, dirty = native_call_hygiene([*probes.values(), *(streamed or ())])
    hygiene = hygiene or unjudged or "n/a"
    checks.append(Check("native_call_hygiene", hygiene, _cut(why), trace=dirty))
    if streamed is not None:
        parity, why = _parity((plain, streamed[0]), (probes["auto"], streamed[1]))
        checks.append(Check("stream_parity", parity, _cut(why), trace=streamed[0]))
    else:
        checks.append(Check("stream_parity", "not checked", "stream=False", trace=None))
    grammar, said, faulty = stream_grammar(streamed or ())
    checks.append(Check("stream_grammar", grammar, _cut(said), trace=faulty))
    counted = [it for it in its if "prompt_tokens" in it.usage or "completion_tokens" in it.usage]
    usage = ("yes" if counted else "no") if its else "n/a"
    checks.append(Check("usage_reported", usage, f"{len(counted)}/{len(its)} replies"))
    reasoned = any(it.reasoning_content or it.reasoning_shape != "none" for it in its)
    with_tokens = [it for it in its if "reasoning_tokens" in it.usage]
    checks.append(
        Check(
            "reasoning_tokens_reported",
            ("yes" if with_tokens else "no") if its else "n/a",
            "reasoning seen in the replies" if reasoned else "no reasoning seen",
        )
    )
    auto = _verdict(probes["auto"])
    for c in checks:
        silent = c.name == "reasoning_tokens_reported" and not reasoned
        kind = server if server != "unknown" else ""
        c.advice = "" if silent else advice(kind, c.name, c.verdict, auto=auto)
    # Up to 5 more requests; these two checks carry their own advice.
    checks.extend(Check(*found) for found in reasoning_checks(client, model, server, location))
    checks.append(Check("structured_output", *structured_output_check(client, model, server)))
    # Two more requests: the probe and the question over /responses.
    verdict, evidence, fix, trace = api_parity(
        client, model, server, lambda c: _ask(c, model, False)[0], plain, probes["auto"]
    )
    checks.append(Check("api_parity", verdict, _cut(evidence), fix, trace))
    return EndpointReport(model=model, server=server, checks=checks)


def native_call_hygiene(traces: list[Trace]) -> tuple[str, str, Trace | None]:
    """(verdict, evidence, trace) for the native calls the probes got.

    `markup in names` or `markup in keys` when a server's parser handed the model's
    own markup on as a call (its parser failed on the family's format), `empty
    arguments` when the probe's required argument never arrived, `clean`, or ""
    when no probe got a native call. The worst seen wins, in that order.
    """
    order = ("markup in names", "markup in keys", "empty arguments", "clean")
    found: dict[str, tuple[str, Trace]] = {}
    for trace in traces:
        for it in trace.iterations:
            for call in it.tool_calls:
                fault = markup_in_call(call.name, call.arguments)
                if fault.startswith("the tool name"):
                    verdict = "markup in names"
                elif fault:
                    verdict = "markup in keys"
                elif call.arguments.strip() in ("", "{}"):
                    verdict = "empty arguments"
                else:
                    verdict = "clean"
                found.setdefault(verdict, (f"{call.name} {call.arguments}", trace))
    for verdict in order:
        if verdict in found:
            return verdict, *found[verdict]
    return "", "", None


def describe_report(report: EndpointReport) -> str:
    """The report as text: a header line, then one block per check (one block, headed
    `not_openai_compatible`, for an address that does not serve the API)."""
    lines = [f"{report.model}: server {report.server}"]
    for c in report.checks:
        lines.append(f"  {c.name:<26} {c.verdict}")
        if c.evidence:
            lines.append(f"  {'':<26} evidence: {c.evidence}")
        if c.advice:
            lines.append(f"  {'':<26} fix: {c.advice}")
    return "\n".join(lines)
