"""McpTools against the MCP project's reference server, @modelcontextprotocol/server-everything
(npm, pinned in scripts/setup-mcp), started over stdio with node: its tools listed and called,
and called in a loop against the demo endpoint."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import pytest
from mcp_servers import everything_argv, left_behind, pid_gone, thread_names

from rig_nb import Client, RunRequest
from rig_nb.mcp import McpTools

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node (Node.js)")


@pytest.fixture(scope="module")
def everything() -> Iterator[McpTools]:
    with McpTools(everything_argv(), timeout=60) as mcp:
        yield mcp


def test_its_tools_are_listed(everything: McpTools) -> None:
    names = [t.name for t in everything.tools]
    assert {"echo", "get-sum", "get-tiny-image", "get-env", "get-structured-content"} <= set(names)
    assert everything.names == {n: n for n in names}  # its names are valid as they are
    for tool in everything.tools:
        assert tool.description and tool.input_schema.get("type") == "object"


def test_its_tools_answer(everything: McpTools) -> None:
    tools = {t.name: t for t in everything.tools}
    assert tools["echo"]({"message": "hi"}) == "Echo: hi"
    assert tools["get-sum"]({"a": 1, "b": 2}) == "The sum of 1 and 2 is 3."
    assert "[image: image/png]" in tools["get-tiny-image"]({}).splitlines()


def test_no_variable_of_the_callers_reaches_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALLERS_API_KEY", "sk-never-0123456789")
    with McpTools(everything_argv(), include=["get-env"], timeout=60) as mcp:
        seen = json.loads(mcp.tools[0]({}))
    assert "CALLERS_API_KEY" not in seen


def test_a_loop_calls_it_against_the_demo(demo_client: Client) -> None:
    before = thread_names()
    with McpTools(everything_argv(), include=["echo"], timeout=60) as mcp:
        pid = mcp.pid
        request = RunRequest("well-behaved", 256, prompt="Repeat it for Lisbon.", tools=mcp.tools)
        result = demo_client.run(request)
    calls = [c for it in result.trace.iterations for c in it.tool_calls]
    assert [(c.name, c.result) for c in calls] == [("echo", "Echo: Lisbon")]
    assert result.trace.outcome == "ok" and "Echo: Lisbon" in result.text
    assert pid is not None and pid_gone(pid)
    assert left_behind(before) == set()
