"""Recording: one round into its Iteration, how a turn ended, and how a run ended.

The loop and the probe both run rounds through `record_round` and end through
`finalizing`, so a trace is filled and finished the same way everywhere:
outcome, elapsed time, the error on the last iteration, `exc.trace`, and the
last notification, in one place. A run whose conversation the server cut
(`Iteration.context_cut`) ends `context_truncated`, answered or raised.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .content import (
    decode_json_object,
    split_reasoning,
    strip_with_shape,
    text_for_calls,
)
from .dialects import DIALECTS, has_text_tool_calls, leak_dialects
from .errors import RigError
from .prefix import prefix_break
from .trace import Iteration, ToolCallRecord, Trace
from .usage import kept_count
from .wire import Call, Reply, Request
from .wire.sent import Sent

if TYPE_CHECKING:
    from .backend import Backend

__all__ = [
    "as_received",
    "CONTEXT_TRUNCATED",
    "LEAKED",
    "LIVE_INTERVAL_S",
    "describe",
    "ending",
    "finalizing",
    "mark_cut",
    "record_one",
    "record_round",
]

# The outcome of a run the server answered without part of what was sent.
CONTEXT_TRUNCATED = "context_truncated"
# The outcome of a run whose final answer still holds a leak dialect's markup after
# strip_reasoning and split_reasoning (DESIGN, Round 5).
LEAKED = "leaked"

# A caller's goal for a finished run: None when met, else (outcome, why).
Judge = Callable[[Trace], "tuple[str, str] | None"]
# While a reply streams, listeners hear of it at most this often (plus once at its end).
LIVE_INTERVAL_S = 0.1
# A stream fault line and a finish reason as a trace keeps them: redacted first, then cut.
_FAULT_CHARS = 160
_FINISH_CHARS = 60


def _shown(text: str, redact: Callable[[str], str], limit: int) -> str:
    """Endpoint text on a trace: redacted, then cut (a cut key would no longer be found)."""
    text = redact(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(exc: BaseException) -> str:
    """How an error reads on a trace: "Class: message"."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _json_in_reasoning(it: Iteration) -> bool:
    """A JSON object in a turn with no answer: in the reasoning field or in think tags.

    Servers asked for structured output with reasoning on put the object there and
    leave content empty (vllm#47027, lmstudio-bug-tracker#1773).
    """
    inline = it.raw_content.replace("<think>", " ").replace("</think>", " ")
    for text in (it.reasoning_content, inline):
        if "{" not in text:
            continue
        try:
            decode_json_object(text)
        except RigError:
            continue
        return True
    return False


def ending(it: Iteration, *, replied: bool, native_calls: bool) -> str:
    """How a turn ended (see Iteration.ending)."""
    if not replied:
        return "error"
    if it.finish_reason == "length":
        return "length" if it.text else "length_in_reasoning"
    if it.finish_reason == "content_filter":
        return "content_filter"  # the server withheld the rest: never an answer, calls not run
    if native_calls:
        return "tool_calls"
    if has_text_tool_calls(it.text) or (
        "unclosed" in it.reasoning_shape and has_text_tool_calls(text_for_calls(it.raw_content))
    ):
        return "text_tool_calls"  # an opener in an unclosed block ends it (text_for_calls)
    if it.text:
        return "answer"
    if _calls_in_reasoning(it):
        return "tool_calls_in_reasoning"
    if _json_in_reasoning(it):
        return "json_in_reasoning"
    if it.reasoning_content.strip() or it.raw_content.strip():
        return "reasoning_only"
    return "empty"


def _reasoning_texts(it: Iteration) -> tuple[str, str]:
    """The reasoning of a turn: its reasoning field, and what split_reasoning removed
    (nothing when the content has no reasoning shape and no harmony analysis)."""
    inline = split_reasoning(it.raw_content)[0] if _splits(it) else ""
    return it.reasoning_content, inline


def _splits(it: Iteration) -> bool:
    """split_reasoning finds reasoning in the content: a reasoning shape, or a harmony
    analysis channel (which holds the word)."""
    return it.reasoning_shape != "none" or "analysis" in it.raw_content


def _calls_in_reasoning(it: Iteration) -> bool:
    """A tool call written in the reasoning: reported, never run (DESIGN, Dialects)."""
    return any(has_text_tool_calls(text) for text in _reasoning_texts(it) if text)


def _fill(it: Iteration, reply: Reply, redact: Callable[[str], str]) -> None:
    it.raw_content = reply.content
    it.reasoning_content = reply.reasoning
    it.reasoning_field = reply.reasoning_field
    it.text, it.reasoning_shape = strip_with_shape(reply.content)
    inline = ""
    if _splits(it):  # else split_reasoning's answer is strip_reasoning's, with no reasoning
        inline, it.text = split_reasoning(reply.content)
    it.leaks = list(leak_dialects(reply.content))
    found = {name for text in (reply.reasoning, inline) if text for name in leak_dialects(text)}
    it.reasoning_leaks = [name for name in DIALECTS if name in found] if found else []
    it.finish_reason = _shown(reply.finish_reason, redact, _FINISH_CHARS)
    it.usage = dict(reply.usage)
    it.server_timings = dict(reply.server_timings)
    # Faults quote names the stream sent (an event's type, a finish reason): a key too.
    it.stream_faults = [_shown(f, redact, _FAULT_CHARS) for f in reply.stream_faults]
    it.reasoning_signature = reply.reasoning_signature
    if reply.context_cut:
        it.context_cut = True


def _prompt_tokens(it: Iteration) -> int | None:
    """Prompt tokens as counted: an int > 0 (LM Studio reports zeros for usage it lacks)."""
    value = kept_count(it.usage.get("prompt_tokens"))
    return value if value else None


def mark_cut(trace: Trace, it: Iteration, window: int | None = None) -> None:
    """Mark `it` context_cut when its prompt tokens fall below an earlier iteration's, or
    equal the context `window` the request sent (Ollama's num_ctx) after the first turn.

    Within one run the conversation only grows, so a server that reports fewer prompt
    tokens than before dropped part of it; one that reports exactly the window it was given
    while the conversation grew kept only what fit (Ollama keeps the newest messages within
    num_ctx, silently). Usage that is missing, zero or not an int claims nothing.
    """
    now = _prompt_tokens(it)
    if now is None:
        return
    for earlier in trace.iterations:
        if earlier is it:
            break
        before = _prompt_tokens(earlier)
        if (before is not None and now < before) or now == window:
            it.context_cut = True
            return


def _window_sent(client: Backend, request: Request) -> int | None:
    """The context window this request carried to the server (None where the wire sends
    none)."""
    window = request.options.get("context_window")
    return window if isinstance(window, int) and "context_window" in client.wire.options else None


def _note_break(
    client: Backend,
    body: Mapping[str, Any] | None,
    request: Request,
    it: Iteration,
    trace: Trace,
) -> None:
    """`it.prefix_break` against the trace's previous request as sent (none for its first
    iteration); this request becomes the one the next is measured against."""
    now = Sent.of(body, request)
    first = not trace.iterations or trace.iterations[0] is it
    it.prefix_break = None if first else prefix_break(trace.last_sent, now, client.redact)
    trace.last_sent = now


def record_round(
    client: Backend,
    request: Request,
    it: Iteration,
    trace: Trace,
    *,
    retries: bool = True,
) -> Reply:
    """Send `request`, record the reply (or what arrived of it) into `it`; raise on failure.
    `it.prefix_break` compares the request as sent with the previous iteration's."""
    it.streamed = request.stream
    # The body as it went out and the request it was rendered from: a backend below the
    # recorder may have sent another request than `request` (a wrapper's).
    seen: list[tuple[Mapping[str, Any], Request]] = []
    given = request.sent

    def sent(body: Mapping[str, Any], rendered: Request) -> None:
        seen.append((body, rendered))
        if given is not None:
            given(body, rendered)

    request = dataclasses.replace(request, sent=sent)
    start = time.perf_counter()
    assembler = client.reader() if request.stream else None
    last_notice = start

    def on_event(grew: bool) -> None:
        nonlocal last_notice
        now = time.perf_counter()
        if it.chunks == 0:
            it.ttft_s = now - start
        it.chunks += 1
        if grew and now - last_notice >= LIVE_INTERVAL_S and assembler is not None:
            last_notice = now
            it.raw_content = assembler.content
            it.reasoning_content = assembler.reasoning
            it.latency_s = now - start
            trace.notify()

    try:
        try:
            if assembler is None:
                reply = client.chat(request, retries=retries)
            else:
                reply = client.stream(request, assembler, on_event=on_event, retries=retries)
        finally:
            body, rendered = seen[-1] if seen else (None, request)
            _note_break(client, body, rendered, it, trace)
    except BaseException:
        if assembler is not None:
            _fill(it, assembler.reply(), client.redact)  # what arrived before the failure
            mark_cut(trace, it, _window_sent(client, request))
        it.ending = "error"
        raise
    finally:
        it.latency_s = time.perf_counter() - start
    _fill(it, reply, client.redact)
    mark_cut(trace, it, _window_sent(client, request))
    it.ending = ending(it, replied=True, native_calls=bool(reply.tool_calls))
    return reply


def record_one(
    client: Backend,
    request: Request,
    settings: dict[str, Any],
    thinking_sent: Mapping[str, Any] | None = None,
) -> tuple[Trace, Reply | None]:
    """`request` sent once (no retries) and recorded as a trace of one iteration with
    `settings`, never raising a RigError: the finished trace, and the reply (None when
    the request failed). The doctor's checks are made of such rounds."""
    trace = Trace(settings=settings)
    trace.model, trace.endpoint = request.model, client.endpoint
    it = Iteration(index=0, messages=request.messages(), thinking_sent=dict(thinking_sent or {}))
    trace.iterations.append(it)
    reply: Reply | None = None
    try:
        with finalizing(trace):
            reply = record_round(client, request, it, trace, retries=False)
    except RigError:
        pass
    return trace, reply


def _leaked(trace: Trace) -> tuple[str, str] | None:
    """(LEAKED, why) when the run's final answer holds a leak dialect's markup after
    strip_reasoning and split_reasoning (`Iteration.text`); None otherwise."""
    last = trace.iterations[-1] if trace.iterations else None
    if last is None or last.ending != "answer":
        return None
    held = leak_dialects(last.text)
    if not held:
        return None
    return LEAKED, f"the answer holds {', '.join(held)} markup"


@contextmanager
def finalizing(
    trace: Trace, goal: str | tuple[str, ...] = "answer", judge: Judge | None = None
) -> Iterator[None]:
    """Finish `trace` however the block ends: outcome, elapsed, the error, exc.trace, notify.

    The outcome is "ok" only when the block returned, the last turn ended in `goal`
    ("answer" for a run, "tool_calls" for the probe; a tuple: any of those endings) and
    `judge` (a caller's goal, such as compare's expected answer) passed it: `judge(trace)`
    returns None, or (outcome, why) for an answer that misses the goal, or raises a
    RigError (its class is the outcome).
    A block that returned otherwise gets the last turn's ending (`text_tool_calls`,
    `reasoning_only`, `empty`, ...), one whose final answer still holds a leak dialect's
    markup is `leaked`, and one that raised gets the error's class name. A
    run with a context_cut iteration is `context_truncated` either way: its answer was
    made without part of what was sent.
    """
    start = time.perf_counter()
    trace.outcome = ""
    trace.elapsed_s = 0.0
    trace.exception = None
    try:
        yield
        ended = trace.ending
        reached = ended in goal if isinstance(goal, tuple) else ended == goal
        trace.outcome = "ok" if reached else (ended or "empty")
        missed = judge(trace) if judge is not None and reached else None
        if missed is None and reached:
            missed = _leaked(trace)
        if missed is not None:
            trace.outcome, trace.iterations[-1].error = missed
        if any(it.context_cut for it in trace.iterations):
            trace.outcome = CONTEXT_TRUNCATED
    except BaseException as exc:
        trace.outcome = type(exc).__name__
        if any(it.context_cut for it in trace.iterations):
            trace.outcome = CONTEXT_TRUNCATED
        trace.exception = exc
        if trace.iterations and not trace.iterations[-1].error:
            trace.iterations[-1].error = describe(exc)
        if isinstance(exc, RigError):
            exc.trace = trace
        raise
    finally:
        trace.elapsed_s = time.perf_counter() - start
        trace.notify()


def as_received(calls: list[Call]) -> list[ToolCallRecord]:
    """A reply's calls recorded as the endpoint sent them (blank arguments stay blank), never
    run: what a probe or a judged scenario shows it called."""
    return [
        ToolCallRecord(id=c.id, received_id=c.id, name=c.name, arguments=c.arguments) for c in calls
    ]
