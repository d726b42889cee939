"""Run the same scenarios against several endpoints and get one DataFrame back.

    df = compare([Endpoint("vllm", "http://gpu:8000/v1", "qwen3"),
                  Endpoint("ollama", "http://localhost:11434", "qwen3:4b")])

One row per (endpoint, scenario), in endpoint order then scenario order. A
scenario is plain data (`Scenario`): pass `scenarios=[*DEFAULT_SCENARIOS,
Scenario("haiku", prompt=...)]`, or register a new kind in `RUNNERS`. A
failing endpoint is a row with its error, never an exception that loses the
other rows. The key never reaches a repr or the DataFrame.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from .client import Client
from .content import decode_json_object
from .errors import RigError
from .loop import RunRequest
from .tool import Tool
from .trace import Trace

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "COLUMNS",
    "DEFAULT_SCENARIOS",
    "RUNNERS",
    "Endpoint",
    "Scenario",
    "ScenarioResult",
    "compare",
    "run_scenario",
]

COLUMNS = [
    "endpoint",
    "model",
    "scenario",
    "outcome",
    "error",
    "reasoning_shapes",
    "iterations",
    "tool_calls",
    "prompt_tokens",
    "completion_tokens",
    "latency_s",
]


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible endpoint to compare: a display name, its base URL, a model."""

    name: str
    base_url: str
    model: str
    api_key: str = field(default="", repr=False)


@dataclass(frozen=True)
class Scenario:
    """One check run against every endpoint.

    kind "probe" calls `Client.probe_tool_calling(model, tool_choice=...)` (the
    probe has its own prompt and budget); kind "run" runs the tool loop with the
    prompt, tools, budget and tool_choice given here.
    `expect_json` decodes the final text with `decode_json_object`;
    `require_tool_call` counts a run that never called a tool as a failure.
    Other kinds can be added to `RUNNERS`.
    """

    name: str
    kind: str = "run"
    prompt: str = ""
    system: str = ""
    max_tokens: int = 1024
    tools: tuple[Tool, ...] = ()
    max_iterations: int = 0
    tool_choice: str | None = "auto"
    expect_json: bool = False
    require_tool_call: bool = False


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
    Scenario(
        "plain answer",
        prompt="What is the capital of France? Answer in one short sentence.",
    ),
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

Runner = Callable[[Client, Endpoint, Scenario], ScenarioResult]


def _error_text(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _probe(client: Client, endpoint: Endpoint, scenario: Scenario) -> ScenarioResult:
    trace = Trace()
    try:
        client.probe_tool_calling(endpoint.model, tool_choice=scenario.tool_choice, trace=trace)
    except RigError as exc:
        return ScenarioResult(type(exc).__name__, _error_text(exc), trace)
    return ScenarioResult("ok", "", trace)


def _run(client: Client, endpoint: Endpoint, scenario: Scenario) -> ScenarioResult:
    trace = Trace()
    request = RunRequest(
        model=endpoint.model,
        max_tokens=scenario.max_tokens,
        system=scenario.system,
        prompt=scenario.prompt,
        tools=scenario.tools,
        max_iterations=scenario.max_iterations,
        tool_choice=scenario.tool_choice,
    )
    try:
        result = client.run(request, trace=trace)
    except RigError as exc:
        return ScenarioResult(type(exc).__name__, _error_text(exc), exc.trace or trace)
    if scenario.require_tool_call and result.tool_calls == 0:
        return ScenarioResult(
            "NoToolCallingError", "the run finished without calling a tool", result.trace
        )
    if scenario.expect_json:
        try:
            decode_json_object(result.text)
        except RigError as exc:
            return ScenarioResult(type(exc).__name__, _error_text(exc), result.trace)
    return ScenarioResult("ok", "", result.trace)


RUNNERS: dict[str, Runner] = {"probe": _probe, "run": _run}


def _scrub(text: str, endpoint: Endpoint) -> str:
    # Defence in depth: errors from outside the library (a bad base URL, a user
    # runner) could quote the endpoint; the key and the URL never reach a row.
    for secret in (endpoint.api_key, endpoint.base_url):
        if secret:
            text = text.replace(secret, "***")
    return text


def run_scenario(
    endpoint: Endpoint,
    scenario: Scenario,
    *,
    timeout: float = 120.0,
    client: Client | None = None,
) -> ScenarioResult:
    """Run one scenario against one endpoint; every failure becomes the result's outcome.

    `latency_s` covers the scenario's requests, not building the client.
    """
    runner = RUNNERS.get(scenario.kind)
    start = time.perf_counter()
    own: Client | None = None
    try:
        if runner is None:
            raise ValueError(f"unknown scenario kind {scenario.kind!r}")
        if client is None:
            client = own = Client(endpoint.base_url, endpoint.api_key, timeout=timeout)
        start = time.perf_counter()
        result = runner(client, endpoint, scenario)
    except Exception as exc:  # one broken endpoint must not lose the other rows
        result = ScenarioResult(type(exc).__name__, _error_text(exc))
    finally:
        if own is not None:
            own.close()
    result.latency_s = time.perf_counter() - start
    result.error = _scrub(result.error, endpoint)
    return result


class _Clients:
    """One Client per endpoint, shared by the threads running its scenarios."""

    def __init__(self, endpoints: list[Endpoint], timeout: float, concurrency: int) -> None:
        self._endpoints = endpoints
        self._timeout = timeout
        self._lock = threading.Lock()
        self._clients: dict[int, Client] = {}
        # At most `concurrency` pairs in flight against any one endpoint.
        self._slots = [threading.BoundedSemaphore(concurrency) for _ in endpoints]

    def run(self, index: int, scenario: Scenario) -> ScenarioResult:
        endpoint = self._endpoints[index]
        try:
            with self._lock:
                client = self._clients.get(index)
                if client is None:
                    client = Client(endpoint.base_url, endpoint.api_key, timeout=self._timeout)
                    self._clients[index] = client
        except Exception as exc:  # a bad base URL is that endpoint's rows, not an exception
            return ScenarioResult(type(exc).__name__, _scrub(_error_text(exc), endpoint))
        with self._slots[index]:
            return run_scenario(endpoint, scenario, timeout=self._timeout, client=client)

    def close(self) -> None:
        for client in self._clients.values():
            client.close()


def _row(endpoint: Endpoint, scenario: Scenario, result: ScenarioResult) -> dict[str, Any]:
    trace = result.trace
    row: dict[str, Any] = {
        "endpoint": endpoint.name,
        "model": endpoint.model,
        "scenario": scenario.name,
        "outcome": result.outcome,
        "error": result.error,
        "reasoning_shapes": "",
        "iterations": None,
        "tool_calls": None,
        "prompt_tokens": None,
        "completion_tokens": None,
        "latency_s": result.latency_s,
    }
    if trace is not None:
        its = trace.iterations
        row["reasoning_shapes"] = ",".join(it.reasoning_shape for it in its)
        row["iterations"] = len(its)
        row["tool_calls"] = len(trace.tool_calls)
        row.update(trace.usage_totals())
    return row


def compare(
    endpoints: Iterable[Endpoint],
    *,
    scenarios: Sequence[Scenario] | None = None,
    concurrency: int = 4,
    timeout: float = 120.0,
) -> pd.DataFrame:
    """Run every scenario against every endpoint; rows in endpoint, then scenario order.

    Endpoints run side by side, each with at most `concurrency` scenarios in
    flight, so a slow endpoint does not hold up the others.

    Columns are `COLUMNS`; counts are nullable integers, empty for a pair
    that failed before any request was made.
    """
    import pandas as pd

    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    eps = list(endpoints)
    scs = list(DEFAULT_SCENARIOS if scenarios is None else scenarios)
    pairs = [(i, s) for i in range(len(eps)) for s in scs]
    # Submitted scenario-major, so the first wave spreads over every endpoint.
    order = sorted(range(len(pairs)), key=lambda n: (n % len(scs), n) if scs else n)
    clients = _Clients(eps, timeout, concurrency)
    try:
        workers = max(1, min(len(pairs), concurrency * len(eps)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {n: pool.submit(clients.run, *pairs[n]) for n in order}
            rows = [_row(eps[i], s, futures[n].result()) for n, (i, s) in enumerate(pairs)]
    finally:
        clients.close()
    df = pd.DataFrame(rows, columns=COLUMNS)
    for col in ("iterations", "tool_calls", "prompt_tokens", "completion_tokens"):
        df[col] = df[col].astype("Int64")
    df["latency_s"] = df["latency_s"].astype(float)
    return cast("pd.DataFrame", df)
