"""Run the same scenarios against several endpoints and get one DataFrame back.

    df = compare([Endpoint("vllm", "http://gpu:8000/v1", "qwen3"),
                  Endpoint("ollama", "http://localhost:11434", "qwen3:4b")], repeats=3)
    summarize(df)          # scenario x endpoint: "k/n ok" and the median latency

One row per (endpoint, scenario, repeat), in that order. A scenario is plain
data (`Scenario`); kinds are registered in `RUNNERS`. `outcome` is "ok" only
when the scenario's goal was met: an error is its class name, and a run that
ended without an answer gets its ending (`reasoning_only`, `empty`,
`text_tool_calls`). A failing endpoint is rows with its error, never an
exception that loses the other rows; one that cannot be reached fails once and
its other rows carry the same error without more requests. The key never
reaches a repr, a row or a trace. `compare_rows` is the same without pandas.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, cast

from .client import Client, check_timing
from .errors import BackendError
from .redact import Redactor
from .scenarios import (
    ADD_TOOL,
    DEFAULT_SCENARIOS,
    EVALUATION_SCENARIOS,
    NOT_AN_ANSWER,
    RUNNERS,
    Endpoint,
    Runner,
    Scenario,
    ScenarioResult,
    run_scenario,
    scenario_error,
)
from .trace import Trace

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ADD_TOOL",
    "COLUMNS",
    "DEFAULT_SCENARIOS",
    "EVALUATION_SCENARIOS",
    "NOT_AN_ANSWER",
    "RUNNERS",
    "Endpoint",
    "Runner",
    "Scenario",
    "ScenarioResult",
    "compare",
    "compare_rows",
    "run_scenario",
    "summarize",
    "summary_cell",
]

COLUMNS = [
    "endpoint",
    "model",
    "scenario",
    "repeat",
    "outcome",
    "ending",
    "error",
    "reasoning_shapes",
    "leaks",
    "iterations",
    "tool_calls",
    "prompt_tokens",
    "completion_tokens",
    "reasoning_tokens",
    "latency_s",
    "ttft_s",
]
_COUNTS = ("iterations", "tool_calls", "prompt_tokens", "completion_tokens", "reasoning_tokens")
_INT64_MAX = 2**63 - 1
_UNREACHABLE = frozenset({"connect", "tls"})
# How often the waiting thread wakes to notice Ctrl-C (KeyboardInterrupt) during compare.
_POLL_S = 0.2


class _Gate:
    """Per endpoint: its first pair runs alone; if it finds the endpoint unreachable, the rest
    take its result instead of sending requests."""

    def __init__(self) -> None:
        self.first = threading.Lock()
        self.opened = threading.Event()
        self.dead: ScenarioResult | None = None


class _Unbuildable(ScenarioResult):
    """No Client could be built for the endpoint (a bad base URL): no pair of it can run."""


class _Runs:
    """One Client and one gate per endpoint, shared by the threads running its pairs."""

    def __init__(
        self,
        endpoints: list[Endpoint],
        timeout: float,
        deadline: float | None,
        stream: bool,
        concurrency: int,
    ) -> None:
        self._endpoints = endpoints
        self._settings = (timeout, deadline, stream)
        self._lock = threading.Lock()
        self._clients: dict[int, Client] = {}
        self._gates = [_Gate() for _ in endpoints]
        self._slots = [threading.BoundedSemaphore(concurrency) for _ in endpoints]
        # Set on KeyboardInterrupt: a pair not yet started returns at once, sending nothing.
        self.cancelled = threading.Event()

    def _client(self, index: int) -> Client:
        timeout, deadline, _ = self._settings
        with self._lock:
            client = self._clients.get(index)
            if client is None:
                endpoint = self._endpoints[index]
                client = Client(
                    endpoint.base_url,
                    endpoint.api_key,
                    timeout=timeout,
                    deadline=deadline,
                    api=endpoint.api,
                )
                self._clients[index] = client
            return client

    def _one(self, index: int, scenario: Scenario) -> ScenarioResult:
        endpoint = self._endpoints[index]
        timeout, deadline, stream = self._settings
        try:
            client = self._client(index)
        except Exception as exc:  # a bad base URL is that endpoint's rows, not an exception
            error = Redactor(endpoint.api_key, [endpoint.base_url])(str(exc))
            return _Unbuildable(type(exc).__name__, error)
        with self._slots[index]:
            if self.cancelled.is_set():
                return _CANCELLED
            return run_scenario(
                endpoint, scenario, timeout=timeout, deadline=deadline, stream=stream, client=client
            )

    def run(self, index: int, scenario: Scenario) -> ScenarioResult:
        if self.cancelled.is_set():
            return _CANCELLED
        invalid = scenario_error(scenario)
        if invalid is not None:  # fails its own rows only, and never marks the endpoint dead
            return ScenarioResult("ValueError", invalid)
        gate = self._gates[index]
        if gate.first.acquire(blocking=False):
            try:
                result = self._one(index, scenario)
                if _unreachable(result):
                    gate.dead = result
            finally:
                gate.opened.set()
            return result
        gate.opened.wait()
        if gate.dead is not None:
            return replace(gate.dead, trace=None, latency_s=0.0)
        return self._one(index, scenario)

    def close(self) -> None:
        for client in self._clients.values():
            client.close()


_CANCELLED = ScenarioResult("KeyboardInterrupt", "cancelled before it started")


def _close_after(pool: ThreadPoolExecutor, runs: _Runs) -> None:
    pool.shutdown(wait=True)
    runs.close()


def _unreachable(result: ScenarioResult) -> bool:
    if isinstance(result, _Unbuildable):
        return True
    exc = result.trace.exception if result.trace is not None else None
    return isinstance(exc, BackendError) and exc.kind in _UNREACHABLE


def _count(value: int | None) -> int | None:
    return value if value is not None and -_INT64_MAX <= value <= _INT64_MAX else None


def _row(
    endpoint: Endpoint, scenario: Scenario, repeat: int, result: ScenarioResult
) -> dict[str, Any]:
    trace = result.trace
    row: dict[str, Any] = {
        "endpoint": endpoint.name,
        "model": endpoint.model,
        "scenario": scenario.name,
        "repeat": repeat,
        "outcome": result.outcome,
        "ending": "",
        "error": result.error,
        "reasoning_shapes": "",
        "leaks": "",
        "latency_s": result.latency_s,
        "ttft_s": None,
        **dict.fromkeys(_COUNTS),
    }
    if trace is not None:
        usage = trace.usage()
        ttfts = [it.ttft_s for it in trace.iterations if it.streamed and it.chunks]
        row.update(
            ending=trace.ending,
            reasoning_shapes=",".join(trace.reasoning_shapes()) or "none",
            leaks=",".join(trace.leaks()) or "none",
            iterations=len(trace.iterations),
            tool_calls=len(trace.tool_calls),
            prompt_tokens=_count(usage.prompt_tokens),
            completion_tokens=_count(usage.completion_tokens),
            reasoning_tokens=_count(usage.reasoning_tokens),
            ttft_s=ttfts[0] if ttfts else None,
        )
    return row


Progress = Callable[[int, int], None]


def compare_rows(
    endpoints: Iterable[Endpoint],
    *,
    scenarios: Sequence[Scenario] | None = None,
    concurrency: int = 4,
    repeats: int = 1,
    stream: bool = False,
    progress: Progress | None = None,
    timeout: float = 120.0,
    deadline: float | None = 600.0,
) -> tuple[list[dict[str, Any]], list[Trace | None]]:
    """The rows of `compare` as dicts, and each row's trace (None where no request was made)."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError("concurrency must be an int >= 1")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError("repeats must be an int >= 1")
    check_timing(timeout, deadline)
    eps = list(endpoints)
    scs = list(DEFAULT_SCENARIOS if scenarios is None else scenarios)
    pairs = [(i, s, r) for i in range(len(eps)) for s in scs for r in range(repeats)]
    per = len(scs) * repeats
    # Submitted scenario-major, so the first wave spreads over every endpoint.
    order = sorted(range(len(pairs)), key=lambda n: (n % per, n) if per else n)
    runs = _Runs(eps, timeout, deadline, stream, concurrency)
    done = 0
    done_lock = threading.Lock()

    def one(n: int) -> ScenarioResult:
        nonlocal done
        index, scenario, _ = pairs[n]
        result = runs.run(index, scenario)
        if progress is not None:
            with done_lock:
                done += 1
                progress(done, len(pairs))
        return result

    workers = max(1, min(len(pairs), concurrency * len(eps)))
    pool = ThreadPoolExecutor(max_workers=workers)
    futures = {n: pool.submit(one, n) for n in order}
    try:
        pending = set(futures.values())
        while pending:
            # A bounded wait: an interrupt raised in this thread is seen within _POLL_S.
            _, pending = wait(pending, timeout=_POLL_S, return_when=FIRST_COMPLETED)
        results = [futures[n].result() for n in range(len(pairs))]
    except BaseException as exc:
        # Ctrl-C: queued pairs are cancelled and nothing new is sent. Requests in flight end
        # by their deadline; their clients are closed after them, off this thread (closing a
        # pool under a request in flight would leave its socket to the garbage collector).
        # What finished is kept on the exception.
        runs.cancelled.set()
        pool.shutdown(wait=False, cancel_futures=True)
        threading.Thread(target=_close_after, args=(pool, runs), daemon=True).start()
        done_pairs = [
            n for n in range(len(pairs)) if futures[n].done() and not futures[n].cancelled()
        ]
        kept = [(n, futures[n].result()) for n in done_pairs if futures[n].exception() is None]
        kept = [(n, res) for n, res in kept if res is not _CANCELLED]
        vars(exc).update(
            rows=[_row(eps[pairs[n][0]], pairs[n][1], pairs[n][2], res) for n, res in kept],
            traces=[res.trace for _, res in kept],
        )
        raise
    pool.shutdown(wait=True)
    runs.close()
    rows = [_row(eps[i], s, r, res) for (i, s, r), res in zip(pairs, results, strict=True)]
    return rows, [res.trace for res in results]


class _Bar:
    """A progress bar in a notebook: `(done, total)` updates it; `close` removes it."""

    def __init__(self) -> None:
        import ipywidgets as widgets
        from IPython.display import display

        self.widget = widgets.IntProgress(value=0, min=0, max=1, description="compare")
        display(self.widget)  # type: ignore[no-untyped-call]

    def __call__(self, done: int, total: int) -> None:
        self.widget.max = max(total, 1)
        self.widget.value = done
        self.widget.description = f"{done}/{total}"

    def close(self) -> None:
        self.widget.close()


def _notebook_progress() -> _Bar | None:
    """A progress bar when running in a notebook kernel with ipywidgets, else None."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    if shell is None or "IPKernelApp" not in getattr(shell, "config", {}):
        return None
    try:
        return _Bar()
    except ImportError:
        return None


class _Traces(dict[int, Trace]):
    """df.attrs["traces"]: pandas deep-copies attrs on every derived frame; traces are shared."""

    def __deepcopy__(self, memo: dict[int, Any]) -> _Traces:
        return self


def compare(
    endpoints: Iterable[Endpoint],
    *,
    scenarios: Sequence[Scenario] | None = None,
    concurrency: int = 4,
    repeats: int = 1,
    stream: bool = False,
    progress: Progress | Literal[False] | None = None,
    timeout: float = 120.0,
    deadline: float | None = 600.0,
) -> pd.DataFrame:
    """Run every scenario `repeats` times against every endpoint; one row per run.

    Endpoints run side by side, each with at most `concurrency` runs in flight.
    `progress`: None shows a progress bar in a notebook (nothing elsewhere),
    False nothing, a callable gets `(done, total)`. Columns are `COLUMNS`;
    counts are nullable integers, empty where no request was made.
    `df.attrs["traces"]` maps each row's index to its Trace.
    """
    try:
        import pandas  # noqa: F401  (fail before any request when pandas is missing)
    except ImportError:
        raise ImportError("compare needs pandas: pip install 'rig_nb[notebook]'") from None
    bar = _notebook_progress() if progress is None else None
    callback = None if progress is False else (bar if progress is None else progress)
    try:
        rows, traces = compare_rows(
            endpoints,
            scenarios=scenarios,
            concurrency=concurrency,
            repeats=repeats,
            stream=stream,
            progress=callback,
            timeout=timeout,
            deadline=deadline,
        )
    except KeyboardInterrupt as exc:
        # The rows that finished before the interrupt, as the DataFrame compare would return.
        vars(exc)["frame"] = _frame(vars(exc).get("rows", []), vars(exc).get("traces", []))
        raise
    finally:
        if bar is not None:
            bar.close()
    return _frame(rows, traces)


def _frame(rows: list[dict[str, Any]], traces: list[Trace | None]) -> pd.DataFrame:
    import pandas as pd

    df = pd.DataFrame(rows, columns=COLUMNS)
    for col in _COUNTS:
        df[col] = df[col].astype("Int64")
    df["repeat"] = df["repeat"].astype(int)
    df["latency_s"] = df["latency_s"].astype(float)
    df["ttft_s"] = df["ttft_s"].astype(float)
    df.attrs["traces"] = _Traces({n: t for n, t in enumerate(traces) if t is not None})
    return cast("pd.DataFrame", df)


def summary_cell(ok: int, n: int, median: float) -> str:
    """One cell of `summarize`: "k/n ok", the marks, the median latency.

    With more than one repeat, `pass^n` marks a cell where every repeat was ok
    and `flaky` one where some were and some were not ("2/3 ok" is neither
    broken nor fine).
    """
    marks = ""
    if n > 1 and ok == n:
        marks = f", pass^{n}"
    elif 0 < ok < n:
        marks = ", flaky"
    return f"{ok}/{n} ok{marks}, {median:.2f} s"


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """One row per scenario, one column per endpoint: "k/n ok", `pass^k` when every one of
    k > 1 repeats was ok or `flaky` when only some were, and the median latency."""
    import pandas as pd

    # A bare copy of the four columns: derived frames of df would deep-copy df.attrs each time.
    frame = pd.DataFrame(
        {c: df[c].to_numpy() for c in ("endpoint", "scenario", "outcome", "latency_s")}
    )
    frame["ok"] = frame["outcome"] == "ok"
    grouped = frame.groupby(["scenario", "endpoint"], sort=False)
    stats = grouped.agg(ok=("ok", "sum"), n=("ok", "size"), median=("latency_s", "median"))
    scenarios = list(dict.fromkeys(frame["scenario"]))
    endpoints = list(dict.fromkeys(frame["endpoint"]))
    cells = {
        e: [
            summary_cell(
                int(stats.at[(s, e), "ok"]),
                int(stats.at[(s, e), "n"]),
                float(stats.at[(s, e), "median"]),
            )
            if (s, e) in stats.index
            else ""
            for s in scenarios
        ]
        for e in endpoints
    }
    out = pd.DataFrame(cells, index=pd.Index(scenarios, name="scenario"))
    out.columns.name = "endpoint"
    return cast("pd.DataFrame", out)
