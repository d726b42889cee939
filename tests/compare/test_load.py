"""compare's load sweep (DESIGN, Round 4 "Load"): levels, copies, crossed streams, summaries.

Each test talks to a real server on loopback: a counting server that answers as a demo
persona, a ScriptedServer, or the DemoServer's `crossed-streams` persona.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import pandas as pd
import pytest
from load_servers import CountingServer, compare_threads

from rig_nb.compare import Endpoint, Scenario, compare, summarize
from rig_nb.demo import DemoServer
from rig_nb.load import LOAD_SUMMARY_COLUMNS, crossed_copy, load_levels
from rig_nb.testing import LoopbackServer, RecordedRequest, Response
from rig_nb.trace import Iteration, ToolCallRecord, Trace

PLAIN = Scenario("plain", prompt="What is the capital of France?")
NONCE = re.compile(r"nonce-[0-9a-f]{12}$")


def _prompts(server: LoopbackServer) -> list[str]:
    return [r.json["messages"][-1]["content"] for r in server.requests]


@pytest.mark.parametrize(
    "load",
    [
        pytest.param(0, id="zero"),
        pytest.param(-1, id="negative"),
        pytest.param(True, id="bool"),
        pytest.param("4", id="string"),
        pytest.param((), id="empty-tuple"),
        pytest.param([], id="empty-list"),
        pytest.param((1, 0), id="a-zero-level"),
        pytest.param((2, True), id="a-bool-level"),
        pytest.param(2.0, id="float"),
        pytest.param((1, "4"), id="a-string-level"),
        pytest.param(None, id="none"),
    ],
)
def test_a_load_that_is_not_positive_ints_is_a_value_error_before_any_request(load: Any) -> None:
    with CountingServer() as server:
        with pytest.raises(ValueError, match="load"):
            compare([Endpoint("e", server.base_url, "m")], scenarios=[PLAIN], load=load)
        assert server.count == 0


def test_a_bare_int_is_one_level() -> None:
    assert load_levels(4) == (4,)
    assert load_levels([1, 4, 16]) == (1, 4, 16)


def test_levels_run_in_order_as_copies_that_start_together_and_alone() -> None:
    # Each request of the level-3 groups waits for two more: copies that did not start
    # together would break the barrier and get a 500.
    barrier = threading.Barrier(3)

    def hook(request: RecordedRequest, n: int) -> Response | None:
        if n < 2:  # level 1: two scenarios, one copy each, alone
            return None
        try:
            barrier.wait(timeout=10)
        except threading.BrokenBarrierError:
            return Response({"error": {"message": "copies did not start together"}}, status=500)
        return None

    scenarios = [PLAIN, Scenario("json", prompt="Give the capital of France as JSON.")]
    with CountingServer(hook) as server:
        df = compare(
            [Endpoint("e", server.base_url, "m")],
            scenarios=scenarios,
            load=(1, 3),
            concurrency=16,
            progress=False,
        )
        assert server.peak == 3  # nothing else of the endpoint beside a group
    assert len(df) == 2 + 6
    assert list(df["load"]) == [1, 1, 3, 3, 3, 3, 3, 3]
    assert list(df["copy"]) == [0, 0, 0, 1, 2, 0, 1, 2]
    assert list(df["scenario"]) == ["plain", "json", *["plain"] * 3, *["json"] * 3]
    assert set(df["outcome"]) == {"ok"}
    assert df["load"].dtype == int and df["copy"].dtype == int
    assert not compare_threads()  # none left running after compare returns


def test_every_copy_prompt_ends_with_its_own_nonce() -> None:
    with CountingServer() as server:
        compare([Endpoint("e", server.base_url, "m")], scenarios=[PLAIN], load=(2, 4))
        prompts = _prompts(server)
    assert len(prompts) == 6
    nonces = [NONCE.search(p) for p in prompts]
    assert all(nonces)
    assert len({m.group() for m in nonces if m}) == 6
    assert all(p.startswith(PLAIN.prompt) for p in prompts)


def test_the_plain_compare_sends_the_prompt_unchanged_and_keeps_its_summary() -> None:
    with CountingServer() as server:
        df = compare([Endpoint("e", server.base_url, "m")], scenarios=[PLAIN], repeats=2)
        assert _prompts(server) == [PLAIN.prompt] * 2
    assert list(df["load"]) == [1, 1] and list(df["copy"]) == [0, 0]
    assert list(summarize(df).columns) == ["e"]


def test_crossed_streams_are_caught_only_under_load(demo: DemoServer) -> None:
    df = compare([Endpoint("d", demo.base_url, "crossed-streams")], scenarios=[PLAIN], load=(1, 4))
    alone, loaded = df[df["load"] == 1], df[df["load"] == 4]
    assert list(alone["outcome"]) == ["ok"]
    crossed = loaded[loaded["outcome"] == "crossed_stream"]
    assert len(crossed) >= 2
    assert all("nonce" in e for e in crossed["error"])


def test_a_well_behaved_server_under_load_is_not_crossed(demo: DemoServer) -> None:
    df = compare([Endpoint("d", demo.base_url, "well-behaved")], scenarios=[PLAIN], load=4)
    assert list(df["outcome"]) == ["ok"] * 4


def test_crossed_copy_looks_at_what_came_back_not_at_what_was_sent() -> None:
    markers = ["nonce-aaaa", "nonce-bbbb", "nonce-cccc"]
    sent = Iteration(index=0, messages=[{"role": "user", "content": "nonce-bbbb"}])
    assert crossed_copy(Trace(iterations=[sent]), "nonce-aaaa", markers) is None
    said = Iteration(index=0, raw_content="done (ref nonce-cccc)")
    assert crossed_copy(Trace(iterations=[said]), "nonce-aaaa", markers) == 2
    own = Iteration(index=0, raw_content="done (ref nonce-aaaa)")
    assert crossed_copy(Trace(iterations=[own]), "nonce-aaaa", markers) is None
    called = Iteration(index=0)
    called.tool_calls.append(ToolCallRecord(id="c", name="ping", arguments='{"ref": "nonce-bbbb"}'))
    assert crossed_copy(Trace(iterations=[called]), "nonce-aaaa", markers) == 1
    assert crossed_copy(None, "nonce-aaaa", markers) is None


def test_summarize_a_sweep_one_row_per_endpoint_scenario_and_load() -> None:
    with CountingServer() as server:
        df = compare(
            [Endpoint("a", server.base_url, "m"), Endpoint("b", server.base_url, "m")],
            scenarios=[PLAIN],
            load=(1, 3),
            repeats=2,
        )
    table = summarize(df)
    assert list(table.columns) == LOAD_SUMMARY_COLUMNS
    assert [(r.endpoint, r.load) for r in table.itertuples()] == [
        ("a", 1),
        ("a", 3),
        ("b", 1),
        ("b", 3),
    ]
    assert list(table["runs"]) == [2, 6, 2, 6] and list(table["ok"]) == [2, 6, 2, 6]
    cell = df[(df["endpoint"] == "a") & (df["load"] == 3)]
    row = table.iloc[1]
    assert row["p50_latency_s"] == pytest.approx(cell["latency_s"].median())
    assert row["p95_latency_s"] == pytest.approx(cell["latency_s"].quantile(0.95))
    assert pd.isna(row["p50_ttft_s"])  # not streamed
    wall = df.attrs["load_walls"][("a", "plain", 3)]
    assert wall >= cell["latency_s"].max()
    tokens = int(cell["completion_tokens"].sum())
    assert tokens > 0
    assert row["output_tokens_per_s"] == pytest.approx(tokens / wall)


def test_summarize_streamed_sweep_has_ttft(demo: DemoServer) -> None:
    df = compare(
        [Endpoint("d", demo.base_url, "well-behaved")], scenarios=[PLAIN], load=2, stream=True
    )
    table = summarize(df)
    assert table.iloc[0]["p50_ttft_s"] == pytest.approx(df["ttft_s"].median())
    assert table.iloc[0]["p50_ttft_s"] > 0


def test_one_copys_failure_fails_only_that_copy() -> None:
    doomed: list[str] = []

    def hook(request: RecordedRequest, n: int) -> Response | None:
        marker = NONCE.search(request.json["messages"][-1]["content"])
        assert marker is not None
        if n == 2:
            doomed.append(marker.group())
        if marker.group() in doomed:
            return Response({"error": {"message": "one copy fails"}}, status=500)
        return None

    with CountingServer(hook) as server:
        df = compare([Endpoint("e", server.base_url, "m")], scenarios=[PLAIN], load=4)
        # The 500 is retried (max_retries 2): that copy's retries, nobody else's.
        assert server.count == 4 + 2
    outcomes = list(df["outcome"])
    assert outcomes.count("ok") == 3
    failed = df[df["outcome"] != "ok"].iloc[0]
    assert failed["outcome"] == "BackendError" and "500" in failed["error"]


def test_a_429_is_that_rows_error_and_retry_after_never_passes_the_deadline() -> None:
    def hook(request: RecordedRequest, n: int) -> Response | None:
        if n == 1:
            return Response(
                {"error": {"message": "slow down"}}, status=429, headers={"Retry-After": "3600"}
            )
        return None

    with CountingServer(hook) as server:
        df = compare([Endpoint("e", server.base_url, "m")], scenarios=[PLAIN], load=3, deadline=3.0)
    failed = df[df["outcome"] != "ok"]
    assert len(failed) == 1 and list(df["outcome"]).count("ok") == 2
    row = failed.index[0]
    exc = df.attrs["traces"][row].exception
    assert exc.kind == "http" and exc.status_code == 429
    assert "429" in failed.iloc[0]["error"]
    assert failed.iloc[0]["latency_s"] < 3.0
