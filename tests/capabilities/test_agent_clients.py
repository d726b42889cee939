"""The doctor's `agent_clients` check: each agent client's short tool run, per persona."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest
from doctor_fakes import KEY

from rig_nb import Client
from rig_nb.capabilities import CHECKS, endpoint_report
from rig_nb.capabilities.report import verdict_ok
from rig_nb.clients import CLIENTS
from rig_nb.demo import DemoServer
from rig_nb.servers import SERVERS
from rig_nb.testing import LoopbackServer, RecordedRequest, Response


@pytest.fixture
def demo() -> Iterator[DemoServer]:
    with DemoServer(stream_first_delay=0, stream_interval=0) as srv:
        yield srv


def _posts(demo: DemoServer) -> list[RecordedRequest]:
    return [r for r in demo.requests if r.method == "POST"]


def test_its_budget_is_two_requests_a_client() -> None:
    assert CHECKS["agent_clients"] == 2 * len(CLIENTS) == 6


@pytest.mark.parametrize(
    ("model", "verdict", "ok", "requests"),
    [
        pytest.param("well-behaved", "claude-code ok; codex ok; opencode ok", True, 6, id="ok"),
        pytest.param(
            "custom-tool-rejecting",
            "claude-code ok; codex error 400; opencode ok",
            False,
            5,
            id="custom-tool",
        ),
        pytest.param(
            "system-turn-rejecting",
            "claude-code error 400; codex ok; opencode ok",
            False,
            5,
            id="system-turn",
        ),
        pytest.param(
            "tool-spinner",
            "claude-code IterationLimitError; codex IterationLimitError; "
            "opencode IterationLimitError",
            False,
            6,
            id="spinner",
        ),
        pytest.param(
            "hermes-text-tools",
            "claude-code text_tool_calls; codex text_tool_calls; opencode text_tool_calls",
            False,
            3,
            id="text-calls",
        ),
    ],
)
def test_the_verdict_per_persona(
    demo: DemoServer, model: str, verdict: str, ok: bool, requests: int
) -> None:
    with Client(demo.base_url) as client:
        report = endpoint_report(client, model, checks=["agent_clients"])
    check = report.check("agent_clients")
    assert (check.verdict, check.ok, report.requests) == (verdict, ok, requests)
    assert len(_posts(demo)) == requests <= CHECKS["agent_clients"]
    # Each client's requests went to its own wire's route.
    routes = {r.path for r in _posts(demo)}
    assert routes == {"/v1/messages", "/v1/responses", "/v1/chat/completions"}
    assert [part.split(":")[0] for part in check.evidence.split("; ")] == list(CLIENTS)
    assert check.trace is not None


def test_a_refused_custom_tool_names_llama_servers_words_and_fix(demo: DemoServer) -> None:
    with Client(demo.base_url) as client:
        report = endpoint_report(client, "custom-tool-rejecting", checks=["agent_clients"])
    check = report.check("agent_clients")
    assert report.server == "llama.cpp"
    assert "codex: HTTP 400: 'type' of tool must be 'function'" in check.evidence
    assert "claude-code: ended answer after 2 requests" in check.evidence
    assert check.advice == SERVERS["llama.cpp"].advice("agent_clients", "codex")
    assert "ggml-org/llama.cpp#23041" in check.advice
    assert check.trace is not None and check.trace.client == "codex"  # the failed run


def test_a_refused_system_turn_names_vllms_words_and_fix(demo: DemoServer) -> None:
    with Client(demo.base_url) as client:
        report = endpoint_report(client, "system-turn-rejecting", checks=["agent_clients"])
    check = report.check("agent_clients")
    assert report.server == "vllm"
    assert "Input should be 'user' or 'assistant'" in check.evidence
    assert "('body', 'messages', 1, 'role')" in check.evidence
    assert "vllm-project/vllm#44000" in check.advice and "0.23" in check.advice
    assert check.trace is not None and check.trace.client == "claude-code"


def test_clients_that_stream_are_not_checked_in_an_unstreamed_report(demo: DemoServer) -> None:
    with Client(demo.base_url) as client:
        report = endpoint_report(client, "well-behaved", checks=["agent_clients"], stream=False)
    check = report.check("agent_clients")
    assert check.verdict == "claude-code not checked; codex ok; opencode not checked"
    assert check.ok is True
    assert not any(r.json.get("stream") for r in _posts(demo))
    assert report.requests == 2


class _Proxy(LoopbackServer):
    """The demo behind one route answered otherwise: `routes` maps a path to its answer."""

    def __init__(self, demo: DemoServer, routes: Mapping[str, Response]) -> None:
        super().__init__()
        self.demo, self.routes = demo, routes

    def handle(self, request: RecordedRequest) -> Response | Mapping[str, Any]:
        if request.path in self.routes:
            return self.routes[request.path]
        url = self.demo.origin + request.path
        sent = httpx.request(request.method, url, content=request.body, timeout=30)
        kept = {"content-type": sent.headers.get("content-type", "application/json")}
        return Response(sent.content, sent.status_code, kept)


@pytest.mark.parametrize(
    ("answer", "codex"),
    [
        pytest.param(Response(b"\x00garbage{", 200), "BackendError", id="garbage"),
        pytest.param(
            Response({"error": {"message": f"bad key {KEY} for this tool list"}}, 400),
            "error 400",
            id="refused",
        ),
    ],
)
def test_one_client_answered_badly_leaves_the_others_alone(
    demo: DemoServer, answer: Response, codex: str
) -> None:
    with _Proxy(demo, {"/v1/responses": answer}) as proxy:
        with Client(proxy.base_url, KEY) as client:
            report = endpoint_report(client, "well-behaved", checks=["agent_clients"])
    check = report.check("agent_clients")
    assert check.verdict == f"claude-code ok; codex {codex}; opencode ok"
    assert check.ok is False
    assert KEY not in check.evidence and KEY not in check.verdict
    assert "codex: " in check.evidence


def test_a_wire_not_answered_is_not_applicable(demo: DemoServer) -> None:
    missing = Response({"error": {"message": "not found"}}, 404)
    with _Proxy(demo, {"/v1/messages": missing, "/v1/responses": missing}) as proxy:
        with Client(proxy.base_url) as client:
            report = endpoint_report(client, "well-behaved", checks=["agent_clients"])
    check = report.check("agent_clients")
    assert check.verdict == "claude-code n/a; codex n/a; opencode ok"
    assert check.ok is True and check.advice == ""
    assert report.requests == 1 + 1 + 2


@pytest.mark.parametrize(
    ("verdict", "ok"),
    [
        pytest.param("claude-code ok; codex ok; opencode ok", True, id="all-ok"),
        pytest.param("claude-code ok; codex error 400; opencode ok", False, id="one-error"),
        pytest.param("claude-code n/a; codex n/a; opencode n/a", None, id="none-ran"),
        pytest.param("claude-code not checked; codex n/a; opencode not checked", None, id="unrun"),
        pytest.param("claude-code not checked; codex ok; opencode n/a", True, id="one-ran"),
    ],
)
def test_the_verdict_is_good_news_only_when_every_client_that_ran_ended_ok(
    verdict: str, ok: bool | None
) -> None:
    assert verdict_ok("agent_clients", verdict) is ok


@pytest.mark.parametrize("name", list(CLIENTS))
def test_the_base_profile_has_advice_for_each_client(name: str) -> None:
    said = SERVERS["unknown"].advice("agent_clients", name)
    assert said and any(source in said for source in CLIENTS[name].sources)
