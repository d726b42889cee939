"""Ctrl-C during compare (DESIGN, Round 3 "Truthful results"; Round 4 "Load"): it stops within
1 s, no request is sent after the interrupt, queued runs are cancelled, and the finished rows
are kept on `exc.frame`; agentic runs, a tool's KeyboardInterrupt and a load level alike.

Requests are counted on a loopback server that answers as the well-behaved persona; held
requests wait on events, and compare's own threads are joined by name before counting.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

import pytest
from load_servers import CountingServer, compare_threads

from rig_nb import Tool
from rig_nb.compare import ADD_TOOL, Endpoint, Scenario, compare
from rig_nb.testing import RecordedRequest, Response


def _join_compare_threads() -> None:
    for thread in compare_threads():
        thread.join(timeout=30)
    assert not compare_threads()


def _first_of_a_run(request: RecordedRequest) -> bool:
    return not any(m.get("role") == "tool" for m in request.json["messages"])


class Holding:
    """A hook that lets the first two runs through and holds every other run's first
    request until `release` is set."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.held = 0
        self.state = threading.Condition()
        self.firsts = 0

    def __call__(self, request: RecordedRequest, n: int) -> Response | None:
        if not _first_of_a_run(request):
            return None
        with self.state:
            self.firsts += 1
            if self.firsts <= 2:
                return None
            self.held += 1
            self.state.notify_all()
        self.release.wait(30)
        return None

    def wait_held(self, count: int) -> None:
        with self.state:
            assert self.state.wait_for(lambda: self.held >= count, timeout=20)


def test_ctrl_c_during_an_agentic_compare_sends_nothing_after_it() -> None:
    holding = Holding()
    with CountingServer(holding) as server:
        at_interrupt: list[tuple[float, int]] = []

        def progress(done: int, total: int) -> None:
            if done == 2:
                # The first run ran alone (an endpoint's first run opens it), then four at
                # once: one finished, three are held at their first request. Their next
                # requests must never be sent.
                holding.wait_held(3)
                at_interrupt.append((time.perf_counter(), server.count))
                raise KeyboardInterrupt

        endpoint = Endpoint("e", server.base_url, "m")
        try:
            with pytest.raises(KeyboardInterrupt) as caught:
                compare(
                    [endpoint],
                    scenarios=[Scenario.agentic()],
                    repeats=8,
                    concurrency=4,
                    progress=progress,
                )
            stopped = time.perf_counter()
        finally:
            holding.release.set()
        _join_compare_threads()
        interrupted, sent = at_interrupt[0]
        assert stopped - interrupted < 1.0
        assert server.count == sent  # the held runs got their replies and sent nothing more
        assert sent == 4 + 4 + 3  # two runs of four requests, three first requests
    frame = caught.value.frame  # type: ignore[attr-defined]
    assert list(frame["outcome"]) == ["ok", "ok"]
    assert set(frame.attrs["traces"]) == {0, 1}


def test_a_tools_keyboard_interrupt_stops_compare_and_keeps_finished_rows() -> None:
    calls = 0

    def add(args: dict[str, Any]) -> str:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise KeyboardInterrupt
        return ADD_TOOL.run(args)

    tool = Tool(ADD_TOOL.name, ADD_TOOL.description, ADD_TOOL.input_schema, add)
    scenario = Scenario(
        "add", prompt="Use the add tool to add 17 and 25.", tools=(tool,), require_tool_call=True
    )
    with CountingServer() as server:
        with pytest.raises(KeyboardInterrupt) as caught:
            compare(
                [Endpoint("e", server.base_url, "m")],
                scenarios=[scenario],
                repeats=5,
                concurrency=1,
                progress=False,
            )
        _join_compare_threads()
        # Run 1: a call and the answer; run 2: its call, whose tool raised. Runs 3-5 never sent.
        assert server.count == 3
    frame = caught.value.frame  # type: ignore[attr-defined]
    assert list(frame["outcome"]) == ["ok"]


def test_ctrl_c_during_a_load_level_stops_at_once_with_the_finished_copies() -> None:
    release = threading.Event()
    state = threading.Condition()
    held = 0

    def hook(request: RecordedRequest, n: int) -> Response | None:
        nonlocal held
        if n < 3:  # level 1 of both scenarios and one copy of level 3 answer at once
            return None
        with state:
            held += 1
            state.notify_all()
        release.wait(30)
        return None

    at_interrupt: list[float] = []

    def progress(done: int, total: int) -> None:
        if done == 3:
            with state:
                assert state.wait_for(lambda: held == 2, timeout=20)
            at_interrupt.append(time.perf_counter())
            raise KeyboardInterrupt

    scenario = Scenario("plain", prompt="What is the capital of France?")
    with CountingServer(hook) as server:
        try:
            with pytest.raises(KeyboardInterrupt) as caught:
                compare(
                    [Endpoint("e", server.base_url, "m")],
                    scenarios=[scenario, replace(scenario, name="again")],
                    load=(1, 3),
                    progress=progress,
                )
            stopped = time.perf_counter()
        finally:
            release.set()
        _join_compare_threads()
        assert stopped - at_interrupt[0] < 1.0
        assert server.count == 5  # level 3 of "again": never sent
    frame = caught.value.frame  # type: ignore[attr-defined]
    assert [(r.scenario, r.load, r.outcome) for r in frame.itertuples()] == [
        ("plain", 1, "ok"),
        ("again", 1, "ok"),
        ("plain", 3, "ok"),
    ]
    assert frame["copy"].iloc[2] in (0, 1, 2)  # whichever copy was answered first


def test_compare_threads_end_with_compare() -> None:
    with CountingServer() as server:
        df = compare(
            [Endpoint("e", server.base_url, "m")],
            scenarios=[Scenario("p", prompt="Capital of France?")],
            load=(1, 8),
        )
    assert len(df) == 9
    assert not compare_threads()
