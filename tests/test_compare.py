"""compare(): columns, row order, outcomes per persona, failures as rows, concurrency."""

from __future__ import annotations

import socket
import subprocess
import sys
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
)
from rig_nb.demo import DemoServer
from rig_nb.testing import RecordedRequest, Reply, ScriptedServer, chat_reply

SECRET = "sk-compare-SECRET-777"
DELAY_S = 0.5


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer() as server:
        yield server


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


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
    assert got["hermes-text-tools", "tool round trip"].outcome == "NoToolCallingError"
    small = got["budget-think", "small budget"]
    assert (small.outcome, small.reasoning_shapes) == ("OutputLimitError", "unclosed")
    assert got["r1-json-sketch", "json answer"].outcome == "ok"
    spinner = got["tool-spinner", "tool round trip"]
    assert (spinner.outcome, spinner.iterations) == ("IterationLimitError", 4)
    assert (df["latency_s"] > 0).all()
    assert str(df["prompt_tokens"].dtype) == "Int64"


def test_a_dead_endpoint_is_rows_with_errors(demo: DemoServer) -> None:
    endpoints = [
        Endpoint("dead", closed_port_url(), "m"),
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
    with ScriptedServer([Reply(echo, status=401)] * 2) as server:
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


def slow_reply(request: RecordedRequest) -> Reply:
    return Reply(chat_reply("hello"), delay=DELAY_S)


def test_endpoints_run_concurrently() -> None:
    # pandas is imported above, so the wall time is requests and client set-up only.
    scenarios = [Scenario(f"plain {i}", prompt="hi", max_tokens=16) for i in range(2)]
    with ScriptedServer([slow_reply] * 8) as server:
        endpoints = [Endpoint(f"e{i}", server.base_url, "m") for i in range(4)]
        start = time.perf_counter()
        df = compare(endpoints, scenarios=scenarios, concurrency=8)
        wall = time.perf_counter() - start
    assert list(df["outcome"]) == ["ok"] * 8
    serial_sum = float(df["latency_s"].sum())
    assert serial_sum >= 8 * DELAY_S
    ratio = wall / serial_sum
    print(f"compare concurrency: wall {wall:.3f} s / serial sum {serial_sum:.3f} s = {ratio:.2f}")
    assert ratio < 0.75


def test_concurrency_is_per_endpoint() -> None:
    import threading

    lock = threading.Lock()
    state = {"now": 0, "peak": 0}
    release = threading.Event()

    def slow(request: RecordedRequest) -> dict[str, object]:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        release.wait(0.3)  # the server holds each request; nothing in the test waits on time
        with lock:
            state["now"] -= 1
        return chat_reply("ok")

    scenarios = [Scenario(f"plain {i}", prompt="hi", max_tokens=16) for i in range(6)]
    with ScriptedServer([slow] * 6) as a, ScriptedServer([chat_reply("ok")] * 6) as b:
        eps = [Endpoint("a", a.base_url, "m"), Endpoint("b", b.base_url, "m")]
        df = compare(eps, scenarios=scenarios, concurrency=2)
    assert list(df["outcome"]) == ["ok"] * 12
    assert list(df["endpoint"]) == ["a"] * 6 + ["b"] * 6
    assert state["peak"] == 2
