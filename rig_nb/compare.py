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
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, cast

from ._boundary import request_scope
from .client import Client, check_timing
from .errors import BackendError, Cancelled
from .load import Group, Job, Walls, is_sweep, load_levels, load_summary, mark_crossed, plan, walls
from .redact import Redactor
from .scenarios import (
    ADD_TOOL,
    DEFAULT_SCENARIOS,
    EVALUATION_SCENARIOS,
    NOT_AN_ANSWER,
    RUNNERS,
    CallScenario,
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
    "CallScenario",
    "Endpoint",
    "Runner",
    "Scenario",
    "ScenarioResult",
    "compare",
    "compare_rows",
    "group_cell",
    "has_groups",
    "run_scenario",
    "summarize",
    "summary_cell",
]

COLUMNS = [
    "endpoint",
    "model",
    "scenario",
    "group",
    "repeat",
    "load",
    "copy",
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
    "client",
]
_COUNTS = ("iterations", "tool_calls", "prompt_tokens", "completion_tokens", "reasoning_tokens")
_INT64_MAX = 2**63 - 1
_UNREACHABLE = frozenset({"connect", "tls"})
# The names of compare's threads: none is left running after compare returns; after a
# Ctrl-C, those of requests in flight end by the deadline.
THREAD_PREFIX = "rig_nb-compare"
# How often the waiting thread wakes to notice Ctrl-C (KeyboardInterrupt) during compare.
_POLL_S = 0.2


class _Unbuildable(ScenarioResult):
    """No Client could be built for the endpoint (a bad base URL): no copy of it can run."""


_CANCELLED = ScenarioResult("KeyboardInterrupt", "cancelled before it started")


class _Runs:
    """One Client per endpoint, shared by the threads running its copies."""

    def __init__(
        self, endpoints: list[Endpoint], timeout: float, deadline: float | None, stream: bool
    ) -> None:
        self._endpoints = endpoints
        self._settings = (timeout, deadline, stream)
        self._lock = threading.Lock()
        self._clients: dict[int, Client] = {}
        # Set on KeyboardInterrupt: no copy sends a request after it (`request_scope`).
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
        return run_scenario(
            endpoint, scenario, timeout=timeout, deadline=deadline, stream=stream, client=client
        )

    def copy(self, job: Job, group: Group) -> ScenarioResult:
        """Run one copy on a worker thread; every request it sends is refused once cancelled."""
        with request_scope(planned=0, cancel=self.cancelled):
            if self.cancelled.is_set():
                return _CANCELLED
            start = time.perf_counter()
            result = self._one(job.index, job.scenario)
            end = time.perf_counter()
        with self._lock:
            group.start, group.end = min(group.start, start), max(group.end, end)
        return result

    def close(self) -> None:
        for client in self._clients.values():
            client.close()


def _close_after(pool: ThreadPoolExecutor, runs: _Runs) -> None:
    pool.shutdown(wait=True)
    runs.close()


def _unreachable(result: ScenarioResult) -> bool:
    if isinstance(result, _Unbuildable):
        return True
    exc = result.trace.exception if result.trace is not None else None
    return isinstance(exc, BackendError) and exc.kind in _UNREACHABLE


def _cut_by_cancel(result: ScenarioResult) -> bool:
    exc = result.trace.exception if result.trace is not None else None
    return result is _CANCELLED or isinstance(exc, Cancelled)


def _count(value: int | None) -> int | None:
    return value if value is not None and -_INT64_MAX <= value <= _INT64_MAX else None


def _row(endpoint: Endpoint, job: Job, result: ScenarioResult) -> dict[str, Any]:
    trace = result.trace
    row: dict[str, Any] = {
        "endpoint": endpoint.name,
        "model": endpoint.model,
        "scenario": job.named.name,
        "group": job.named.group,
        "repeat": job.repeat,
        "load": job.load,
        "copy": job.copy,
        "outcome": result.outcome,
        "ending": "",
        "error": result.error,
        "reasoning_shapes": "",
        "leaks": "",
        "latency_s": result.latency_s,
        "ttft_s": None,
        **dict.fromkeys(_COUNTS),
        # The agent client the scenario was shaped as (`Scenario.client`), "" for none.
        "client": job.named.client or "",
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
    load: int | Sequence[int] = (1,),
    walls_out: Walls | None = None,
) -> tuple[list[dict[str, Any]], list[Trace | None]]:
    """The rows of `compare` as dicts, and each row's trace (None where no request was made);
    a sweep's wall time per (endpoint, scenario, load) goes into `walls_out` when given."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError("concurrency must be an int >= 1")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError("repeats must be an int >= 1")
    levels = load_levels(load)
    check_timing(timeout, deadline)
    eps = list(endpoints)
    scs = list(DEFAULT_SCENARIOS if scenarios is None else scenarios)
    # A sweep runs one group (a level's copies) of an endpoint at a time; the plain compare
    # runs up to `concurrency` single copies of an endpoint at a time.
    sweep = is_sweep(levels)
    limit = 1 if sweep else concurrency
    jobs, queues = plan(eps, scs, repeats, levels, sweep)
    pending = [deque(q) for q in queues]
    invalid = {id(s): scenario_error(s) for s in scs}
    results: list[ScenarioResult | None] = [None] * len(jobs)
    running = [0] * len(eps)
    opened = [False] * len(eps)  # the endpoint's first group has finished
    dead: list[ScenarioResult | None] = [None] * len(eps)
    finished: list[Group] = []
    runs = _Runs(eps, timeout, deadline, stream)
    workers = max(1, min(len(jobs), len(eps) * (max(levels) if sweep else concurrency)))
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=THREAD_PREFIX)
    futures: dict[Future[ScenarioResult], tuple[int, Group]] = {}
    done = 0

    def settle(n: int, result: ScenarioResult) -> None:
        nonlocal done
        results[n] = result
        done += 1
        if progress is not None:
            progress(done, len(jobs))

    def feed(index: int) -> None:
        # The endpoint's first group runs alone: if it finds the endpoint unreachable, the
        # rest take its result instead of sending requests.
        queue = pending[index]
        while queue and running[index] < (limit if opened[index] else 1):
            group = queue.popleft()
            why, gone = invalid[id(jobs[group.jobs[0]].named)], dead[index]
            if why is not None:  # fails its own rows only, before any request
                for n in group.jobs:
                    settle(n, ScenarioResult("ValueError", why))
                continue
            if gone is not None:
                for n in group.jobs:
                    settle(n, replace(gone, trace=None, latency_s=0.0))
                continue
            running[index] += 1
            for n in group.jobs:
                futures[pool.submit(runs.copy, jobs[n], group)] = (n, group)

    try:
        for index in range(len(eps)):
            feed(index)
        while futures:
            # A bounded wait: an interrupt raised in this thread is seen within _POLL_S.
            ready, _ = wait(futures, timeout=_POLL_S, return_when=FIRST_COMPLETED)
            for future in ready:
                n, group = futures.pop(future)
                try:
                    result = future.result()  # a tool's KeyboardInterrupt is raised here
                except Exception as exc:
                    result = ScenarioResult(type(exc).__name__, str(exc) or type(exc).__name__)
                group.left -= 1
                index = jobs[n].index
                if group.left == 0:
                    running[index] -= 1
                    finished.append(group)
                settle(n, result)
                if group.left == 0:
                    if sweep:
                        mark_crossed(jobs, group, results)
                    if not opened[index]:
                        opened[index] = True
                        gone = [results[m] for m in group.jobs]
                        dead[index] = next((r for r in gone if r and _unreachable(r)), None)
                    feed(index)
    except BaseException as exc:
        # Ctrl-C: nothing new is sent, and a request in flight ends by its deadline; clients
        # are closed after them, off this thread (closing a pool under a request in flight
        # would leave its socket to the garbage collector). What finished is kept on the
        # exception.
        runs.cancelled.set()
        pool.shutdown(wait=False, cancel_futures=True)
        closer = threading.Thread(
            target=_close_after, args=(pool, runs), name=f"{THREAD_PREFIX}-close", daemon=True
        )
        closer.start()
        kept = [(n, r) for n, r in enumerate(results) if r is not None and not _cut_by_cancel(r)]
        vars(exc).update(
            rows=[_row(eps[jobs[n].index], jobs[n], r) for n, r in kept],
            traces=[r.trace for _, r in kept],
            walls=walls(eps, jobs, finished) if sweep else {},
        )
        raise
    pool.shutdown(wait=True)
    runs.close()
    final = cast("list[ScenarioResult]", results)
    rows = [_row(eps[job.index], job, res) for job, res in zip(jobs, final, strict=True)]
    if walls_out is not None and sweep:
        walls_out.update(walls(eps, jobs, finished))
    return rows, [res.trace for res in final]


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
    load: int | Sequence[int] = (1,),
) -> pd.DataFrame:
    """Run every scenario `repeats` times against every endpoint; one row per run.

    Endpoints run side by side, each with at most `concurrency` runs in flight.
    `load` (levels, a bare int L is `(L,)`): with several levels or one above 1,
    each (endpoint, scenario, repeat) runs at every level L, in the order given,
    as L copies that start together with nothing else of that endpoint beside
    them (`concurrency` does not apply); each copy's prompt ends with its own
    nonce (a probe sends its own fixed prompt, without one), and a copy whose
    reply carries another's has outcome `crossed_stream`.
    `progress`: None shows a progress bar in a notebook (nothing elsewhere),
    False nothing, a callable gets `(done, total)`. Columns are `COLUMNS`;
    counts are nullable integers, empty where no request was made.
    `df.attrs["traces"]` maps each row's index to its Trace. On Ctrl-C the
    KeyboardInterrupt carries the finished rows as `.frame`.
    """
    try:
        import pandas  # noqa: F401  (fail before any request when pandas is missing)
    except ImportError:
        raise ImportError("compare needs pandas: pip install 'rig_nb[notebook]'") from None
    bar = _notebook_progress() if progress is None else None
    callback = None if progress is False else (bar if progress is None else progress)
    try:
        spans: Walls = {}
        rows, traces = compare_rows(
            endpoints,
            scenarios=scenarios,
            concurrency=concurrency,
            repeats=repeats,
            stream=stream,
            progress=callback,
            timeout=timeout,
            deadline=deadline,
            load=load,
            walls_out=spans,
        )
    except KeyboardInterrupt as exc:
        # The rows that finished before the interrupt, as the DataFrame compare would return.
        got = vars(exc)
        got["frame"] = _frame(got.get("rows", []), got.get("traces", []), got.get("walls", {}))
        raise
    finally:
        if bar is not None:
            bar.close()
    return _frame(rows, traces, spans)


def _frame(rows: list[dict[str, Any]], traces: list[Trace | None], spans: Walls) -> pd.DataFrame:
    import pandas as pd

    df = pd.DataFrame(rows, columns=COLUMNS)
    for col in _COUNTS:
        df[col] = df[col].astype("Int64")
    for col in ("repeat", "load", "copy"):
        df[col] = df[col].astype(int)
    df["latency_s"] = df["latency_s"].astype(float)
    df["ttft_s"] = df["ttft_s"].astype(float)
    df.attrs["traces"] = _Traces({n: t for n, t in enumerate(traces) if t is not None})
    if spans:
        df.attrs["load_walls"] = dict(spans)
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


def has_groups(df: pd.DataFrame) -> bool:
    """Whether any row of a compare frame carries a group (`summarize(df, by="group")`)."""
    return "group" in df.columns and bool((df["group"].astype(str) != "").any())


def group_cell(ok: int, n: int) -> str:
    """One cell of `summarize(df, by="group")`: "k/n ok (p%)", the percentage rounded down
    (199/200 is 99%, never 100%)."""
    return f"{ok}/{n} ok ({100 * ok // n if n else 0}%)"


def summarize(df: pd.DataFrame, by: str = "scenario") -> pd.DataFrame:
    """One row per scenario, one column per endpoint: "k/n ok", `pass^k` when every one of
    k > 1 repeats was ok or `flaky` when only some were, and the median latency.

    A load sweep (several levels, or one above 1) gets one row per (endpoint,
    scenario, load) instead: `rig_nb.load.LOAD_SUMMARY_COLUMNS`. `by="group"`: one row
    per group (a BFCL category; "" for scenarios without one), one column per endpoint,
    cells "k/n ok (p%)".
    """
    import pandas as pd

    if by == "group":
        return _by_group(df)
    if by != "scenario":
        raise ValueError(f'summarize: by must be "scenario" or "group", got {by!r}')
    if "load" in df.columns and len(df) and is_sweep(sorted({int(v) for v in df["load"]})):
        return load_summary(df)

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


def _by_group(df: pd.DataFrame) -> pd.DataFrame:
    import pandas as pd

    if "group" not in df.columns:
        raise ValueError('summarize(by="group") needs a frame with a "group" column')
    frame = pd.DataFrame({c: df[c].to_numpy() for c in ("endpoint", "group", "outcome")})
    frame["ok"] = frame["outcome"] == "ok"
    stats = frame.groupby(["group", "endpoint"], sort=False)["ok"].agg(["sum", "size"])
    groups = list(dict.fromkeys(frame["group"]))
    endpoints = list(dict.fromkeys(frame["endpoint"]))
    cells = {
        e: [
            group_cell(int(stats.at[(g, e), "sum"]), int(stats.at[(g, e), "size"]))
            if (g, e) in stats.index
            else ""
            for g in groups
        ]
        for e in endpoints
    }
    out = pd.DataFrame(cells, index=pd.Index(groups, name="group"))
    out.columns.name = "endpoint"
    return cast("pd.DataFrame", out)
