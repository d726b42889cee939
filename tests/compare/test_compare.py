"""compare(): columns, row order, outcomes per persona, failures as rows, concurrency."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pandas as pd
import pytest

from rig_nb.compare import (
    COLUMNS,
    DEFAULT_SCENARIOS,
    RUNNERS,
    Endpoint,
    Scenario,
    ScenarioResult,
    compare,
    summarize,
)
from rig_nb.demo import DemoServer
from rig_nb.testing import RecordedRequest, Response, ScriptedServer, chat_reply

SECRET = "sk-compare-SECRET-777"


def test_columns_rows_and_outcomes(demo: DemoServer) -> None:
    names = ["well-behaved", "hermes-text-tools", "budget-think", "r1-json-sketch", "tool-spinner"]
    df = compare([Endpoint(n, demo.base_url, n) for n in names])
    assert isinstance(df, pd.DataFrame) and list(df.columns) == COLUMNS
    scenario_names = [s.name for s in DEFAULT_SCENARIOS]
    assert list(zip(df["endpoint"], df["scenario"], strict=True)) == [
        (n, s) for n in names for s in scenario_names
    ]
    got = {(r.endpoint, r.scenario): r for r in df.itertuples()}
    assert got["well-behaved", "probe"].outcome == "ok"
    assert got["well-behaved", "tool round trip"].tool_calls >= 1
    assert got["hermes-text-tools", "probe"].outcome == "NoToolCallingError"
    # Tool calls written as text are not a pass: the row says how the run ended.
    assert got["hermes-text-tools", "tool round trip"].outcome == "text_tool_calls"
    small = got["budget-think", "small budget"]
    assert (small.outcome, small.reasoning_shapes) == ("OutputLimitError", "unclosed")
    assert got["r1-json-sketch", "json answer"].outcome == "ok"
    spinner = got["tool-spinner", "tool round trip"]
    assert (spinner.outcome, spinner.iterations) == ("IterationLimitError", 4)
    assert (df["latency_s"] > 0).all()
    assert str(df["prompt_tokens"].dtype) == "Int64"


def test_a_dead_endpoint_is_rows_with_errors(demo: DemoServer, closed_port_url: str) -> None:
    endpoints = [
        Endpoint("dead", closed_port_url, "m"),
        Endpoint("ok", demo.base_url, "well-behaved"),
    ]
    scenarios = [DEFAULT_SCENARIOS[0], DEFAULT_SCENARIOS[1]]
    df = compare(endpoints, scenarios=scenarios, concurrency=2, timeout=5)
    assert list(df["endpoint"]) == ["dead", "dead", "ok", "ok"]
    assert list(df["outcome"]) == ["BackendError", "BackendError", "ok", "ok"]
    assert df["error"].iloc[0].startswith("ai backend: ")
    assert list(df["error"].iloc[2:]) == ["", ""]


def test_the_key_never_reaches_a_row_or_a_repr() -> None:
    echo = {"error": {"message": f"bad key {SECRET}", "type": "auth"}}
    with ScriptedServer([Response(echo, status=401)] * 2) as server:
        endpoint = Endpoint("e", server.base_url, "m", api_key=SECRET)
        df = compare([endpoint], scenarios=DEFAULT_SCENARIOS[:2])
        assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in repr(endpoint)
    assert list(df["outcome"]) == ["BackendError", "BackendError"]
    assert "401" in df["error"].iloc[0]
    assert SECRET not in df.to_csv() and SECRET not in df.to_html()


def test_user_scenarios_and_kinds(demo: DemoServer, monkeypatch: pytest.MonkeyPatch) -> None:
    def echo_kind(client: object, endpoint: Endpoint, scenario: Scenario) -> ScenarioResult:
        return ScenarioResult("ok", f"ran {scenario.prompt} on {endpoint.model}")

    monkeypatch.setitem(RUNNERS, "echo", echo_kind)
    scenarios = [
        Scenario("mine", kind="echo", prompt="p1"),
        Scenario("unknown", kind="nope"),
        Scenario("short answer", prompt="Say hi.", max_tokens=200),
    ]
    df = compare([Endpoint("d", demo.base_url, "well-behaved")], scenarios=scenarios)
    assert list(df["scenario"]) == ["mine", "unknown", "short answer"]
    assert list(df["outcome"]) == ["ok", "ValueError", "ok"]
    assert df["error"].iloc[0] == "ran p1 on well-behaved"
    assert "unknown scenario kind" in df["error"].iloc[1]
    assert df["iterations"].isna().iloc[0] and df["iterations"].iloc[2] == 1


def test_json_scenario_decodes_the_final_text() -> None:
    json_answer = next(s for s in DEFAULT_SCENARIOS if s.expect_json)
    replies = [
        chat_reply("The capital is Paris."),
        chat_reply('<think>maybe {"c": 1}</think>json{"country": "France", "capital": "Paris"}'),
        chat_reply('{"country": "France", "capital": '),
    ]
    with ScriptedServer(replies) as server:
        df = compare(
            [Endpoint("s", server.base_url, "m")], scenarios=[json_answer] * 3, concurrency=1
        )
    assert list(df["outcome"]) == ["NotJSONError", "ok", "InvalidJSONError"]
    assert list(df["reasoning_shapes"]) == ["none", "closed", "none"]


def test_concurrency_must_be_positive() -> None:
    with pytest.raises(ValueError, match="concurrency"):
        compare([], concurrency=0)


def test_compare_does_not_import_widgets() -> None:
    code = "import sys, rig_nb.compare\nassert 'ipywidgets' not in sys.modules\n"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_endpoints_run_concurrently() -> None:
    # Each endpoint's first request waits until all four are in flight at once: run one
    # after another, the barrier breaks and the rows fail.
    barrier = threading.Barrier(4, timeout=30)
    first: set[str] = set()
    lock = threading.Lock()

    def held(request: RecordedRequest) -> dict[str, object]:
        endpoint = request.path.split("/")[1]
        with lock:
            is_first = endpoint not in first
            first.add(endpoint)
        if is_first:
            barrier.wait()
        return chat_reply("hello")

    scenarios = [Scenario(f"plain {i}", prompt="hi", max_tokens=16) for i in range(2)]
    with ScriptedServer([held] * 8) as server:
        endpoints = [Endpoint(f"e{i}", f"{server.origin}/e{i}/v1", "m") for i in range(4)]
        df = compare(endpoints, scenarios=scenarios, concurrency=8, progress=False)
    assert list(df["outcome"]) == ["ok"] * 8
    assert not barrier.broken


def test_concurrency_is_per_endpoint() -> None:
    lock = threading.Lock()
    state = {"now": 0, "peak": 0, "started": 0}
    # Requests 2-5 to endpoint a go through in pairs: with concurrency 1 the pair never forms
    # and the barrier breaks; with more than 2 in flight the peak says so.
    pairs = threading.Barrier(2, timeout=30)

    def held(request: RecordedRequest) -> dict[str, object]:
        with lock:
            state["started"] += 1
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            n = state["started"]
        try:
            if 1 < n < 6:
                pairs.wait()
        finally:
            with lock:
                state["now"] -= 1
        return chat_reply("ok")

    scenarios = [Scenario(f"plain {i}", prompt="hi", max_tokens=16) for i in range(6)]
    with ScriptedServer([held] * 6) as a, ScriptedServer([chat_reply("ok")] * 6) as b:
        eps = [Endpoint("a", a.base_url, "m"), Endpoint("b", b.base_url, "m")]
        df = compare(eps, scenarios=scenarios, concurrency=2, progress=False)
    assert list(df["outcome"]) == ["ok"] * 12
    assert list(df["endpoint"]) == ["a"] * 6 + ["b"] * 6
    assert state["peak"] == 2 and not pairs.broken


def test_repeats_rows_traces_and_progress(demo: DemoServer) -> None:
    seen: list[tuple[int, int]] = []
    scenarios = [DEFAULT_SCENARIOS[0], DEFAULT_SCENARIOS[1]]
    df = compare(
        [
            Endpoint("w", demo.base_url, "well-behaved"),
            Endpoint("q", demo.base_url, "qwen3-no-parser"),
        ],
        scenarios=scenarios,
        repeats=3,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert list(df.columns) == COLUMNS and len(df) == 12
    assert list(df["repeat"]) == [0, 1, 2] * 4
    assert list(df["scenario"][:6]) == ["probe"] * 3 + ["plain answer"] * 3
    assert sorted(seen) == [(n, 12) for n in range(1, 13)]
    traces = df.attrs["traces"]
    assert set(traces) == set(range(12))
    assert all(t.model == df["model"][n] for n, t in traces.items())
    q = df[(df["endpoint"] == "q") & (df["scenario"] == "plain answer")]
    assert set(q["reasoning_shapes"]) == {"unopened"} and set(q["ending"]) == {"answer"}
    # Derived frames share the traces rather than copying them.
    assert df[df["outcome"] == "ok"].attrs["traces"] is traces


def test_summarize_is_the_scenario_by_endpoint_matrix(demo: DemoServer) -> None:
    df = compare(
        [
            Endpoint("w", demo.base_url, "well-behaved"),
            Endpoint("b", demo.base_url, "budget-think"),
        ],
        scenarios=[DEFAULT_SCENARIOS[1], DEFAULT_SCENARIOS[4]],
        repeats=2,
        progress=False,
    )
    matrix = summarize(df)
    assert list(matrix.index) == ["plain answer", "small budget"]
    assert list(matrix.columns) == ["w", "b"]
    assert matrix.loc["plain answer", "w"].startswith("2/2 ok, ")
    assert matrix.loc["small budget", "b"].startswith("0/2 ok, ")
    assert matrix.loc["plain answer", "w"].endswith(" s")


def test_an_unreachable_endpoint_fails_once(closed_port_url: str) -> None:
    dead = closed_port_url
    with ScriptedServer([chat_reply("ok")] * 6) as alive:
        df = compare(
            [Endpoint("dead", dead, "m"), Endpoint("alive", alive.base_url, "m")],
            scenarios=[Scenario(f"s{i}", prompt="hi") for i in range(3)],
            repeats=2,
            progress=False,
        )
    dead_rows = df[df["endpoint"] == "dead"]
    assert set(dead_rows["outcome"]) == {"BackendError"} and len(dead_rows) == 6
    assert dead_rows["error"].nunique() == 1 and "refused" in dead_rows["error"].iloc[0]
    # One row holds the attempt's trace; the others were never sent.
    assert sum(n in df.attrs["traces"] for n in dead_rows.index) == 1
    assert list(df[df["endpoint"] == "alive"]["outcome"]) == ["ok"] * 6


def test_a_dripping_endpoint_does_not_hold_the_others() -> None:
    def drip(request: RecordedRequest) -> Response:
        def body() -> Iterator[bytes]:
            yield b"{"
            for _ in range(10_000):
                time.sleep(0.05)
                yield b" "

        return Response(body())

    with ScriptedServer([drip] * 2) as slow, ScriptedServer([chat_reply("ok")] * 2) as fast:
        df = compare(
            [Endpoint("slow", slow.base_url, "m"), Endpoint("fast", fast.base_url, "m")],
            scenarios=[Scenario("s", prompt="hi")],
            deadline=1.0,
            progress=False,
        )
    assert list(df["outcome"]) == ["BackendError", "ok"]
    assert "deadline of 1 s" in df["error"].iloc[0]


@pytest.mark.parametrize(
    "usage",
    [
        pytest.param({"prompt_tokens": 2**63, "completion_tokens": 10**30}, id="huge"),
        pytest.param({"prompt_tokens": "12", "completion_tokens": None}, id="strings"),
        pytest.param({"prompt_tokens": -5, "completion_tokens": 1.5}, id="odd"),
    ],
)
def test_any_usage_numbers_make_a_row(usage: dict[str, object]) -> None:
    with ScriptedServer([chat_reply("fine", usage=usage)]) as server:  # type: ignore[arg-type]
        df = compare(
            [Endpoint("e", server.base_url, "m")],
            scenarios=[Scenario("s", prompt="hi")],
            progress=False,
        )
    assert list(df["outcome"]) == ["ok"]
    assert str(df["prompt_tokens"].dtype) == "Int64"
    trace = df.attrs["traces"][0]
    assert trace.iterations[0].usage == {
        k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)
    }


def test_streamed_compare_fills_ttft(demo: DemoServer) -> None:
    df = compare(
        [Endpoint("w", demo.base_url, "well-behaved")],
        scenarios=[DEFAULT_SCENARIOS[1]],
        stream=True,
        progress=False,
    )
    assert df["outcome"].iloc[0] == "ok" and df["ttft_s"].iloc[0] > 0
    assert demo.requests[-1].json["stream"] is True
    plain = compare(
        [Endpoint("w", demo.base_url, "well-behaved")],
        scenarios=[DEFAULT_SCENARIOS[1]],
        progress=False,
    )
    assert plain["ttft_s"].isna().all()


def test_a_run_scenario_carries_every_run_request_field() -> None:
    from dataclasses import fields

    from rig_nb import RunRequest

    scenario_fields = {f.name for f in fields(Scenario)}
    missing = {f.name for f in fields(RunRequest)} - scenario_fields - {"model"}
    assert not missing, f"Scenario lacks RunRequest fields {sorted(missing)}"
