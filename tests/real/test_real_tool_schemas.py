"""tool_schema_report (the SCHEMA_FEATURES battery) on a real llama-server: SmolLM2 under
llama.cpp's Hermes-2-Pro tool template (`hermes_tools_server`, --jinja), each feature's
verdict as this server gives it, and the server's own words (FINDINGS.md, "Tool schemas").

What the server decides is asserted exactly: its refusals (the template's Jinja fails on a
`type` list and so refuses every list that holds one; a 300-value enum renders past the
2048-token window) and that it holds no call to a named tool_choice (no grammar: SmolLM2
writes its call as text, as it does with "auto", test_doctor.py). Run with `pytest -s` to
see every row.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from client_view import client_for
from llama_server_procs import Proc

from rig_nb import Client
from rig_nb.capabilities import SCHEMA_FEATURES, SchemaReport, endpoint_report, tool_schema_report
from rig_nb.capabilities.tool_schemas import TOOL_SCHEMAS_FEATURES, probe_tool
from rig_nb.tool import Tool

pytestmark = pytest.mark.real

# The template's own words for a tool list holding `"type": ["string", "null"]`.
TEMPLATE_REFUSAL = "Unable to generate parser for this template. Automatic parser generation failed"
WINDOW_REFUSAL = "exceeds the available context size (2048 tokens)"
# Each feature's tool alone with a named tool_choice, as seen on this server.
ALONE = {
    "plain": "no call",
    "ref_defs": "no call",
    "any_of_null": "no call",
    "type_list": "rejected 400",
    "pattern_unanchored": "no call",
    "format_date_time": "no call",
    "min_max_items": "no call",
    "additional_properties_schema": "no call",
    "enum_large": "rejected 400",
    "nested_3": "no call",
    "const": "no call",
    "schema_keyword": "no call",
}
TOOLS: dict[str, Tool] = dict(SCHEMA_FEATURES)


@pytest.fixture(scope="module")
def battery(hermes_tools_server: Proc) -> Iterator[SchemaReport]:
    with client_for(hermes_tools_server.base_url) as client:
        found = tool_schema_report(client, hermes_tools_server.model)
    for r in found.rows:
        print(f"battery {r.feature:<30} {r.verdict:<14} {r.evidence}")
    print("toolset", found.toolset_tokens, found.toolset_verdict)
    yield found


def test_the_whole_battery_is_refused_for_its_type_list(battery: SchemaReport) -> None:
    # Every probe sends the whole list, and the list holds type_list's tool.
    assert battery.server == "llama.cpp"
    assert battery.verdicts() == dict.fromkeys(ALONE, "rejected 400")
    assert all(TEMPLATE_REFUSAL in r.evidence for r in battery.rows)
    assert (battery.toolset_verdict, battery.toolset_tokens) == ("rejected 400", None)


def test_the_servers_words_for_a_type_list(hermes_tools_server: Proc) -> None:
    tool = TOOLS["type_list"]
    body = {
        "model": hermes_tools_server.model,
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 8,
        "tools": [tool.to_openai()],
    }
    answer = httpx.post(f"{hermes_tools_server.base_url}/chat/completions", json=body, timeout=120)
    said = answer.json()["error"]["message"]
    print("words:", said)
    assert answer.status_code == 400
    assert said.startswith(TEMPLATE_REFUSAL)
    assert "basic_type_map[json_spec.type]" in said


@pytest.mark.parametrize("feature", [f for f in ALONE if f not in TOOL_SCHEMAS_FEATURES])
def test_each_other_feature_alone(hermes_tools_server: Proc, feature: str) -> None:
    tool = TOOLS[feature]
    with Client(hermes_tools_server.base_url, timeout=900, deadline=1800) as client:
        row = probe_tool(client, hermes_tools_server.model, [tool], tool, feature=feature)
    print(f"alone {feature:<30} {row.verdict:<14} {row.evidence}")
    assert row.verdict == ALONE[feature]
    if feature == "type_list":
        assert TEMPLATE_REFUSAL in row.evidence
    if feature == "enum_large":
        assert WINDOW_REFUSAL in row.evidence
    if row.verdict == "no call":
        assert row.trace is not None and row.trace.iterations[-1].tool_calls == []


def test_the_doctor_check(hermes_tools_server: Proc) -> None:
    # A 256-token reply written without a grammar takes minutes on a busy 2-core machine:
    # past client_for's 120 s read timeout, the probe would be `stalled`.
    with Client(hermes_tools_server.base_url, timeout=900, deadline=1800) as client:
        report = endpoint_report(client, hermes_tools_server.model, checks=["tool_schemas"])
    check = report.check("tool_schemas")
    print("doctor", check.verdict, "|", check.evidence, "|", check.advice)
    assert report.requests == 6
    want = {f: ALONE[f] for f in TOOL_SCHEMAS_FEATURES}
    assert check.verdict == "no call: " + ", ".join(want)
    assert "named in tool_choice" in check.advice
