"""Doctor check `concurrency` (DESIGN, Round 4 "Load"): four probes at once against the lone
"auto" probe; parallel, serialized, errors under load, crossed; the server kind's advice.

Loopback servers play the server's work as a fixed hold per tool-call probe (one request at a
time under a lock for a server started with one slot); the verdict's words are tested over
a table of measured values, where no clock is involved.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

from rig_nb import Client
from rig_nb.capabilities import endpoint_report
from rig_nb.capabilities.concurrency import concurrency_verdict
from rig_nb.demo import DemoServer
from rig_nb.demo.personas import WellBehaved
from rig_nb.testing import LoopbackServer, RecordedRequest, Response

# The time one tool-call probe "decodes" on the loopback servers below.
HOLD_S = 0.3


@pytest.mark.parametrize(
    ("lone", "wall", "failures", "crossed", "verdict"),
    [
        pytest.param(1.0, 1.2, [], False, "parallel (1.2x)", id="parallel"),
        pytest.param(1.0, 2.5, [], False, "partly parallel (2.5x)", id="partly"),
        pytest.param(1.0, 1.96, [], False, "partly parallel (2.0x)", id="rounded-first"),
        pytest.param(1.0, 4.04, [], False, "serialized (4.0x)", id="serialized"),
        pytest.param(1.0, 3.0, [], False, "serialized (3.0x)", id="three-is-serialized"),
        pytest.param(0.001, 0.004, [], False, "parallel (0.1x)", id="instant-is-noise"),
        pytest.param(1.0, 1.0, ["429", "429"], False, "errors under load: 429 x2", id="429"),
        pytest.param(
            1.0,
            1.0,
            ["429", "timeout", "429"],
            False,
            "errors under load: 429 x2, timeout x1",
            id="mixed",
        ),
        pytest.param(1.0, 9.0, ["500"], True, "crossed", id="crossed-wins"),
    ],
)
def test_the_verdict_words(
    lone: float, wall: float, failures: list[str], crossed: bool, verdict: str
) -> None:
    assert concurrency_verdict(lone, wall, failures, crossed) == verdict


class SlotServer(LoopbackServer):
    """Answers as the well-behaved persona, listed as `owned_by`; a tool-call probe takes
    HOLD_S, `slots` of them at a time. `hook(request)` may answer instead."""

    def __init__(self, slots: int, owned_by: str = "llamacpp", hook: Any = None) -> None:
        super().__init__()
        self.persona = WellBehaved()
        self.slots = threading.Semaphore(slots)
        self.owned_by = owned_by
        self.hook = hook

    def handle(self, request: RecordedRequest) -> Response | Mapping[str, Any]:
        if request.method == "GET":
            return {"object": "list", "data": [{"id": "m", "owned_by": self.owned_by}]}
        body = request.json
        if self.hook is not None and (instead := self.hook(body)) is not None:
            return instead
        if any(t["function"]["name"] == "ping" for t in body.get("tools", [])):
            with self.slots:
                time.sleep(HOLD_S)  # the server's work on this request, not synchronisation
        return dict(self.persona.reply(body))


def _concurrent(server: LoopbackServer) -> list[RecordedRequest]:
    """The concurrency check's requests after its lone probe (each carries a nonce)."""
    return [r for r in server.requests if r.body and b"nonce-" in r.body][1:]


def test_a_server_with_one_slot_is_serialized_with_its_flag_named() -> None:
    with SlotServer(1) as server, Client(server.base_url) as client:
        report = endpoint_report(client, "m", stream=False)
        assert len(_concurrent(server)) == 4
    check = report.check("concurrency")
    assert report.server == "llama.cpp"
    assert check.verdict.startswith("serialized ("), check
    assert "-np" in check.advice
    assert "4 at once" in check.evidence


def test_a_server_with_four_slots_is_parallel() -> None:
    with SlotServer(4, owned_by="vllm") as server, Client(server.base_url) as client:
        report = endpoint_report(client, "m", stream=False)
    check = report.check("concurrency")
    assert check.verdict.startswith("parallel ("), check
    assert check.advice == ""


def test_429s_under_load_are_counted_and_never_retried() -> None:
    refused = 0
    lock = threading.Lock()

    def hook(body: Mapping[str, Any]) -> Response | None:
        nonlocal refused
        if "nonce-" not in body["messages"][-1]["content"]:
            return None
        with lock:
            refused += 1
            if refused == 1 or refused > 3:  # the lone probe is answered
                return None
        return Response(
            {"error": {"message": "too many"}}, status=429, headers={"Retry-After": "1"}
        )

    with SlotServer(4, owned_by="vllm", hook=hook) as server, Client(server.base_url) as client:
        report = endpoint_report(client, "m", stream=False)
        assert len(_concurrent(server)) == 4  # none retried
    check = report.check("concurrency")
    assert check.verdict == "errors under load: 429 x2"
    assert "refused requests under load" in check.advice


def test_no_lone_reply_no_concurrent_probes() -> None:
    def hook(body: Mapping[str, Any]) -> Response:
        return Response({"error": {"message": "down"}}, status=503)

    with SlotServer(4, hook=hook) as server, Client(server.base_url, max_retries=0) as client:
        report = endpoint_report(client, "m", stream=False)
        assert _concurrent(server) == []
    assert report.check("concurrency").verdict == "error 503"
    assert report.check("concurrency").advice == ""


def test_the_crossed_streams_persona_is_caught(demo: DemoServer) -> None:
    with Client(demo.base_url) as client:
        report = endpoint_report(client, "crossed-streams", stream=False)
    check = report.check("concurrency")
    assert check.verdict == "crossed"
    assert "carried probe" in check.evidence
    assert "48089" in check.advice and "--max-num-seqs 1" in check.advice
    assert check.trace is not None and check.trace.settings["kind"] == "concurrency"
    # Alone, the same persona is a clean tool caller.
    assert report.check("tool_choice_auto").verdict == "tool call"


def test_the_well_behaved_persona_is_parallel(demo: DemoServer) -> None:
    with Client(demo.base_url) as client:
        report = endpoint_report(client, "well-behaved", stream=False)
    assert report.check("concurrency").verdict.startswith("parallel (")
