"""The checks the doctor reads off the replies it shares between checks.

The shared requests (`ASKS`): the tool_choice probes (unset, "auto", "required"), one
short reasoning question, and, with `stream=True`, that question and the "auto" probe
again streamed. `Asked` holds what they gave; each check here is a function of it
(`tool_choice_*`, `reasoning_location`, `leak_dialects`, `text_tool_calls`,
`native_call_hygiene`, `stream_parity`, `stream_grammar`, `usage_reported`,
`reasoning_tokens_reported`) that reads only the replies it names. A check whose every
request failed says so (`error <status>`, `n/a`), never `same` or `no`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import strict_json
from ..dialects import TOOL_CALL_DIALECTS
from ..errors import BackendError, Cancelled
from ..loop import markup_in_call
from ..probe import PROBE_TOOL, probe_trace
from ..record import record_one
from ..trace import Iteration, Trace
from ..wire import TOOL_CHOICES as ALL_TOOL_CHOICES
from ..wire import Reply, Request, Turn
from .stream_grammar import stream_grammar

if TYPE_CHECKING:
    from ..backend import Backend
    from ..servers import Server
    from .long_context import ServerFacts

__all__ = [
    "ASKS",
    "QUESTION",
    "QUESTION_MAX_TOKENS",
    "TOOL_CHOICES",
    "Asked",
    "ask_question",
    "cut",
    "error_verdict",
    "native_call_hygiene",
    "reasoning_location",
    "replies",
    "short",
    "tool_choice_matrix",
    "tool_choice_verdict",
    "verdict_of",
]

# The matrix: what an endpoint does with tool_choice unset, "auto" and "required", in that order.
TOOL_CHOICES: dict[str, str | None] = {
    k: ALL_TOOL_CHOICES[k] for k in ("unset", "auto", "required")
}
# The shared requests, in the order they are sent; the streamed two only with stream=True.
ASKS = ("unset", "auto", "required", "question", "question_streamed", "auto_streamed")
STREAMED_ASKS = frozenset({"question_streamed", "auto_streamed"})
QUESTION = "What is 17 * 23? Think it through briefly, then give the result in one sentence."
QUESTION_MAX_TOKENS = 512
_EVIDENCE_CHARS = 160
# The shared requests whose replies the gathered checks read, as they were in round 4.
PROBES = ("unset", "auto", "required")
ALL = (*PROBES, "question", "question_streamed", "auto_streamed")

Redact = Callable[[str], str]


@dataclass
class Asked:
    """What the doctor asked before the checks: the shared replies (by `ASKS` name; those not
    asked are absent), the server's profile and what its routes said."""

    client: Backend
    model: str
    stream: bool
    server: Server
    traces: dict[str, Trace] = field(default_factory=dict)
    facts: ServerFacts | None = None
    reply: Reply | None = None

    def got(self, *names: str) -> list[Trace]:
        """The traces of the shared requests `names` that were asked, in that order."""
        return [self.traces[n] for n in names if n in self.traces]


def cut(text: str, limit: int = _EVIDENCE_CHARS) -> str:
    """`text` on one line, cut to `limit`; endpoint text goes through `short` instead."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def short(text: str, redact: Redact, limit: int = _EVIDENCE_CHARS) -> str:
    """Endpoint text redacted, then cut: a key cut first would no longer match."""
    return cut(redact(text), limit)


def verdict_of(trace: Trace) -> str:
    """A probe's verdict: "tool call", "text", "length", "call in reasoning", "error
    <status>", "error" or "cancelled"."""
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


def tool_choice_verdict(client: Backend, model: str, tool_choice: str | None) -> str:
    """One probe: "tool call", "text", "length", "error <status>", or "error"."""
    return verdict_of(probe_trace(client, model, tool_choice=tool_choice))


def tool_choice_matrix(client: Backend, model: str) -> dict[str, str]:
    """Probe `model` once per tool_choice setting (unset, "auto", "required"), in that order."""
    return {key: tool_choice_verdict(client, model, choice) for key, choice in TOOL_CHOICES.items()}


def said(it: Iteration, redact: Redact, raw: bool = False) -> str:
    """A short account of one reply: finish, calls, the answer (or with `raw`, the content)."""
    n = len(it.tool_calls)
    parts = [f"finish {it.finish_reason or '-'}", f"{n} tool call{'' if n == 1 else 's'}"]
    if it.ending:
        parts.append(f"ending {it.ending}")
    if it.text and not raw:
        parts.append(f'answer "{short(it.text, redact, 80)}"')
    elif it.raw_content.strip():
        parts.append(f'content "{short(it.raw_content, redact, 80)}"')
    if it.reasoning_shape != "none":
        parts.append(f"shape {it.reasoning_shape}")
    if it.reasoning_content:
        parts.append(f'{it.reasoning_field} "{short(it.reasoning_content, redact, 60)}"')
    return "; ".join(parts)


def evidence_of(trace: Trace, redact: Redact) -> str:
    """A probe's evidence: its error, or an account of its reply."""
    if not trace.iterations:
        return ""
    it = trace.iterations[-1]
    if it.ending == "error":
        return short(trace.error, redact)
    return cut(said(it, redact))


def failed(traces: list[Trace]) -> bool:
    """True when no request of `traces` got a reply."""
    return all(it.ending == "error" for t in traces for it in t.iterations)


def error_verdict(traces: list[Trace]) -> str:
    """The verdict of a check whose every request failed: the first failure's `error <status>`."""
    if any(isinstance(t.exception, Cancelled) for t in traces):
        return "cancelled"
    for t in traces:
        if isinstance(t.exception, BackendError) and t.exception.status_code is not None:
            return f"error {t.exception.status_code}"
    return "error"


def ask_question(client: Backend, model: str, stream: bool) -> tuple[Trace, Reply | None]:
    """The reasoning question as one recorded round; the trace and the reply (None on failure)."""
    request = Request(model, (Turn("user", QUESTION),), QUESTION_MAX_TOKENS, stream=stream)
    return record_one(client, request, {"kind": "question", "max_tokens": QUESTION_MAX_TOKENS})


def replies(traces: list[Trace]) -> list[Iteration]:
    """The iterations of `traces` that got a reply."""
    return [it for t in traces for it in t.iterations if it.ending != "error"]


def reasoning_location(asked: Asked) -> tuple[str, str]:
    """(verdict, evidence) of `reasoning_location` over the question and the probes."""
    traces = asked.got("question", *PROBES)
    redact = asked.client.redact
    if not traces:
        return "n/a", "nothing asked"
    if failed(traces):
        return error_verdict(traces), "no request got a reply"
    its = replies(traces)
    for it in its:
        if it.reasoning_shape != "none":
            return f"content:{it.reasoning_shape}", cut(said(it, redact, raw=True))
    for it in its:
        if it.reasoning_content:
            return f"field:{it.reasoning_field}", cut(said(it, redact))
    return "none", "no reasoning seen in content or in a reasoning field"


def _gathered(asked: Asked) -> tuple[list[Trace], list[Iteration], str]:
    """Every shared trace asked, the iterations with a reply, and the verdict for a check
    that had no reply to judge ("" when some reply came)."""
    traces = asked.got(*ALL)
    its = replies(traces)
    return traces, its, (error_verdict(traces) if traces and not its else "")


def leak_dialects_check(asked: Asked) -> tuple[str, str, Trace | None]:
    traces, its, unjudged = _gathered(asked)
    leaks = list(dict.fromkeys(name for it in its for name in it.leaks))
    leak_its = [it for it in its if it.leaks]
    evidence = cut(said(leak_its[0], asked.client.redact, raw=True)) if leak_its else ""
    return ",".join(leaks) or unjudged or "no", evidence, asked.traces.get("question")


def text_tool_calls_check(asked: Asked) -> tuple[str, str, Trace | None]:
    traces, its, unjudged = _gathered(asked)
    text_calls = [it for it in its if it.ending == "text_tool_calls"]
    # Harmony carries calls only as commentary messages: it counts when a turn ended in one.
    dialects = [d for it in text_calls for d in it.leaks if d in TOOL_CALL_DIALECTS | {"harmony"}]
    verdict = ",".join(dict.fromkeys(dialects)) or ("yes" if text_calls else unjudged or "no")
    probes = asked.got(*PROBES)
    shown = next((t for t in probes if t.ending == "text_tool_calls"), None)
    evidence = cut(said(text_calls[0], asked.client.redact)) if text_calls else ""
    return verdict, evidence, shown or asked.traces.get("auto")


def native_call_hygiene(traces: list[Trace]) -> tuple[str, str, Trace | None]:
    """(verdict, evidence, trace) for the native calls the probes got.

    `markup in names` or `markup in keys` when a server's parser handed the model's
    own markup on as a call (its parser failed on the family's format), `empty
    arguments` when the probe's required argument never arrived (no arguments, or an
    object without it: a server whose grammar fixed the call's wrapper, not its
    arguments), `clean`, or "" when no probe got a native call. The worst seen wins, in
    that order.
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
                elif _lacks_required(call.arguments):
                    verdict = "empty arguments"
                else:
                    verdict = "clean"
                found.setdefault(verdict, (f"{call.name} {call.arguments}", trace))
    for verdict in order:
        if verdict in found:
            return verdict, *found[verdict]
    return "", "", None


def _lacks_required(arguments: str) -> bool:
    """Whether a probe call's arguments miss what the probe tool requires."""
    try:
        value = strict_json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return False  # not JSON at all: the loop feeds that back; not what this check names
    required = PROBE_TOOL.parameters.get("required") or ()
    return not isinstance(value, dict) or any(key not in value for key in required)


def hygiene_check(asked: Asked) -> tuple[str, str, Trace | None]:
    traces = asked.got(*PROBES, "auto_streamed", "question_streamed")
    verdict, why, dirty = native_call_hygiene(traces)
    unjudged = error_verdict(traces) if traces and not replies(traces) else ""
    return verdict or unjudged or "n/a", cut(why), dirty


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
        return error_verdict(traces), "every request failed, streamed and not"
    if not diffs:
        return "same", "streamed and not streamed replies have the same structure"
    return "differs: " + "; ".join(diffs), ""


def stream_parity_check(asked: Asked) -> tuple[str, str, Trace | None]:
    t = asked.traces
    if "question_streamed" not in t:
        return "not checked", "stream=False", None
    probe = (t["auto"], t["auto_streamed"]) if "auto_streamed" in t else None
    verdict, why = _parity((t["question"], t["question_streamed"]), probe)
    return verdict, cut(why), t["question_streamed"]


def stream_grammar_check(asked: Asked) -> tuple[str, str, Trace | None]:
    streamed = asked.got("question_streamed", "auto_streamed")
    verdict, why, faulty = stream_grammar(tuple(streamed))
    return verdict, cut(why), faulty


def usage_check(asked: Asked) -> tuple[str, str, Trace | None]:
    _, its, _ = _gathered(asked)
    counted = [it for it in its if "prompt_tokens" in it.usage or "completion_tokens" in it.usage]
    verdict = ("yes" if counted else "no") if its else "n/a"
    return verdict, f"{len(counted)}/{len(its)} replies", None


def reasons(its: list[Iteration]) -> bool:
    """Whether any reply showed reasoning (in a field or as markup in content)."""
    return any(it.reasoning_content or it.reasoning_shape != "none" for it in its)


def reasoning_tokens_check(asked: Asked) -> tuple[str, str, Trace | None]:
    _, its, _ = _gathered(asked)
    with_tokens = [it for it in its if "reasoning_tokens" in it.usage]
    verdict = ("yes" if with_tokens else "no") if its else "n/a"
    why = "reasoning seen in the replies" if reasons(its) else "no reasoning seen"
    return verdict, why, None


def probe_check(key: str) -> Callable[[Asked], tuple[str, str, Trace | None]]:
    """The check of one tool_choice probe (`unset`, `auto`, `required`)."""

    def check(asked: Asked) -> tuple[str, str, Trace | None]:
        trace = asked.traces[key]
        return verdict_of(trace), evidence_of(trace, asked.client.redact), trace

    return check


def shared_request(asked: Asked, name: str) -> Any:
    """Send the shared request `name` and keep its trace (the unstreamed question's reply
    too: the server's guess reads it)."""
    client, model = asked.client, asked.model
    if name in TOOL_CHOICES:
        asked.traces[name] = probe_trace(client, model, tool_choice=TOOL_CHOICES[name])
    elif name == "question":
        asked.traces[name], asked.reply = ask_question(client, model, stream=False)
    elif name == "question_streamed":
        asked.traces[name] = ask_question(client, model, stream=True)[0]
    elif name == "auto_streamed":
        asked.traces[name] = probe_trace(client, model, stream=True)
