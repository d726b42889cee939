"""The tool-calling probe: one trivial single-tool request, recorded like a loop round.

It sends what the loop sends (tool_choice included), exactly once, with no
retries. A reply with a usable tool call is a pass; finish_reason "length" is
OutputLimitError (a reasoning model can spend the whole budget thinking); an
HTTP error is BackendError (an endpoint that rejects the request did not show
that it lacks tool calling). No reply text is ever put in a raised error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import NoToolCallingError, OutputLimitError, RigError
from .record import as_received, finalizing, record_round
from .trace import Iteration, Trace
from .wire import Request, ToolSpec, Turn

if TYPE_CHECKING:
    from .backend import Backend

__all__ = ["PROBE_MAX_TOKENS", "PROBE_PROMPT", "PROBE_TOOL", "probe", "probe_trace"]

PROBE_MAX_TOKENS = 256
PROBE_TOOL = ToolSpec(
    "ping",
    "Reply to a ping. Call this tool when asked to ping.",
    {
        "type": "object",
        "properties": {"message": {"type": "string", "description": "any short text"}},
        "required": ["message"],
    },
)
PROBE_PROMPT = "Call the ping tool now with message 'hello'. Do not answer in text."


def probe(
    client: Backend,
    model: str,
    *,
    tool_choice: Any = "auto",
    stream: bool = False,
    trace: Trace | None = None,
) -> None:
    """None only if the reply holds a usable tool call; a RigError (with .trace) otherwise."""
    request = Request(
        model,
        (Turn("user", PROBE_PROMPT),),
        PROBE_MAX_TOKENS,
        tools=(PROBE_TOOL,),
        tool_choice=tool_choice,
        stream=stream,
    )
    trace = Trace() if trace is None else trace
    trace.model, trace.endpoint = model, client.endpoint
    trace.settings = {
        "kind": "probe",
        "max_tokens": PROBE_MAX_TOKENS,
        "tool_choice": tool_choice,
        "tools": ["ping"],
        "api": client.api,
    }
    trace.iterations.clear()
    it = Iteration(index=0, messages=request.messages())
    trace.iterations.append(it)
    with finalizing(trace, goal="tool_calls"):
        reply = record_round(client, request, it, trace, retries=False)
        if reply.finish_reason == "length":
            raise OutputLimitError("probe reply hit the output token limit before a tool call")
        names = [c.name for c in reply.tool_calls]
        # Recorded as received, never run: the trace shows what the endpoint called.
        it.tool_calls.extend(as_received(reply.tool_calls))
        if not names:
            raise NoToolCallingError("backend did not return a tool call: the reply had none")
        if not all(names):
            raise NoToolCallingError(
                "backend did not return a tool call: the reply's tool calls have no "
                "function name the loop can execute"
            )


def probe_trace(
    client: Backend,
    model: str,
    *,
    tool_choice: Any = "auto",
    stream: bool = False,
    trace: Trace | None = None,
) -> Trace:
    """The probe's finished trace: outcome "ok" or the error class, never raising a RigError."""
    trace = Trace() if trace is None else trace
    try:
        probe(client, model, tool_choice=tool_choice, stream=stream, trace=trace)
    except RigError:
        pass
    return trace
