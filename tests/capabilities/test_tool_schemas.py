"""tool_schema_report and the doctor's tool_schemas check against the demo's schema personas,
a scripted server that drips past the deadline, and one that echoes the key in its 400."""

from __future__ import annotations

import html
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from hostile_servers import KEY, drip

from rig_nb import Client, Tool
from rig_nb.capabilities import (
    CHECKS,
    SCHEMA_FEATURES,
    SchemaCheck,
    SchemaReport,
    endpoint_report,
    tool_schema_report,
)
from rig_nb.capabilities.tool_schemas import TOOL_SCHEMAS_FEATURES, validate_arguments
from rig_nb.demo import DemoServer
from rig_nb.testing import Response, ScriptedServer

FEATURES = [
    "plain",
    "ref_defs",
    "any_of_null",
    "type_list",
    "pattern_unanchored",
    "format_date_time",
    "min_max_items",
    "additional_properties_schema",
    "enum_large",
    "nested_3",
    "const",
    "schema_keyword",
]
ALL_OK = dict.fromkeys(FEATURES, "ok")
# What each persona's server does to the battery (the whole list goes with every probe).
EXPECTED: dict[str, dict[str, str]] = {
    "well-behaved": ALL_OK,
    "schema-rejecting": dict.fromkeys(FEATURES, "rejected 400"),
    "schema-fails-open": {
        **ALL_OK,
        "pattern_unanchored": "fails open",
        "format_date_time": "fails open",
        "min_max_items": "fails open",
        "enum_large": "fails open",
    },
    "args-as-string": {
        **ALL_OK,
        "ref_defs": "args as string",
        "additional_properties_schema": "args as string",
        "nested_3": "args as string",
    },
}
_ROUTES = ("/chat/completions", "/responses", "/messages", "/api/chat")


@pytest.fixture
def demo() -> Iterator[DemoServer]:
    """A demo endpoint of this test's own: requests are counted from its log, which keeps only
    the most recent ones (the session's endpoint has served many by now)."""
    with DemoServer(stream_first_delay=0, stream_interval=0) as srv:
        yield srv


def _model_posts(demo: DemoServer, since: int) -> int:
    return sum(
        1 for r in list(demo.requests)[since:] if r.method == "POST" and r.path.endswith(_ROUTES)
    )


def test_the_battery_names_every_feature_with_a_valid_schema() -> None:
    assert [f for f, _ in SCHEMA_FEATURES][: len(FEATURES)] == FEATURES
    names = [t.name for _, t in SCHEMA_FEATURES]
    assert len(set(names)) == len(names)
    for _, tool in SCHEMA_FEATURES:
        assert isinstance(tool, Tool) and tool.description
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
    tools = dict(SCHEMA_FEATURES)
    assert len(tools["enum_large"].input_schema["properties"]["code"]["enum"]) == 300
    assert "$schema" in tools["schema_keyword"].input_schema
    assert tools["ref_defs"].input_schema["properties"]["where"] == {"$ref": "#/$defs/point"}
    assert tools["type_list"].input_schema["properties"]["label"]["type"] == ["string", "null"]
    assert set(TOOL_SCHEMAS_FEATURES) <= set(tools) and len(TOOL_SCHEMAS_FEATURES) == 6


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
@pytest.mark.parametrize("model", list(EXPECTED))
def test_each_persona_gets_its_verdicts(
    demo: DemoServer, model: str, api: str, stream: bool
) -> None:
    since = len(demo.requests)
    with Client(demo.base_url, api=api) as client:
        report = tool_schema_report(client, model, stream=stream)
    assert isinstance(report, SchemaReport) and report.model == model
    assert report.verdicts() == EXPECTED[model]
    assert [(r.feature, r.tool) for r in report.rows] == [(f, t.name) for f, t in SCHEMA_FEATURES]
    assert all(isinstance(r, SchemaCheck) for r in report.rows)
    # Every probe and both cost requests, or one cost request when the list is refused.
    assert _model_posts(demo, since) == len(SCHEMA_FEATURES) + (1 if "rejecting" in model else 2)
    if model == "schema-rejecting":
        assert report.server == "llama.cpp"
        assert (report.toolset_verdict, report.toolset_tokens) == ("rejected 400", None)
        evidence = report.rows[0].evidence
        assert "JSON schema conversion failed" in evidence
        assert "Pattern must start with '^' and end with '$'" in evidence
    else:
        assert report.toolset_verdict == "ok"
        assert report.toolset_tokens is not None and report.toolset_tokens > 100
    if stream and model != "schema-rejecting":  # a refusal is never streamed
        assert all(r.trace is not None and r.trace.iterations[0].chunks for r in report.rows)


def test_the_evidence_names_the_pointer_and_the_message(demo: DemoServer) -> None:
    with Client(demo.base_url) as client:
        fails = tool_schema_report(client, "schema-fails-open")
        strings = tool_schema_report(client, "args-as-string")
    rows = {r.feature: r for r in fails.rows}
    assert rows["format_date_time"].evidence == "/when: 'any text' is not a 'date-time'"
    assert rows["min_max_items"].evidence == "/colors: [] is too short"
    assert rows["pattern_unanchored"].evidence.startswith("/ticket: 'any text' does not match")
    assert {r.feature: r.evidence for r in strings.rows}["nested_3"].startswith("/config: ")


def test_ollama_sends_the_named_tool_alone(demo: DemoServer) -> None:
    # Ollama has no tool_choice: its wire sends only the named tool, so only the tools with a
    # $ref or an unanchored pattern are refused.
    with Client(demo.base_url, api="ollama") as client:
        report = tool_schema_report(client, "schema-rejecting")
    assert report.verdicts() == {
        **ALL_OK,
        "ref_defs": "rejected 400",
        "pattern_unanchored": "rejected 400",
    }


def test_your_tools_one_probe_each_within_limit_plus_two(demo: DemoServer) -> None:
    tools = [t for _, t in SCHEMA_FEATURES]
    since = len(demo.requests)
    with Client(demo.base_url) as client:
        report = tool_schema_report(client, "args-as-string", tools, limit=3)
    assert _model_posts(demo, since) == 3 + 2
    assert [(r.feature, r.tool) for r in report.rows] == [("", t.name) for t in tools[:3]]
    assert [r.verdict for r in report.rows] == ["ok", "args as string", "ok"]
    df = report.to_dataframe()
    assert list(df.columns) == ["feature", "tool", "verdict", "evidence"] and len(df) == 3


def test_limit_zero_only_measures_the_list(demo: DemoServer) -> None:
    since = len(demo.requests)
    with Client(demo.base_url) as client:
        report = tool_schema_report(client, "well-behaved", limit=0)
    assert report.rows == [] and report.toolset_tokens is not None
    assert _model_posts(demo, since) == 2


@pytest.mark.parametrize(
    "tools",
    [
        pytest.param(["not a tool"], id="not-a-tool"),
        pytest.param([SCHEMA_FEATURES[0][1], SCHEMA_FEATURES[0][1]], id="duplicate"),
    ],
)
def test_bad_tools_are_a_value_error_before_any_request(demo: DemoServer, tools: Any) -> None:
    since = len(demo.requests)
    with Client(demo.base_url) as client, pytest.raises(ValueError):
        tool_schema_report(client, "well-behaved", tools)
    assert _model_posts(demo, since) == 0


def test_a_server_past_the_deadline_is_stalled() -> None:
    tool = SCHEMA_FEATURES[0][1]
    with ScriptedServer() as server:
        server.push({"object": "list", "data": [{"id": "m", "owned_by": "x"}]})
        server.push(*[Response(drip(b"{", 0.05)) for _ in range(2)])
        with Client(server.base_url, timeout=5, deadline=0.5, max_retries=0) as client:
            report = tool_schema_report(client, "m", [tool])
    assert [r.verdict for r in report.rows] == ["stalled"]
    assert "deadline" in report.rows[0].evidence
    assert (report.toolset_verdict, report.toolset_tokens) == ("stalled", None)


_SCRIPT = '<script>alert("x")</script>'


def test_the_servers_words_are_redacted_and_escaped_when_shown() -> None:
    said = f"JSON schema conversion failed: bad key {KEY} {_SCRIPT}"
    refusal = Response({"error": {"code": 400, "message": said}}, 400)
    with ScriptedServer() as server:
        server.push({"object": "list", "data": [{"id": "m", "owned_by": "x"}]})
        server.push(refusal, refusal)
        with Client(server.base_url, KEY, max_retries=0) as client:
            report = tool_schema_report(client, "m", [SCHEMA_FEATURES[0][1]])
    row = report.rows[0]
    assert row.verdict == "rejected 400" and "JSON schema conversion failed" in row.evidence
    assert KEY not in row.evidence and KEY not in repr(report)
    shown = report.to_dataframe().to_html()
    assert "<script>" not in shown and html.escape("<script>") in shown


@pytest.mark.parametrize(
    ("arguments", "verdict", "evidence"),
    [
        pytest.param({"a": {"b": {"c": 1}}}, "ok", "", id="ok"),
        pytest.param({"a": '{"b": {"c": 1}}'}, "args as string", "/a: ", id="string"),
        pytest.param({"a": {"b": '{"c": 1}'}}, "args as string", "/a/b: ", id="deeper"),
        pytest.param({"a": {"b": {"c": "1"}}}, "fails open", "/a/b/c: '1' is not", id="type"),
        pytest.param({"a": "{not json"}, "fails open", "/a: '{not json' is not", id="broken"),
        pytest.param([1], "fails open", "/: the arguments are list", id="list"),
    ],
)
def test_validate_arguments(arguments: Any, verdict: str, evidence: str) -> None:
    inner = {"type": "object", "properties": {"c": {"type": "integer"}}, "required": ["c"]}
    middle = {"type": "object", "properties": {"b": inner}, "required": ["b"]}
    schema = {"type": "object", "properties": {"a": middle}, "required": ["a"]}
    got, said = validate_arguments(schema, arguments)
    assert got == verdict and said.startswith(evidence)


def test_a_remote_ref_is_never_fetched() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:9/x.json"}}}
    verdict, evidence = validate_arguments(schema, {"a": 1})
    assert verdict == "ok" and evidence.startswith("not validated: ")


@pytest.mark.parametrize(
    ("model", "verdict", "advice"),
    [
        pytest.param("well-behaved", "ok", "", id="well-behaved"),
        pytest.param(
            "schema-rejecting",
            "rejected 400: ref_defs, pattern_unanchored",
            "kubernetes-mcp-server#758",
            id="rejecting",
        ),
        pytest.param(
            "schema-fails-open",
            "fails open: pattern_unanchored, format_date_time",
            "ggml-org/llama.cpp#19051",
            id="fails-open",
        ),
        pytest.param(
            "args-as-string",
            "args as string: ref_defs, nested_3",
            "vllm-project/vllm#46924",
            id="args-as-string",
        ),
    ],
)
def test_the_doctor_check(demo: DemoServer, model: str, verdict: str, advice: str) -> None:
    since = len(demo.requests)
    with Client(demo.base_url) as client:
        report = endpoint_report(client, model, checks=["tool_schemas"])
    check = report.check("tool_schemas")
    assert check.verdict == verdict
    assert (advice in check.advice) if advice else check.advice == ""
    assert check.ok is (verdict == "ok")
    assert report.requests == _model_posts(demo, since) == CHECKS["tool_schemas"] == 6
    if verdict != "ok":
        assert check.evidence.startswith(verdict.split(": ")[1].split(", ")[0] + ": ")
        assert check.trace is not None and check.trace.settings["kind"] == "tool_schema"
