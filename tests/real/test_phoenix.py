"""The Phoenix round trip: a real run exported with export_otlp, read back through Phoenix's
own REST API (`GET /v1/projects/default/spans`): span names, the GenAI attributes, the run's
outcome, and no key anywhere."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from phoenix_server import Phoenix, phoenix_server

from rig_nb import Client, RigError, RunRequest, Trace
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools
from rig_nb.report import export_otlp

pytestmark = pytest.mark.real

KEY = "sk-phoenix-round-trip-5150"
READ_BACK_S = 60.0  # Phoenix ingests a request asynchronously


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    with phoenix_server(tmp_path_factory.mktemp("phoenix")) as server:
        print(f"Phoenix /healthz after {server.startup_s:.1f} s")
        yield server


def runs(demo: DemoServer) -> list[Trace]:
    out = []
    with Client(demo.base_url, KEY) as client:
        for model in ("well-behaved", "hermes-text-tools"):
            request = RunRequest(
                model, 512, system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools()
            )
            try:
                out.append(client.run(request).trace)
            except RigError as exc:
                assert exc.trace is not None
                out.append(exc.trace)
    return out


def read_spans(phoenix: Phoenix, expected: int) -> list[dict[str, Any]]:
    """The default project's spans, once all `expected` have arrived (bounded)."""
    started = time.monotonic()
    with httpx.Client(trust_env=False, timeout=10.0) as http:
        while True:
            got = http.get(f"{phoenix.base_url}/v1/projects/default/spans", params={"limit": 1000})
            assert got.status_code == 200, got.text[:500]
            data: list[dict[str, Any]] = got.json()["data"]
            if len(data) >= expected or time.monotonic() - started > READ_BACK_S:
                return data
            phoenix.pause(0.5)


def test_a_run_round_trips_through_phoenix(phoenix: Phoenix, demo: DemoServer) -> None:
    traces = runs(demo)
    assert [t.outcome for t in traces] == ["ok", "text_tool_calls"]
    export_otlp(traces, phoenix.traces_url, include_content=True, deadline=30)
    expected = sum(1 + len(t.iterations) + len(t.tool_calls) for t in traces)
    spans = read_spans(phoenix, expected)
    assert len(spans) == expected
    roots = {s["context"]["trace_id"]: s for s in spans if s["parent_id"] is None}
    assert len(roots) == 2
    outcomes = sorted(s["attributes"]["rig_nb.outcome"] for s in roots.values())
    assert outcomes == ["ok", "text_tool_calls"]
    for root in roots.values():
        assert root["name"] == "invoke_agent rig_nb"
        assert root["attributes"]["gen_ai.agent.name"] == "rig_nb"
        ok = root["attributes"]["rig_nb.outcome"] == "ok"
        assert root["status_code"] == ("OK" if ok else "ERROR")
    chats = [s for s in spans if s["name"].startswith("chat ")]
    assert {s["name"] for s in chats} == {"chat well-behaved", "chat hermes-text-tools"}
    for chat in chats:
        a = chat["attributes"]
        assert a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.request.model"] in ("well-behaved", "hermes-text-tools")
        assert isinstance(a["gen_ai.usage.input_tokens"], int)
        assert a["server.address"] == "127.0.0.1"
        assert chat["parent_id"] in {r["context"]["span_id"] for r in roots.values()}
    tools = [s for s in spans if s["name"].startswith("execute_tool ")]
    assert tools and all(s["attributes"]["gen_ai.tool.name"] for s in tools)
    assert any(DEMO_PROMPT in str(c["attributes"].get("gen_ai.input.messages")) for c in chats)
    assert KEY not in json.dumps(spans)
