"""Evaluations people trust: response_format sent as is, json_in_reasoning, the
structured_output check, pass^k and flaky cells, and the agentic request shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from shared import EVALUATION_PERSONAS

from rig_nb import Client, RunRequest
from rig_nb.agentic import AGENTIC_ANSWER, AGENTIC_STEPS, AGENTIC_SYSTEM, agentic_tools
from rig_nb.capabilities import CHECKS, endpoint_report
from rig_nb.capabilities.structured import STRUCTURED_SCHEMA, structured_output_check
from rig_nb.compare import (
    EVALUATION_SCENARIOS,
    Endpoint,
    Scenario,
    compare,
    summarize,
)
from rig_nb.demo import DemoServer
from rig_nb.demo.evaluation_personas import FlakyAnswers
from rig_nb.report import save_html
from rig_nb.testing import Response, ScriptedServer, chat_reply
from rig_nb.trace import ENDINGS
from rig_nb.widgets import CompareView

SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "answer",
        "schema": {"type": "object", "properties": {"answer": {"type": "integer"}}},
    },
}
BAD_FORMATS = [
    pytest.param("json", "must be a dict", id="not-a-dict"),
    pytest.param(["json_schema"], "must be a dict", id="a-list"),
    pytest.param({"type": "xml"}, "type must be one of", id="unknown-type"),
    pytest.param({"json_schema": {}}, "type must be one of", id="no-type"),
    pytest.param(
        {"type": "json_schema", "json_schema": {"schema": {"description": "x" * (64 * 1024)}}},
        "64 KB",
        id="over-64KB",
    ),
    pytest.param({"type": "json_schema", "x": float("nan")}, "not JSON", id="not-json"),
]


def body_of(server: ScriptedServer, n: int = 0) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(server.requests[n].body)
    return data


def test_response_format_is_sent_as_is() -> None:
    with ScriptedServer([chat_reply('{"answer": 391}')]) as server:
        with Client(server.base_url) as client:
            trace = client.run_trace(RunRequest("m", 64, prompt="17 * 23?", response_format=SCHEMA))
        assert body_of(server)["response_format"] == SCHEMA
    assert trace.outcome == "ok"
    assert trace.settings["response_format"] == SCHEMA


def test_no_response_format_sends_none() -> None:
    with ScriptedServer([chat_reply("391")]) as server:
        with Client(server.base_url) as client:
            client.run(RunRequest("m", 64, prompt="17 * 23?"))
        assert "response_format" not in body_of(server)


@pytest.mark.parametrize(("value", "says"), BAD_FORMATS)
def test_bad_response_format_is_a_value_error_before_any_request(value: Any, says: str) -> None:
    with ScriptedServer([chat_reply("never sent")]) as server:
        with Client(server.base_url) as client:
            with pytest.raises(ValueError, match=says):
                client.run(RunRequest("m", 64, prompt="hi", response_format=value))
        assert server.requests == []
        df = compare(
            [Endpoint("e", server.base_url, "m")],
            scenarios=[Scenario("bad", prompt="hi", response_format=value)],
            progress=False,
        )
        assert server.requests == []
    assert df.loc[0, "outcome"] == "ValueError" and says in df.loc[0, "error"]


def test_a_scenario_sends_its_response_format() -> None:
    with ScriptedServer([chat_reply('{"answer": 391}')]) as server:
        df = compare(
            [Endpoint("e", server.base_url, "m")],
            scenarios=[Scenario("s", prompt="17 * 23?", response_format=SCHEMA, expect_json=True)],
            progress=False,
        )
        assert body_of(server)["response_format"] == SCHEMA
    assert df.loc[0, "outcome"] == "ok"


@pytest.mark.parametrize(
    ("reply", "ending"),
    [
        pytest.param(
            chat_reply(None, reasoning='{"answer": 391}'), "json_in_reasoning", id="field"
        ),
        pytest.param(
            chat_reply("", reasoning_content='Thinking.\n{"answer": 391}'),
            "json_in_reasoning",
            id="reasoning_content",
        ),
        pytest.param(chat_reply('<think>{"answer": 391}</think>'), "json_in_reasoning", id="tags"),
        pytest.param(chat_reply(None, reasoning="just thinking"), "reasoning_only", id="prose"),
        pytest.param(chat_reply('{"answer": 391}'), "answer", id="content"),
    ],
)
def test_json_in_reasoning_is_an_ending(reply: dict[str, Any], ending: str) -> None:
    assert "json_in_reasoning" in ENDINGS
    with ScriptedServer([reply]) as server, Client(server.base_url) as client:
        trace = client.run_trace(RunRequest("m", 64, prompt="17 * 23?", response_format=SCHEMA))
    assert trace.iterations[-1].ending == ending
    assert trace.outcome == ("ok" if ending == "answer" else ending)


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        pytest.param(chat_reply('{"answer": 391}'), "content", id="content"),
        pytest.param(chat_reply(None, reasoning='{"answer": 391}'), "reasoning", id="reasoning"),
        pytest.param(chat_reply('```json\n{"answer": 391}\n```'), "ignored", id="fenced"),
        pytest.param(chat_reply("It is 391."), "ignored", id="prose"),
        pytest.param(Response({"error": {"message": "no"}}, status=400), "error 400", id="400"),
    ],
)
def test_structured_output_verdicts(reply: Any, verdict: str) -> None:
    with ScriptedServer([reply]) as server, Client(server.base_url, max_retries=0) as client:
        check = structured_output_check(client, "m", "unknown")
        assert body_of(server)["response_format"] == STRUCTURED_SCHEMA
    assert check.verdict == verdict
    assert check.trace is not None
    assert bool(check.advice) == (verdict in ("reasoning", "ignored"))


@pytest.mark.parametrize(
    ("model", "verdict"),
    [
        pytest.param("vllm-json-in-reasoning", "reasoning", id="vllm#48863"),
        pytest.param("lmstudio-json-in-reasoning", "reasoning", id="lmstudio#1773"),
        pytest.param("vllm-json-thinking-off", "content", id="vllm#47027"),
        pytest.param("schema-ignored", "ignored", id="lmstudio#2403"),
        pytest.param("well-behaved", "content", id="well-behaved"),
    ],
)
def test_the_doctor_names_each_structured_output_shape(
    demo_client: Client, model: str, verdict: str
) -> None:
    report = endpoint_report(demo_client, model)
    assert [c.name for c in report.checks] == list(CHECKS)
    check = report.check("structured_output")
    assert check.verdict == verdict, check.evidence
    if verdict == "reasoning":
        assert '"answer": 391' in check.evidence or '"answer":391' in check.evidence


def test_lm_studio_refuses_json_object(demo: DemoServer) -> None:
    with Client(demo.base_url, max_retries=0) as client:
        trace = client.run_trace(
            RunRequest(
                "lmstudio-json-in-reasoning",
                64,
                prompt="hi",
                response_format={"type": "json_object"},
            )
        )
    assert trace.outcome == "BackendError" and "400" in trace.error


def test_evaluation_personas_are_served(demo: DemoServer) -> None:
    assert set(EVALUATION_PERSONAS) <= set(demo.models)
    assert "flaky-answers" not in demo.models  # served only when asked for


def test_summarize_marks_pass_k_and_flaky_cells(tmp_path: Path) -> None:
    with DemoServer(extra_personas=[FlakyAnswers()]) as server:
        endpoints = [
            Endpoint("steady", server.base_url, "well-behaved"),
            Endpoint("flaky", server.base_url, "flaky-answers"),
            Endpoint("broken", server.base_url, "no-such-model"),
        ]
        scenarios = [Scenario("plain", prompt="What is the capital of France?")]
        df = compare(endpoints, scenarios=scenarios, repeats=3, progress=False)
    matrix = summarize(df)
    steady, flaky, broken = (matrix.loc["plain", e] for e in ("steady", "flaky", "broken"))
    assert steady.startswith("3/3 ok, pass^3, ") and "flaky" not in steady
    assert flaky.startswith("2/3 ok, flaky, ") and "pass^" not in flaky
    assert broken.startswith("0/3 ok, ") and "flaky" not in broken and "pass^" not in broken
    page = tmp_path / "report.html"
    save_html(df, page)
    html = page.read_text()
    assert ">3/3 ok, pass^3, " in html and ">2/3 ok, flaky, " in html
    assert "pass^k: all k repeats passed" in html
    view = CompareView(df)
    assert ">3/3 ok, pass^3<br>" in view.matrix.value
    assert ">2/3 ok, flaky<br>" in view.matrix.value
    assert "flaky: some repeats ok" in view.summary.value


def test_one_repeat_has_no_marks() -> None:
    with ScriptedServer([chat_reply("Paris.")]) as server:
        df = compare(
            [Endpoint("e", server.base_url, "m")],
            scenarios=[Scenario("plain", prompt="Capital of France?")],
            progress=False,
        )
    cell = summarize(df).loc["plain", "e"]
    assert cell.startswith("1/1 ok, ") and "pass^" not in cell and "flaky" not in cell


def test_agentic_scenario_is_an_agent_clients_request() -> None:
    scenario = Scenario.agentic()
    assert 3800 <= len(scenario.system.encode()) <= 4400
    assert len(scenario.tools) == 12 and len({t.name for t in scenario.tools}) == 12
    assert scenario.system == AGENTIC_SYSTEM and scenario.require_tool_call
    assert scenario in EVALUATION_SCENARIOS or any(
        s.name == "agentic" for s in EVALUATION_SCENARIOS
    )
    tools = {t.name: t for t in agentic_tools()}
    # Each step's argument is the result of the one before: a guess fails.
    result = ""
    for name, arg, value in AGENTIC_STEPS:
        assert result == "" or value in result
        with pytest.raises(ValueError):
            tools[name]({arg: value + "0"})
        result = tools[name]({arg: value})
    assert AGENTIC_ANSWER in result


def agent_replies() -> list[Any]:
    """A model that walks the chain: each call's argument read from the last tool result."""
    from rig_nb.testing import tool_call

    def step(n: int) -> Any:
        def reply(request: Any) -> dict[str, Any]:
            messages = json.loads(request.body)["messages"]
            name, arg, value = AGENTIC_STEPS[n]
            if n:
                assert value in messages[-1]["content"]  # the result of the step before
            return chat_reply(tool_calls=[tool_call(name, {arg: value}, id=f"c{n}")])

        return reply

    return [step(0), step(1), step(2), chat_reply(f"DHL, tracking {AGENTIC_ANSWER}.")]


def test_agentic_scenario_passes_a_model_that_follows_the_chain() -> None:
    with ScriptedServer(agent_replies()) as server:
        df = compare(
            [Endpoint("e", server.base_url, "m")], scenarios=[Scenario.agentic()], progress=False
        )
        sent = body_of(server)
    assert df.loc[0, "outcome"] == "ok", df.loc[0, "error"]
    assert df.loc[0, "tool_calls"] == 3
    assert len(sent["tools"]) == 12 and sent["messages"][0]["content"] == AGENTIC_SYSTEM


def test_agentic_scenario_fails_a_wrong_answer() -> None:
    replies = agent_replies()[:3] + [chat_reply("It is on its way.")]
    with ScriptedServer(replies) as server:
        df = compare(
            [Endpoint("e", server.base_url, "m")], scenarios=[Scenario.agentic()], progress=False
        )
    assert df.loc[0, "outcome"] == "wrong_answer"


def test_a_persona_passes_the_probe_and_fails_the_agentic_shape(demo: DemoServer) -> None:
    endpoint = Endpoint("e", demo.base_url, "agent-shape-text-calls")
    df = compare(
        [endpoint, Endpoint("good", demo.base_url, "well-behaved")],
        scenarios=[Scenario("probe", kind="probe"), Scenario.agentic()],
        progress=False,
    )
    keys = zip(df["endpoint"], df["scenario"], strict=True)
    outcomes = dict(zip(keys, df["outcome"], strict=True))
    assert outcomes["e", "probe"] == "ok"
    assert outcomes["e", "agentic"] == "NoToolCallingError"
    assert outcomes["good", "probe"] == "ok"
    assert outcomes["good", "agentic"] == "ok"  # the chain walked: three dependent calls
    trace = df.attrs["traces"][1]
    assert '"name": "find_customer"' in trace.iterations[0].raw_content
