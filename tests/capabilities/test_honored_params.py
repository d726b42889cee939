"""Doctor check `honored_params` (DESIGN, Round 5 "What servers ignore"): six requests, each
the baseline with one parameter changed; each parameter honored, ignored or rejected.

The demo's personas play the servers of the public reports (ollama#17921, sglang#37157,
ollama#18575, mlx-vlm#1044, a 400 on `stop`); scripted servers play what no persona does
(a model that never calls, an endpoint that refuses everything, a garbage reply).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from rig_nb import Client
from rig_nb.capabilities import CHECKS, endpoint_report
from rig_nb.capabilities.honored import HONORED_PARAMS, HONORED_TOOLS
from rig_nb.capabilities.report import verdict_ok
from rig_nb.demo import DemoServer
from rig_nb.testing import RecordedRequest, Response, ScriptedServer, chat_reply, tool_call

KEY = "sk-honored-secret-0123456789"
MODEL_ROUTES = ("/chat/completions", "/responses", "/messages", "/api/chat")


def _model_requests(requests: list[RecordedRequest]) -> list[RecordedRequest]:
    return [r for r in requests if r.method == "POST" and r.path.endswith(MODEL_ROUTES)]


def _doctor(model: str, api: str) -> tuple[Any, list[RecordedRequest]]:
    # A demo of its own: requests are counted at the server.
    with DemoServer(stream_first_delay=0, stream_interval=0) as demo:
        with Client(demo.base_url, api=api) as client:
            report = endpoint_report(client, model, checks=["honored_params"])
        return report, _model_requests(list(demo.requests))


ALL_HONORED = "all honored"
TOOL_CHOICE = "ignored: tool_choice=none, tool_choice=named, tool_choice=required"
NO_STOP, NO_PARALLEL = "; n/a: stop", "; n/a: parallel_tool_calls=false"
VERDICTS = [
    ("well-behaved", "chat", ALL_HONORED, True),
    ("well-behaved", "messages", ALL_HONORED, True),
    ("well-behaved", "responses", "all honored; n/a: stop", True),
    ("well-behaved", "ollama", "all honored; n/a: parallel_tool_calls=false", True),
    ("ollama-ignores-tool-choice", "chat", TOOL_CHOICE, False),
    ("ollama-ignores-tool-choice", "messages", TOOL_CHOICE, False),
    # /api/chat has no tool_choice: rig_nb offers no tool for none and only the named one,
    # so only "required" is left to the server, which ignores it.
    (
        "ollama-ignores-tool-choice",
        "ollama",
        "ignored: tool_choice=required; n/a: parallel_tool_calls=false",
        False,
    ),
    ("sglang-ignores-parallel", "chat", "ignored: parallel_tool_calls=false", False),
    ("sglang-ignores-parallel", "messages", "ignored: parallel_tool_calls=false", False),
    ("sglang-ignores-parallel", "responses", "ignored: parallel_tool_calls=false" + NO_STOP, False),
    ("ignores-limits", "chat", "ignored: max_tokens, stop", False),
    ("ignores-limits", "messages", "ignored: max_tokens, stop", False),
    ("ignores-limits", "ollama", "ignored: max_tokens, stop" + NO_PARALLEL, False),
    ("rejects-stop", "chat", "rejected 400: stop", False),
    ("rejects-stop", "messages", "rejected 400: stop", False),
    ("rejects-stop", "responses", "all honored; n/a: stop", True),
]


@pytest.mark.parametrize(
    ("model", "api", "verdict", "ok"),
    [pytest.param(*row, id=f"{row[0]}-{row[1]}") for row in VERDICTS],
)
def test_each_persona_shows_what_its_server_ignores(
    model: str, api: str, verdict: str, ok: bool
) -> None:
    report, sent = _doctor(model, api)
    check = report.check("honored_params")
    assert check.verdict == verdict
    assert check.ok is ok and report.ok is ok
    n_a = verdict.count("n/a")
    # Six at most, counted at the server; a parameter the wire has no field for is not sent.
    assert len(sent) == report.requests == CHECKS["honored_params"] - n_a <= 6
    # Evidence names every parameter with its own verdict.
    for param in HONORED_PARAMS:
        assert f"{param} " in check.evidence
    assert check.trace is not None


def test_every_parameter_changes_one_thing_of_the_baseline() -> None:
    _, sent = _doctor("well-behaved", "chat")
    bodies = [json.loads(r.body) for r in sent]
    assert [b.get("tool_choice") for b in bodies[:3]] == [
        "none",
        {"type": "function", "function": {"name": HONORED_TOOLS[1].name}},
        "required",
    ]
    assert [t["function"]["name"] for t in bodies[1]["tools"]] == [t.name for t in HONORED_TOOLS]
    assert bodies[3]["parallel_tool_calls"] is False and bodies[3]["tool_choice"] == "auto"
    assert bodies[4]["max_tokens"] == 16 and "tools" not in bodies[4]
    assert bodies[5]["stop"] == ["gamma"] and "tools" not in bodies[5]
    assert not any("parallel_tool_calls" in b for b in bodies[:3] + bodies[4:])
    assert not any("stop" in b for b in bodies[:5])


def test_the_same_parameters_go_out_in_the_messages_fields() -> None:
    _, sent = _doctor("well-behaved", "messages")
    bodies = [json.loads(r.body) for r in sent]
    assert bodies[1]["tool_choice"] == {"type": "tool", "name": HONORED_TOOLS[1].name}
    assert bodies[3]["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert bodies[5]["stop_sequences"] == ["gamma"] and "stop" not in bodies[5]


@pytest.mark.parametrize(
    ("model", "cites"),
    [
        pytest.param("ollama-ignores-tool-choice", "ollama/ollama#17921", id="ollama"),
        pytest.param("sglang-ignores-parallel", "sgl-project/sglang#37157", id="sglang"),
        pytest.param("ignores-limits", "cut the answer at the stop string", id="generic"),
        pytest.param("rejects-stop", "leave it out", id="rejected"),
    ],
)
def test_advice_comes_from_the_server_profile(model: str, cites: str) -> None:
    report, _ = _doctor(model, "chat")
    assert cites in report.check("honored_params").advice


def test_a_well_behaved_server_gets_no_advice() -> None:
    report, _ = _doctor("well-behaved", "chat")
    assert report.check("honored_params").advice == ""
    assert "stop honored" in report.check("honored_params").evidence


def test_a_refusal_shows_the_servers_words() -> None:
    report, _ = _doctor("rejects-stop", "chat")
    assert "'stop' is not supported" in report.check("honored_params").evidence


def _never_calls(request: RecordedRequest) -> Response | dict[str, Any]:
    """A model that answers every request in text, within its budget, without a stop."""
    if request.method == "GET":
        return Response({"data": [{"id": "m", "owned_by": "someone"}]})
    return chat_reply("I would rather talk.", usage={"prompt_tokens": 9, "completion_tokens": 4})


def test_a_model_that_never_calls_is_not_counted_for_the_server() -> None:
    with ScriptedServer([_never_calls] * 10) as server, Client(server.base_url, KEY) as client:
        report = endpoint_report(client, "m", checks=["honored_params"])
    check = report.check("honored_params")
    # No request brought a call back (no tool-call parser): "no call" says nothing of
    # tool_choice, nor of the named tool or the lone call; the answer never listed the words.
    assert check.verdict == (
        "unclear: tool_choice=none, tool_choice=named, tool_choice=required, "
        "parallel_tool_calls=false, stop"
    )
    assert "tool_choice=required unclear (finish stop, no tool call)" in check.evidence
    assert "no request brought a tool call back" in check.evidence
    assert "max_tokens honored" in check.evidence
    assert check.ok is None and check.advice == ""


def _calls_only_when_free(request: RecordedRequest) -> Response | dict[str, Any]:
    """Calls a tool on "auto" (or a named one), answers in text to "required"."""
    if request.method == "GET":
        return Response({"data": [{"id": "m", "owned_by": "someone"}]})
    body = request.json or {}
    if body.get("tools") and body.get("tool_choice") != "required":
        name = "get_time" if isinstance(body.get("tool_choice"), dict) else "get_weather"
        return chat_reply(None, tool_calls=[tool_call(name, {"city": "Paris"})])
    return chat_reply("hello", usage={"prompt_tokens": 9, "completion_tokens": 1})


def test_required_answered_in_text_is_ignored_when_the_server_makes_calls() -> None:
    with ScriptedServer([_calls_only_when_free] * 10) as server:
        with Client(server.base_url) as client:
            report = endpoint_report(client, "m", checks=["honored_params"])
    check = report.check("honored_params")
    assert check.verdict == "ignored: tool_choice=none, tool_choice=required; unclear: stop"
    assert "ask for the call in the prompt" in check.advice


def _calls_the_other(request: RecordedRequest) -> Response | dict[str, Any]:
    if request.method == "GET":
        return Response({"data": [{"id": "m", "owned_by": "vllm"}]})
    body = request.json or {}
    if body.get("tools"):
        return chat_reply(None, tool_calls=[tool_call("get_weather", {"city": "Paris"})])
    return chat_reply("alpha\nbeta\n", usage={"prompt_tokens": 9, "completion_tokens": 3})


def test_a_named_tool_passed_over_is_ignored_with_the_kinds_advice() -> None:
    with ScriptedServer([_calls_the_other] * 10) as server, Client(server.base_url) as client:
        report = endpoint_report(client, "m", checks=["honored_params"])
    check = report.check("honored_params")
    assert check.verdict == "ignored: tool_choice=none, tool_choice=named"
    assert report.server == "vllm" and "vllm-project/vllm#49661" in check.advice
    assert "called get_weather" in check.evidence


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        pytest.param(Response({"error": {"message": "busy"}}, 503), "error 503", id="503"),
        pytest.param(Response({"error": {"message": "no key"}}, 401), "error 401", id="401"),
        pytest.param(Response(b"<html>not json</html>"), "error reply", id="garbage"),
    ],
)
def test_an_endpoint_that_does_not_answer_gets_one_request(answer: Response, verdict: str) -> None:
    def serve(request: RecordedRequest) -> Response:
        if request.method == "GET":
            return Response({"data": [{"id": "m", "owned_by": "someone"}]})
        return answer

    with ScriptedServer([serve] * 10) as server:
        with Client(server.base_url, KEY, max_retries=0) as client:
            report = endpoint_report(client, "m", checks=["honored_params"])
        sent = _model_requests(list(server.requests))
    check = report.check("honored_params")
    assert check.verdict == verdict and check.advice == ""
    assert len(sent) == report.requests == 1
    assert check.ok is None  # nothing was judged
    assert KEY not in check.evidence


def test_a_baseline_refused_every_time_is_not_six_refused_parameters() -> None:
    def serve(request: RecordedRequest) -> Response:
        if request.method == "GET":
            return Response({"data": [{"id": "m", "owned_by": "someone"}]})
        return Response({"error": {"message": f"bad request, key {KEY}"}}, 400)

    with ScriptedServer([serve] * 10) as server:
        with Client(server.base_url, KEY, max_retries=0) as client:
            report = endpoint_report(client, "m", checks=["honored_params"])
    check = report.check("honored_params")
    assert check.verdict == "error 400" and check.advice == ""
    assert report.requests == 6
    assert KEY not in check.evidence and "bad request" in check.evidence


def test_evidence_is_cut_per_parameter() -> None:
    long = "x" * 5000

    def serve(request: RecordedRequest) -> Response | dict[str, Any]:
        if request.method == "GET":
            return Response({"data": [{"id": "m", "owned_by": "someone"}]})
        if (request.json or {}).get("stop"):
            return Response({"error": {"message": long}}, 400)
        return chat_reply(None, tool_calls=[tool_call("get_time", {"city": "Paris"})])

    with ScriptedServer([serve] * 10) as server, Client(server.base_url) as client:
        report = endpoint_report(client, "m", checks=["honored_params"])
    check = report.check("honored_params")
    assert check.verdict.startswith("ignored: tool_choice=none; rejected 400: stop")
    assert len(check.evidence) < 6 * 130
    assert "x" * 100 not in check.evidence


@pytest.mark.parametrize(
    ("verdict", "ok"),
    [
        ("all honored", True),
        ("all honored; n/a: stop", True),
        ("ignored: stop", False),
        ("rejected 400: stop", False),
        ("unclear: tool_choice=named", None),
        ("error 503", None),
        ("cancelled", None),
    ],
)
def test_which_verdicts_are_bad_news(verdict: str, ok: bool | None) -> None:
    assert verdict_ok("honored_params", verdict) is ok
