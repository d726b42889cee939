"""The doctor's `api_parity` check: the probe and the question over both wires (issue 22)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from rig_nb import Client
from rig_nb.capabilities import CHECKS, endpoint_report
from rig_nb.demo import DemoServer
from rig_nb.testing import RecordedRequest, Response, ScriptedServer, as_response, chat_reply
from rig_nb.testing import tool_call as make_call

CALL = chat_reply(None, tool_calls=[make_call("ping", {"message": "hello"})])


def _chat(request: RecordedRequest) -> dict[str, Any]:
    """The chat route's answer: the call to the probe, "Paris." to the question."""
    return CALL if '"tools"' in request.body.decode() else chat_reply("Paris.")


def _by_path(responses: Callable[[RecordedRequest], Response | Mapping[str, Any]]) -> Any:
    def serve(request: RecordedRequest) -> Response | Mapping[str, Any]:
        if request.path.endswith("/models"):
            return {"object": "list", "data": [{"id": "m", "object": "model"}]}
        if request.path.endswith("/responses"):
            return responses(request)
        if request.path.endswith("/api/chat"):  # a server without Ollama's native API
            return Response("404 page not found", 404)
        return _chat(request)

    return serve


def _parity(responses: Callable[[RecordedRequest], Response | Mapping[str, Any]]) -> Any:
    with ScriptedServer() as server:
        server.push(*[_by_path(responses)] * 40)
        with Client(server.base_url, max_retries=0) as client:
            report = endpoint_report(client, "m", stream=False)
    assert [c.name for c in report.checks][-1] == "api_parity"
    return report.check("api_parity")


def test_api_parity_is_a_check_name() -> None:
    assert list(CHECKS)[-1] == "api_parity"


def test_the_demo_is_the_same_over_both_wires(demo: DemoServer) -> None:
    with Client(demo.base_url) as client:
        report = endpoint_report(client, "well-behaved", stream=False)
    check = report.check("api_parity")
    assert check.verdict == "same" and check.advice == ""
    assert check.trace is not None and check.trace.settings.get("kind") == "question"


@pytest.mark.parametrize("status", [404, 405, 501])
def test_a_server_without_the_route_is_responses_unsupported(status: int) -> None:
    check = _parity(lambda r: Response({"error": {"message": "not found"}}, status))
    # The other wires the scripted server answers are the same: only responses is missing.
    assert f"responses unsupported ({status})" in check.verdict.split("; ")
    assert "differs" not in check.verdict
    assert "/v1/responses" in check.advice


def test_a_server_without_api_chat_is_ollama_unsupported() -> None:
    check = _parity(lambda r: as_response(_chat(r)))
    assert "ollama unsupported (404)" in check.verdict.split("; ")
    assert "/api/chat" in check.advice and 'keep api="chat"' in check.advice


def test_a_route_that_loses_the_call_differs() -> None:
    def text_only(request: RecordedRequest) -> Response:
        return as_response(chat_reply("I would call ping."))

    check = _parity(text_only)
    assert check.verdict.startswith("differs: ")
    assert "probe: ends tool_calls over chat, answer over responses" in check.verdict
    assert check.advice


def test_a_route_that_fails_alone_differs() -> None:
    check = _parity(lambda r: Response({"error": {"message": "boom"}}, 500))
    assert "question: fails only over responses (HTTP 500)" in check.verdict
