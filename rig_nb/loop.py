"""The tool loop: RunRequest, RunResult, `run` (behind `Client.run`) and `run_trace`.

Semantics are the seed's: finish_reason "length" is OutputLimitError; tool
errors are fed back as "error: <msg>"; more than 32 calls in one reply is
IterationLimitError with none run; calls the loop cannot execute are an
error, not an empty answer; the echoed assistant turn is what the loop acted
on; the iteration cap reached while still calling tools is IterationLimitError.
With `recover_text_tool_calls`, calls written as text in the stripped content
(no native calls in the reply) run as if native, for declared tools only.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from . import strict_json
from .clients import check_client, client_for
from .content import text_for_calls
from .dialects import find_text_tool_calls, text_before_calls
from .errors import (
    BackendError,
    IterationLimitError,
    NoToolCallingError,
    OutputLimitError,
    RigError,
)
from .record import Judge, as_received, finalizing, record_round
from .servers import profile
from .tool import Tool, validate_tools
from .trace import Iteration, ToolCallRecord, Trace
from .wire import (
    Call,
    Request,
    ToolSpec,
    Turn,
    check_extra_body,
    check_response_format,
    clean,
)
from .wire.thinking import (
    check_replay,
    check_thinking,
    describe_sent,
    inline_reasoning,
    needs_kind,
    replay_field,
    replays,
    with_thinking,
)

if TYPE_CHECKING:
    from .backend import Backend

__all__ = [
    "RunOptions",
    "DEFAULT_ITERATIONS",
    "MAX_CALLS_PER_REPLY",
    "MAX_ITERATIONS",
    "RunRequest",
    "RunResult",
    "check_request",
    "run",
    "run_trace",
]

DEFAULT_ITERATIONS = 8
MAX_ITERATIONS = 32
# The iteration cap bounds rounds, not work: one reply inside the response cap
# has room for thousands of side effects.
MAX_CALLS_PER_REPLY = 32


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """What a run asks for besides the model and the budget: the prompts, the tools and
    every switch. `RunRequest` and compare's `Scenario` are built on it, so a field added
    here reaches both by name."""

    system: str = ""
    prompt: str = ""
    tools: Sequence[Tool] = ()
    max_iterations: int = 0
    temperature: float = 0.0
    tool_choice: str | Mapping[str, Any] | None = "auto"
    recover_text_tool_calls: bool = False
    extra_body: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    # None sends no switch; False, True, "low" | "medium" | "high", or a token budget,
    # mapped to the fields the server kind reads on the wire (`Wire.thinking_fields`).
    thinking: bool | str | int | None = None
    reasoning_replay: str = "tool_turns"
    reasoning_field: str = "auto"
    # Sent as is ({"type": "json_schema", ...}); checked before any request.
    response_format: Mapping[str, Any] | None = None
    # Tokens one request may hold (Ollama's num_ctx on its native wire); None sends nothing.
    # A wire with no such field records it in settings as not sent.
    context_window: int | None = None
    # An agent client's name (`rig_nb.clients.CLIENTS`): every request shaped as it sends
    # them; the run's wire must be the one it speaks.
    client: str | None = None


@dataclass(frozen=True)
class RunRequest(RunOptions):
    """What to run: model, prompts, tools and budgets (max_tokens is required, > 0)."""

    model: str
    max_tokens: int
    stream: bool = field(default=False, kw_only=True)


@dataclass
class RunResult:
    """The final stripped answer, rounds completed, tool calls executed, and the trace."""

    text: str
    iterations: int
    tool_calls: int
    trace: Trace = field(repr=False)


def _execute(tool: Tool | None, rec: ToolCallRecord) -> None:
    """Run one call into `rec`; every failure is an "error: ..." result fed back to the model."""
    if tool is None:
        rec.result, rec.is_error = f'error: unknown tool "{rec.name}"', True
        return
    try:
        args = strict_json.loads(rec.arguments)
    except ValueError:
        rec.result, rec.is_error = "error: arguments are not valid JSON", True
        return
    if not isinstance(args, dict):
        rec.result, rec.is_error = "error: arguments are not a JSON object", True
        return
    try:
        result = tool(args)
    except Exception as exc:
        rec.result, rec.is_error = clean(f"error: {exc}"), True
        rec.error_type = type(exc).__name__
        return
    rec.result = clean(result if isinstance(result, str) else str(result))


def check_request(request: RunRequest) -> tuple[list[Tool], int, dict[str, Any]]:
    """The request's tools, iteration cap and extra_body; ValueError for what cannot be sent."""
    if (
        isinstance(request.max_tokens, bool)
        or not isinstance(request.max_tokens, int)
        or request.max_tokens <= 0
    ):
        raise ValueError("max_tokens must be an int > 0")
    if isinstance(request.max_iterations, bool) or not isinstance(request.max_iterations, int):
        raise ValueError("max_iterations must be an int >= 0")
    if request.max_iterations < 0:
        raise ValueError("max_iterations must be >= 0")
    tools = list(request.tools)
    validate_tools(tools)
    extra = check_extra_body(request.extra_body)
    check_thinking(request.thinking)
    check_replay(request.reasoning_replay, request.reasoning_field)
    check_response_format(request.response_format)
    check_client(request.client)
    window = request.context_window
    if window is not None and (isinstance(window, bool) or not isinstance(window, int)):
        raise ValueError("context_window must be an int > 0 or None")
    if window is not None and window <= 0:
        raise ValueError("context_window must be > 0")
    return tools, min(request.max_iterations or DEFAULT_ITERATIONS, MAX_ITERATIONS), extra


# Model names of the Mistral family, whose templates want 9-character call ids.
_MISTRAL_MODELS = ("mistral", "magistral", "ministral", "devstral", "codestral", "pixtral")


def id_family(model: str, content: str) -> str:
    """Whose call ids the loop makes: "mistral", "kimi" or "" (OpenAI's `call_...`)."""
    lowered = model.lower()
    if any(name in lowered for name in _MISTRAL_MODELS) or "[TOOL_CALLS]" in content:
        return "mistral"
    if "kimi" in lowered or "<|tool_call_begin|>" in content:
        return "kimi"
    return ""


class _Calls:
    """The calls of one reply as the loop acts on them: records and the echoed entries."""

    def __init__(self, index: int, used_ids: set[str], family: str = "") -> None:
        self.index = index
        self.used_ids = used_ids
        self.family = family
        self.records: list[ToolCallRecord] = []

    def _new_id(self, name: str, retry: int) -> str:
        """An id the family's template takes: Mistral's 9 letters and digits, Kimi's
        `functions.NAME:IDX` (IDX counts the run's calls), else `call_ITER_N`."""
        if self.family == "mistral":
            return f"{self.index % 1000:03d}{len(self.records) % 1000:03d}{retry % 1000:03d}"
        if self.family == "kimi":
            return f"functions.{name}:{len(self.used_ids) + retry}"
        return f"call_{self.index}_{len(self.records)}" + "_" * retry

    def add(self, received_id: Any, name: str, arguments: str, source: str) -> ToolCallRecord:
        received = clean(received_id) if isinstance(received_id, str) else ""
        call_id = received
        retry = 0
        while not call_id or call_id in self.used_ids:
            call_id = self._new_id(name, retry)
            retry += 1
        self.used_ids.add(call_id)
        if not arguments.strip():
            arguments = "{}"
        rec = ToolCallRecord(
            id=call_id, received_id=received, name=name, arguments=arguments, source=source
        )
        self.records.append(rec)
        return rec

    def echoed(self) -> tuple[Call, ...]:
        return tuple(Call(r.id, r.name, r.arguments) for r in self.records)


def _too_many(count: int) -> IterationLimitError:
    return IterationLimitError(
        f"reply carried {count} tool calls; at most {MAX_CALLS_PER_REPLY} run per reply, "
        "none were run"
    )


def _native_calls(reply_calls: list[Call], calls: _Calls) -> None:
    if len(reply_calls) > MAX_CALLS_PER_REPLY:
        raise _too_many(len(reply_calls))
    if not all(c.name for c in reply_calls):
        raise NoToolCallingError(
            "reply carried tool calls the loop cannot execute (no function name "
            "or an unknown dialect)"
        )
    for call in reply_calls:
        rec = calls.add(call.id, call.name, call.arguments, "native")
        why = markup_in_call(call.name, call.arguments)
        if why:
            rec.result, rec.is_error = f"error: {why}; the call was not run", True


_MARKUP = frozenset("<>|")


def markup_in_call(name: str, arguments: str) -> str:
    """Why a native call is not clean ("" when it is): markup in its name or argument keys.

    A server whose parser misread a family's markup hands the model's tokens on as
    a name (`get_weather<arg_key>city`) or as keys; such a call is fed back, not run.
    """
    if _MARKUP & set(name):
        return f"the tool name {name[:80]!r} holds markup"
    if "<" in arguments or "|" in arguments:
        try:
            value = strict_json.loads(arguments)
        except ValueError:
            return ""
        if isinstance(value, dict) and any(_MARKUP & set(str(k)) for k in value):
            return "an argument name holds markup"
    return ""


def _text_calls(it: Iteration, declared: Mapping[str, Tool], calls: _Calls) -> str:
    """Record the declared calls written as text; returns the content to echo with them.

    Calls are read from the content with strip_reasoning's rules but the unclosed
    one: a call opener inside an unclosed reasoning block ends it (text_for_calls).
    """
    text = text_for_calls(it.raw_content)
    found = find_text_tool_calls(text, list(declared.values()), limit=MAX_CALLS_PER_REPLY + 1)
    if len(found) > MAX_CALLS_PER_REPLY:
        raise _too_many(len(found))
    for call in found:
        if call.name not in declared:
            continue
        rec = calls.add("", call.name, call.arguments, "text")
        if call.error:
            rec.result, rec.is_error = f"error: {call.error}", True
    return text_before_calls(it.text) if calls.records else ""


def _replayed(client: Backend, request: RunRequest, it: Iteration, setting: str) -> tuple[str, str]:
    """(reasoning, field) to send back with `it`'s echoed turn; ("", "") when none.
    `setting` is the run's reasoning_field (or its agent client's, when left "auto")."""
    reasoning = it.reasoning_content or inline_reasoning(it.raw_content, it.text)
    if not reasoning.strip():
        return "", ""
    reply_field = it.reasoning_field if it.reasoning_content else ""
    # The server kind (one GET, cached) only when neither the setting nor the reply names it.
    where = replay_field(setting, reply_field)
    if not where:
        # The server kind (one GET, cached) only when the reply does not name the field.
        where = client.wire.replay_field(
            profile(client.server_kind if needs_kind(reply_field) else "")
        )
    return reasoning, where


def _send(client: Backend, sent: Request, it: Iteration, trace: Trace, request: RunRequest) -> Any:
    try:
        return record_round(client, sent, it, trace)
    except BackendError as exc:
        if exc.status_code != 400 or not it.thinking_sent or exc.kind == "context":
            raise
        # The endpoint may be refusing a field the thinking switch added: say which.
        raise BackendError(
            f"{exc.message} (thinking={request.thinking!r} was sent as "
            f"{describe_sent(it.thinking_sent)}; if this server takes another field, set it "
            "in extra_body and leave thinking unset)",
            status_code=exc.status_code,
            kind=exc.kind,
            context_window=exc.context_window,
            prompt_tokens=exc.prompt_tokens,
        ) from None


def run(
    client: Backend,
    request: RunRequest,
    *,
    trace: Trace | None = None,
    judge: Judge | None = None,
) -> RunResult:
    """Run the loop; every RigError raised carries `.trace`, filled up to the failure.
    `judge` is a caller's goal for the answer (`record.finalizing`)."""
    tools, max_iter, extra = check_request(request)
    agent = client_for(request.client, client.wire.name)
    shape = agent.session() if agent is not None else None
    stream = request.stream or (agent is not None and agent.stream)
    setting = request.reasoning_field
    if agent is not None and agent.replay_field and setting == "auto":
        setting = agent.replay_field
    mapped = (
        client.wire.held(
            client.wire.thinking_fields(request.thinking, profile(client.server_kind)),
            request.max_tokens,
        )
        if request.thinking is not None
        else {}
    )
    sent_extra, thinking_sent = with_thinking(mapped, extra)
    by_name = {t.name: t for t in tools}
    trace = Trace() if trace is None else trace
    trace.model, trace.endpoint = request.model, client.endpoint
    trace.client = request.client
    trace.settings = {
        "max_tokens": request.max_tokens,
        "max_iterations": max_iter,
        "temperature": request.temperature,
        "tool_choice": request.tool_choice if tools else None,
        "tools": [t.name for t in tools],
        "recover_text_tool_calls": request.recover_text_tool_calls,
        "extra_body": extra,
        "api": client.api,
        "thinking": request.thinking,
        "reasoning_replay": request.reasoning_replay,
        "reasoning_field": request.reasoning_field,
    }
    if request.response_format is not None:
        trace.settings["response_format"] = check_response_format(request.response_format)
    if request.context_window is not None:
        # Sent only by a wire that carries it (Wire.options); recorded either way.
        trace.settings["context_window"] = request.context_window
        trace.settings["context_window_sent"] = "context_window" in client.wire.options
    trace.iterations.clear()
    turns: list[Turn] = []
    if request.system:
        turns.append(Turn("system", clean(request.system)))
    turns.append(Turn("user", clean(request.prompt)))
    shown = [t.as_message() for t in turns]  # the turns as the trace shows them
    options = {} if request.context_window is None else {"context_window": request.context_window}
    specs = tuple(ToolSpec(t.name, t.description, t.input_schema) for t in tools)
    used_ids: set[str] = set()
    executed = 0
    with finalizing(trace, judge=judge):
        for index in range(max_iter):
            sent = copy.deepcopy(thinking_sent) if thinking_sent else {}
            asked = Request(
                request.model,
                tuple(turns),
                request.max_tokens,
                tools=specs,
                tool_choice=request.tool_choice,
                temperature=request.temperature,
                stream=stream,
                extra=sent_extra,
                response_format=request.response_format,
                options=options,
                shape=shape,
            )
            it = Iteration(index=index, messages=list(shown), thinking_sent=sent)
            trace.iterations.append(it)
            trace.notify()
            reply = _send(client, asked, it, trace, request)
            if reply.finish_reason == "length" or it.ending == "content_filter":
                # A turn cut short: its calls are shown as received (an SDK keeps them too,
                # a complete one included), but none is run.
                it.tool_calls.extend(as_received(reply.tool_calls))
            if reply.finish_reason == "length":
                raise OutputLimitError("reply hit the output token limit (finish_reason length)")
            if it.ending == "content_filter":
                # What the filter let through is kept, but nothing in it is acted on.
                return RunResult(it.text, index + 1, executed, trace)
            content = it.text
            recover = request.recover_text_tool_calls and it.ending == "text_tool_calls"
            if not reply.tool_calls and not recover:
                return RunResult(it.text, index + 1, executed, trace)
            calls = _Calls(index, used_ids, id_family(request.model, it.raw_content))
            if reply.tool_calls:
                _native_calls(reply.tool_calls, calls)
            else:
                content = _text_calls(it, by_name, calls)
            if not calls.records:
                return RunResult(it.text, index + 1, executed, trace)
            echoed = Turn("assistant", content, calls=calls.echoed())
            if replays(request.reasoning_replay, True):
                reasoning, where = _replayed(client, request, it, setting)
                # Redacted thinking goes back too, unchanged (a wire that has none ignores it).
                redacted = tuple(reply.reasoning_redacted)
                if where or redacted:
                    echoed = Turn(
                        "assistant",
                        content,
                        reasoning=reasoning if where else "",
                        reasoning_field=where,
                        signature=it.reasoning_signature,
                        redacted=redacted,
                        calls=echoed.calls,
                    )
                    it.replayed = where
            turns.append(echoed)
            shown.append(echoed.as_message())
            for rec in calls.records:
                it.tool_calls.append(rec)
                if not rec.is_error:
                    t0 = time.perf_counter()
                    try:
                        _execute(by_name.get(rec.name), rec)
                    finally:
                        rec.duration_s = time.perf_counter() - t0
                executed += 1
                result = Turn(
                    "tool", rec.result, call_id=rec.id, name=rec.name, is_error=rec.is_error
                )
                turns.append(result)
                shown.append(result.as_message())
                trace.notify()
        raise IterationLimitError(
            f"tool loop hit the iteration limit of {max_iter} rounds, the model still calling tools"
        )
    raise AssertionError("unreachable")  # finalizing re-raises; mypy cannot see it


def run_trace(
    client: Backend,
    request: RunRequest,
    *,
    trace: Trace | None = None,
    judge: Judge | None = None,
) -> Trace:
    """Run the loop and return its finished trace, whether it ended "ok" or in a RigError.

    The outcome says which; `trace.error` holds the error's message. Invalid
    requests (ValueError) still raise.
    """
    trace = Trace() if trace is None else trace
    try:
        run(client, request, trace=trace, judge=judge)
    except RigError:
        pass
    return trace
