"""The tool loop: RunRequest, RunResult, and `run` behind `Client.run`."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .client import call_name
from .errors import IterationLimitError, NoToolCallingError, OutputLimitError, RigError
from .tool import Tool, validate_tools
from .trace import Iteration, ToolCallRecord, Trace

if TYPE_CHECKING:
    from .client import Client

__all__ = ["DEFAULT_ITERATIONS", "MAX_CALLS_PER_REPLY", "MAX_ITERATIONS", "RunRequest", "RunResult"]

DEFAULT_ITERATIONS = 8
MAX_ITERATIONS = 32
# The iteration cap bounds rounds, not work: one reply inside the response cap
# has room for thousands of side effects.
MAX_CALLS_PER_REPLY = 32


@dataclass(frozen=True)
class RunRequest:
    """What to run: model, prompts, tools and budgets (max_tokens is required, > 0)."""

    model: str
    max_tokens: int
    system: str = ""
    prompt: str = ""
    tools: Sequence[Tool] = ()
    max_iterations: int = 0
    temperature: float = 0.0
    tool_choice: str | None = "auto"


@dataclass
class RunResult:
    """The final stripped answer, rounds completed, tool calls executed, and the trace."""

    text: str
    iterations: int
    tool_calls: int
    trace: Trace = field(repr=False)


def _arguments(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    if raw is None:
        return ""
    return json.dumps(raw)  # some servers send an object instead of a string


def _execute(tool: Tool | None, name: str, arguments: str) -> tuple[str, bool]:
    if tool is None:
        return f'error: unknown tool "{name}"', True
    try:
        args = json.loads(arguments)
    except (ValueError, RecursionError):
        return "error: arguments are not valid JSON", True
    if not isinstance(args, dict):
        return "error: arguments are not a JSON object", True
    try:
        result = tool(args)
    except Exception as exc:
        return f"error: {exc}", True
    return result if isinstance(result, str) else str(result), False


def run(client: Client, request: RunRequest, *, trace: Trace | None = None) -> RunResult:
    """Run the loop; every RigError raised carries `.trace`, filled up to the failure."""
    if not isinstance(request.max_tokens, int) or request.max_tokens <= 0:
        raise ValueError("max_tokens must be > 0")
    if request.max_iterations < 0:
        raise ValueError("max_iterations must be >= 0")
    tools = list(request.tools)
    validate_tools(tools)
    by_name = {t.name: t for t in tools}
    max_iter = request.max_iterations or DEFAULT_ITERATIONS
    max_iter = min(max_iter, MAX_ITERATIONS)

    if trace is None:
        trace = Trace()
    trace.model = request.model
    trace.endpoint = client.endpoint
    trace.settings = {
        "max_tokens": request.max_tokens,
        "max_iterations": max_iter,
        "temperature": request.temperature,
        "tool_choice": request.tool_choice if tools else None,
        "tools": [t.name for t in tools],
    }
    trace.iterations.clear()
    trace.outcome = ""
    trace.elapsed_s = 0.0

    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.append({"role": "user", "content": request.prompt})
    wire_tools = [t.to_openai() for t in tools]
    used_ids: set[str] = set()
    executed = 0
    start = time.perf_counter()
    try:
        for index in range(max_iter):
            it = Iteration(index=index, messages=list(messages))
            trace.iterations.append(it)
            trace.notify()
            try:
                params = client.chat_params(
                    request.model,
                    messages,
                    request.max_tokens,
                    tools=wire_tools,
                    tool_choice=request.tool_choice,
                    temperature=request.temperature,
                )
                reply = client.round(params, it)
                if reply.finish_reason == "length":
                    raise OutputLimitError(
                        "reply hit the output token limit (finish_reason length)"
                    )
                if not reply.tool_calls:
                    trace.outcome = "ok"
                    return RunResult(it.text, index + 1, executed, trace)
                if len(reply.tool_calls) > MAX_CALLS_PER_REPLY:
                    raise IterationLimitError(
                        f"reply carried {len(reply.tool_calls)} tool calls; at most "
                        f"{MAX_CALLS_PER_REPLY} run per reply, none were run"
                    )
                names = [call_name(c) for c in reply.tool_calls]
                if not all(names):
                    raise NoToolCallingError(
                        "reply carried tool calls the loop cannot execute (no function name "
                        "or an unknown dialect)"
                    )
                records: list[ToolCallRecord] = []
                echoed: list[dict[str, Any]] = []
                for k, (call, name) in enumerate(zip(reply.tool_calls, names, strict=True)):
                    received = call.get("id")
                    received_id = received if isinstance(received, str) else ""
                    call_id = received_id
                    if not call_id or call_id in used_ids:
                        call_id = f"call_{index}_{k}"
                        while call_id in used_ids:
                            call_id += "_"
                    used_ids.add(call_id)
                    arguments = _arguments(call["function"].get("arguments"))
                    if not arguments.strip():
                        arguments = "{}"
                    records.append(
                        ToolCallRecord(
                            id=call_id, received_id=received_id, name=name, arguments=arguments
                        )
                    )
                    echoed.append(
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments},
                        }
                    )
                messages.append({"role": "assistant", "content": it.text, "tool_calls": echoed})
                for rec in records:
                    it.tool_calls.append(rec)
                    t0 = time.perf_counter()
                    try:
                        rec.result, rec.is_error = _execute(
                            by_name.get(rec.name), rec.name, rec.arguments
                        )
                    finally:
                        rec.duration_s = time.perf_counter() - t0
                    executed += 1
                    messages.append({"role": "tool", "tool_call_id": rec.id, "content": rec.result})
                    trace.notify()
            except BaseException as exc:
                it.error = f"{type(exc).__name__}: {exc}"
                raise
        raise IterationLimitError(
            f"tool loop hit the iteration limit of {max_iter} rounds, the model still calling tools"
        )
    except RigError as exc:
        exc.trace = trace
        trace.outcome = type(exc).__name__
        raise
    except BaseException as exc:
        trace.outcome = type(exc).__name__
        raise
    finally:
        trace.elapsed_s = time.perf_counter() - start
        trace.notify()
