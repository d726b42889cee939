"""What compare runs: endpoints, scenarios, the runners of each scenario kind, one pair's run.

A scenario is plain data (`Scenario`); its kind picks a runner in `RUNNERS`
(register more there): "probe", "run" (the tool loop), "calls" (one request whose
calls are judged, never run: `CallScenario`, what `rig_nb.evals` makes).
`run_scenario` runs one pair and never raises: every failure is the result's outcome.
`rig_nb.compare` runs them all and makes the DataFrame; every name here is importable
from there too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .agentic import AGENTIC_ANSWER, AGENTIC_SYSTEM, AGENTIC_TASK, agentic_tools
from .client import Client
from .content import decode_json_object
from .errors import NoToolCallingError, RigError
from .loop import RunOptions, RunRequest, check_request, run_trace
from .record import as_received, finalizing, record_round
from .redact import Redactor
from .tool import Tool
from .trace import Iteration, Trace
from .wire import Request, ToolSpec, Turn, clean
from .wire.thinking import with_thinking

__all__ = [
    "ADD_TOOL",
    "CallScenario",
    "DEFAULT_SCENARIOS",
    "EVALUATION_SCENARIOS",
    "NOT_AN_ANSWER",
    "RUNNERS",
    "Endpoint",
    "Runner",
    "Scenario",
    "ScenarioResult",
    "run_scenario",
    "scenario_error",
]

# Endings of a run that returned without an answer: the run is not a pass.
NOT_AN_ANSWER = frozenset({"reasoning_only", "json_in_reasoning", "empty", "text_tool_calls"})


# An endpoint failing this way answers no scenario: its other rows are not sent.
@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible endpoint to compare: a display name, its base URL, a model."""

    name: str
    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    # The wire: "chat", "responses", "messages" or "ollama" (rig_nb.wire.WIRES).
    api: str = "chat"


@dataclass(frozen=True)
class Scenario(RunOptions):
    """One check run against every endpoint: `RunRequest`'s fields but the model
    (`RunOptions`), a name, a kind and what counts as a pass.

    kind "probe" calls the tool-calling probe (its own prompt and budget, the
    tool_choice given here); kind "run" runs the tool loop with the prompt,
    tools, budget, tool_choice and extra_body given here. `expect_json`
    decodes the final text with `decode_json_object`; `require_tool_call`
    counts a run that never called a tool as a failure; `expect_answer` is
    text the final answer must contain (outcome `wrong_answer` otherwise).
    `group` is a label compare's rows carry (`summarize(df, by="group")`), "" for none.
    `response_format` is sent as is (`{"type": "json_schema", ...}`); a value
    that is not a dict, an unknown type or over 64 KB fails the scenario's
    rows before any request. `Scenario.agentic()` is the request shape of
    agent clients. The goal is judged as the run ends, so the trace's outcome is
    the row's.
    """

    name: str
    kind: str = "run"
    max_tokens: int = 1024
    stream: bool | None = None  # None: as compare(stream=...) says
    expect_json: bool = False
    require_tool_call: bool = False
    expect_answer: str = ""
    group: str = ""

    @classmethod
    def agentic(cls, name: str = "agentic") -> Scenario:
        """An agent client's request: a 4 KB system prompt, 12 tools, three dependent steps.

        The probe passes where this fails on some servers (NVIDIA/NemoClaw#7967): it
        is ok only when the run called tools and its answer names the tracking number
        the third step returns (`rig_nb.agentic`).
        """
        return cls(
            name,
            system=AGENTIC_SYSTEM,
            prompt=AGENTIC_TASK,
            tools=agentic_tools(),
            max_iterations=6,
            require_tool_call=True,
            expect_answer=AGENTIC_ANSWER,
        )


# A judge of the calls one reply made, `(name, arguments)` as received: (True, "") when
# they meet the goal, else (False, why).
CallJudge = Callable[[Sequence[tuple[str, Any]]], tuple[bool, str]]


@dataclass(frozen=True)
class CallScenario(Scenario):
    """One request whose calls are judged, never run (kind "calls"): `messages` (role and
    content) are the conversation sent with the tools; `judge_calls` judges the reply's
    calls. Outcome `ok` when the reply ended in calls or an answer and the judge passed
    it, `wrong_call` (the judge's why as error) when it did not; a reply that ended
    otherwise (`text_tool_calls`, `tool_calls_in_reasoning`, `reasoning_only`, `length`,
    ...) keeps its ending, and a failed request its error class."""

    kind: str = "calls"
    messages: tuple[Mapping[str, Any], ...] = ()
    judge_calls: CallJudge | None = field(default=None, repr=False, compare=False)


@dataclass
class ScenarioResult:
    """What one (endpoint, scenario) pair produced; `trace` is None if no request was made."""

    outcome: str
    error: str = ""
    trace: Trace | None = None
    latency_s: float = 0.0


def _add(args: dict[str, Any]) -> str:
    return str(int(args["a"]) + int(args["b"]))


ADD_TOOL = Tool(
    name="add",
    description="Add two integers and return the sum.",
    input_schema={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
    run=_add,
)

DEFAULT_SCENARIOS: tuple[Scenario, ...] = (
    Scenario("probe", kind="probe"),
    Scenario("plain answer", prompt="What is the capital of France? Answer in one short sentence."),
    Scenario(
        "json answer",
        system="Answer with a single JSON object and nothing else.",
        prompt='Give the capital of France as {"country": ..., "capital": ...}.',
        expect_json=True,
    ),
    Scenario(
        "tool round trip",
        prompt="Use the add tool to add 17 and 25, then say the result.",
        tools=(ADD_TOOL,),
        max_iterations=4,
        require_tool_call=True,
    ),
    Scenario(
        "small budget",
        prompt="Think it through step by step: what is 17 * 23?",
        max_tokens=16,
    ),
)
# What an evaluation asks beyond the defaults: `compare(..., scenarios=EVALUATION_SCENARIOS)`.
# Structured output with the schema sent as response_format (where reasoning models
# put the JSON in the reasoning), and the request shape of agent clients.
EVALUATION_SCENARIOS: tuple[Scenario, ...] = (
    *DEFAULT_SCENARIOS,
    Scenario(
        "structured output",
        prompt="Give the capital of France as a JSON object with country and capital.",
        response_format={
            "type": "json_schema",
            "json_schema": {
                "name": "capital",
                "schema": {
                    "type": "object",
                    "properties": {"country": {"type": "string"}, "capital": {"type": "string"}},
                    "required": ["country", "capital"],
                },
            },
        },
        expect_json=True,
    ),
    Scenario.agentic(),
)

Runner = Callable[[Client, Endpoint, Scenario], ScenarioResult]
_ENDING_ERRORS = {
    "reasoning_only": "the run ended without an answer: the reply held only reasoning",
    "json_in_reasoning": (
        "the run ended without an answer: the JSON object was in the reasoning, content empty"
    ),
    "empty": "the run ended with an empty reply",
    "text_tool_calls": "the run ended with tool calls written as text, not made",
    "context_truncated": "the server dropped part of the conversation (prompt tokens fell "
    "below an earlier turn's): the answer was made without it",
}


def _failed(trace: Trace) -> ScenarioResult:
    """A run that is not ok: its outcome, and what ended it (the error's own message)."""
    exc = trace.exception
    if exc is None:
        why = _ENDING_ERRORS.get(trace.outcome) or trace.error or f"the run ended {trace.outcome}"
        return ScenarioResult(trace.outcome, why, trace)
    return ScenarioResult(trace.outcome, str(exc) or type(exc).__name__, trace)


def _probe(client: Client, endpoint: Endpoint, scenario: Scenario) -> ScenarioResult:
    trace = client.probe_trace(
        endpoint.model, tool_choice=scenario.tool_choice, stream=bool(scenario.stream)
    )
    return _failed(trace) if trace.outcome != "ok" else ScenarioResult("ok", "", trace)


# A run scenario carries every field of RunRequest but the model: RunOptions', and the
# budget and stream of its own (tests/test_compare.py checks that none is missing).
_OPTIONS = tuple(f.name for f in fields(RunOptions))


def _request(scenario: Scenario, model: str) -> RunRequest:
    values = {name: getattr(scenario, name) for name in _OPTIONS}
    return RunRequest(model, scenario.max_tokens, stream=bool(scenario.stream), **values)


def scenario_error(scenario: Scenario) -> str | None:
    """Why `scenario` cannot be sent to any endpoint (checked before any request), or None."""
    if scenario.kind not in RUNNERS:
        return f"unknown scenario kind {scenario.kind!r} (known: {', '.join(sorted(RUNNERS))})"
    if scenario.kind in ("run", "calls"):
        try:
            check_request(_request(scenario, "model"))
        except ValueError as exc:
            return f"scenario {scenario.name!r}: {exc}"
    if scenario.kind == "calls" and (
        not isinstance(scenario, CallScenario)
        or scenario.judge_calls is None
        or not scenario.messages
    ):
        return (
            f"scenario {scenario.name!r}: kind 'calls' wants a CallScenario with messages "
            "and judge_calls"
        )
    return None


def _goal(scenario: Scenario) -> Callable[[Trace], tuple[str, str] | None]:
    """The scenario's goal, judged as its run ends (`record.finalizing`), so the trace's
    outcome is the row's: None when met; a missing call or JSON raises (the error class
    is the outcome), a missing answer is `wrong_answer`."""

    def judge(trace: Trace) -> tuple[str, str] | None:
        text = trace.iterations[-1].text
        if scenario.require_tool_call and not trace.tool_calls:
            raise NoToolCallingError("the run finished without calling a tool")
        if scenario.expect_json:
            decode_json_object(text)  # NotJSONError / InvalidJSONError
        wanted = scenario.expect_answer
        if wanted and wanted.lower() not in text.lower():
            return "wrong_answer", f"the answer does not name {wanted!r}"
        return None

    return judge


def _run(client: Client, endpoint: Endpoint, scenario: Scenario) -> ScenarioResult:
    trace = run_trace(client, _request(scenario, endpoint.model), judge=_goal(scenario))
    return _failed(trace) if trace.outcome != "ok" else ScenarioResult("ok", "", trace)


def _calls(client: Client, endpoint: Endpoint, scenario: Scenario) -> ScenarioResult:
    """One request with the scenario's messages and tools; the reply's calls are recorded as
    received, never run, and judged as the round ends (so the trace's outcome is the row's)."""
    assert isinstance(scenario, CallScenario) and scenario.judge_calls is not None
    judge_calls = scenario.judge_calls
    request = _request(scenario, endpoint.model)
    tools, _, extra = check_request(request)
    mapped = (
        client.wire.held(
            client.wire.thinking_fields(request.thinking, client.server_kind), request.max_tokens
        )
        if request.thinking is not None
        else {}
    )
    sent_extra, thinking_sent = with_thinking(mapped, extra)
    asked = Request(
        endpoint.model,
        tuple(Turn(str(m["role"]), clean(str(m["content"]))) for m in scenario.messages),
        request.max_tokens,
        tools=tuple(ToolSpec(t.name, t.description, t.input_schema) for t in tools),
        tool_choice=request.tool_choice,
        temperature=request.temperature,
        stream=request.stream,
        extra=sent_extra,
        response_format=request.response_format,
    )
    trace = Trace(model=endpoint.model, endpoint=client.endpoint)
    trace.settings = {
        "kind": "calls",
        "max_tokens": request.max_tokens,
        "tool_choice": request.tool_choice,
        "tools": [t.name for t in tools],
        "extra_body": extra,
        "api": client.api,
        "thinking": request.thinking,
    }
    it = Iteration(index=0, messages=asked.messages(), thinking_sent=dict(thinking_sent))
    trace.iterations.append(it)

    def judge(done: Trace) -> tuple[str, str] | None:
        ok, why = judge_calls([(c.name, c.arguments) for c in it.tool_calls])
        return None if ok else ("wrong_call", why)

    try:
        with finalizing(trace, goal=("answer", "tool_calls"), judge=judge):
            reply = record_round(client, asked, it, trace)
            it.tool_calls.extend(as_received(reply.tool_calls))
    except RigError:
        pass
    return _failed(trace) if trace.outcome != "ok" else ScenarioResult("ok", "", trace)


RUNNERS: dict[str, Runner] = {"probe": _probe, "run": _run, "calls": _calls}


def run_scenario(
    endpoint: Endpoint,
    scenario: Scenario,
    *,
    timeout: float = 120.0,
    deadline: float | None = 600.0,
    stream: bool = False,
    client: Client | None = None,
) -> ScenarioResult:
    """Run one scenario against one endpoint; every failure becomes the result's outcome.

    `latency_s` covers the scenario's requests, not building the client.
    """
    runner = RUNNERS.get(scenario.kind)
    start = time.perf_counter()
    own: Client | None = None
    try:
        invalid = scenario_error(scenario)
        if runner is None or invalid is not None:
            raise ValueError(invalid)
        if client is None:
            client = own = Client(
                endpoint.base_url,
                endpoint.api_key,
                timeout=timeout,
                deadline=deadline,
                api=endpoint.api,
            )
        start = time.perf_counter()
        if scenario.stream is None:
            scenario = replace(scenario, stream=stream)
        result = runner(client, endpoint, scenario)
    except Exception as exc:  # one broken endpoint or runner must not lose the other rows
        result = ScenarioResult(type(exc).__name__, str(exc) or type(exc).__name__)
    finally:
        if own is not None:
            own.close()
    result.latency_s = time.perf_counter() - start
    if result.error:
        # Defence in depth: text from outside the library (a user runner) could quote the
        # endpoint.
        result.error = Redactor(endpoint.api_key, [endpoint.base_url])(result.error)
    return result
