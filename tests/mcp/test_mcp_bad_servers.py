"""Servers that fail: never start, exit at start, die mid-call, answer late, flood stderr, list
10,000 tools or a 1 MB schema, name tools outside [a-zA-Z0-9_-]. Each is a clear RigError or
a tool error fed back, bounded in time and memory, with no process or thread left behind."""

from __future__ import annotations

import time

import pytest
from mcp_servers import left_behind, pid_gone, thread_names, toy

from rig_nb import Client, RigError, RunRequest
from rig_nb.mcp import McpTools
from rig_nb.mcp.names import MAX_NAME
from rig_nb.tool import validate_tools


def by_name(mcp: McpTools) -> dict[str, object]:
    return {t.name: t for t in mcp.tools}


def test_a_command_that_does_not_exist() -> None:
    before = thread_names()
    with pytest.raises(RigError) as info:
        McpTools(["rig-nb-no-such-server", "--flag"], timeout=5).start()
    assert info.value.message == (
        "MCP server 'rig-nb-no-such-server' failed to start: cannot run it: "
        "No such file or directory"
    )
    assert left_behind(before) == set()


def test_a_server_that_exits_at_start_names_its_last_stderr_line_redacted() -> None:
    secret = "tok-0123456789-secret"
    before = thread_names()
    started = time.monotonic()
    mcp = McpTools(toy("exit-at-start"), env={"TOY_TOKEN": secret}, timeout=20)
    with pytest.raises(RigError) as info:
        mcp.start()
    assert time.monotonic() - started < 20
    message = info.value.message
    assert message.startswith(f"MCP server {toy()[0]!r} failed to start: it exited with code 2")
    assert message.endswith("its last stderr line: fatal: bad token [redacted]")
    assert secret not in message
    assert mcp.pid is not None and pid_gone(mcp.pid)
    assert left_behind(before) == set()


def test_a_server_that_never_answers_fails_within_the_timeout() -> None:
    before = thread_names()
    mcp = McpTools(toy("never-start"), timeout=2)
    started = time.monotonic()
    with pytest.raises(RigError, match="no answer to initialize and tools/list within 2 s") as info:
        mcp.start()
    assert time.monotonic() - started < 2 + 3  # the timeout, and the terminate that ends it
    assert "its last stderr line: starting, slowly" in info.value.message
    assert mcp.pid is not None and pid_gone(mcp.pid)
    assert left_behind(before) == set()


def test_a_server_that_dies_mid_call_is_a_tool_error_fed_back(demo_client: Client) -> None:
    before = thread_names()
    with McpTools(toy(), include=["die", "echo"], timeout=20) as mcp:
        pid = mcp.pid
        request = RunRequest("well-behaved", 256, prompt="Do it for Lisbon.", tools=mcp.tools)
        result = demo_client.run(request)
        calls = [c for it in result.trace.iterations for c in it.tool_calls]
        assert [c.name for c in calls] == ["echo", "die"]  # the server's order
        assert calls[0].result == "echo Lisbon"
        assert calls[1].result == (
            "error: MCP tool 'die': the MCP server exited with code 3; "
            "its last stderr line: dying on purpose"
        )
        assert result.trace.outcome == "ok"  # the run went on to an answer
        with pytest.raises(RigError, match="exited with code 3"):
            by_name(mcp)["echo"]({"text": "after"})
    assert pid is not None and pid_gone(pid)
    assert left_behind(before) == set()


@pytest.mark.slow
def test_an_answer_after_the_timeout_is_a_tool_error_and_the_session_goes_on() -> None:
    # One timeout bounds the start and each call: it must outlast the server's start (the
    # SDK's import takes seconds on a loaded machine), so the late answer comes later still.
    with McpTools(toy(), timeout=15) as mcp:
        started = time.monotonic()
        with pytest.raises(RigError, match="MCP tool 'slow': no answer within 15 s"):
            by_name(mcp)["slow"]({"seconds": 120})
        assert time.monotonic() - started < 15 + 2
        assert by_name(mcp)["echo"]({"text": "still here"}) == "echo still here"


def test_a_stderr_flood_is_kept_as_a_bounded_tail() -> None:
    with McpTools(toy("flood"), timeout=30) as mcp:
        assert by_name(mcp)["echo"]({"text": "x"}) == "echo x"
        assert by_name(mcp)["shout"]({"text": "x"}) == "shouted"
        tail = mcp._tail
        assert tail is not None and 0 < tail.size <= tail.limit + (64 << 10)
        assert tail.last_line().startswith("E")
        pid = mcp.pid
    assert pid is not None and pid_gone(pid)


def test_ten_thousand_tools() -> None:
    started = time.monotonic()
    with McpTools(toy("many-tools"), timeout=60) as mcp:
        assert len(mcp.tools) == 10 + 10_000
        assert len(set(mcp.names)) == len(mcp.tools)
        assert by_name(mcp)["echo"]({"text": "x"}) == "echo x"
    assert time.monotonic() - started < 60


def test_a_tool_with_a_1_mb_schema() -> None:
    with McpTools(toy("big-schema"), include=["big"], timeout=60) as mcp:
        (big,) = mcp.tools
        description = big.input_schema["properties"]["text"]["description"]
        assert len(description) >= 1_000_000
        assert big({"text": "small"}) == "small"


def test_names_outside_the_allowed_set_are_mapped_and_called() -> None:
    with McpTools(toy("odd-names"), include=["get*", "a/b:c", "x*", "ok-*"], timeout=20) as mcp:
        assert mcp.names == {
            "get_weather": "get.weather",
            "get_weather_2": "get weather",
            "a_b_c": "a/b:c",
            "x" * MAX_NAME: "x" * 80,
            "ok-name_1": "ok-name_1",
        }
        validate_tools(mcp.tools)
        assert by_name(mcp)["get_weather_2"]({}) == "odd"
