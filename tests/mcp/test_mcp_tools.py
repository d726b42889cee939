"""McpTools against a real MCP server built with the SDK's MCPServer (tests/mcp/toy_server.py):
the tools, their results as text, the loop and compare over them, the environment the
server gets, threads and the process gone after the block."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from mcp_servers import left_behind, pid_gone, thread_names, toy, toy_http

from rig_nb import Client, RigError, RunRequest
from rig_nb.compare import Endpoint, Scenario, compare_rows
from rig_nb.demo import DemoServer
from rig_nb.mcp import McpTools

TOYS = ["echo", "add", "env", "pid", "picture", "structured", "fail", "slow", "die", "shout"]


@pytest.fixture(scope="module")
def tools() -> object:
    with McpTools(toy(), timeout=20) as mcp:
        yield mcp


def by_name(mcp: McpTools) -> dict[str, object]:
    return {t.name: t for t in mcp.tools}


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        pytest.param((), {}, "exactly one", id="neither"),
        pytest.param((["x"],), {"url": "http://127.0.0.1:1/mcp"}, "exactly one", id="both"),
        pytest.param(("node server.js",), {}, "not a shell string", id="shell-string"),
        pytest.param(([],), {}, "non-empty", id="empty-argv"),
        pytest.param((["x"],), {"headers": {"a": "b"}}, "headers are for", id="headers-stdio"),
        pytest.param((), {"url": "http://h/mcp", "env": {"A": "b"}}, "env and cwd", id="env-http"),
        pytest.param((), {"url": "ftp://h/mcp"}, "http(s) URL", id="bad-url"),
        pytest.param((["x"],), {"timeout": 0}, "positive", id="zero-timeout"),
        pytest.param((["x"],), {"timeout": float("nan")}, "positive", id="nan-timeout"),
        pytest.param((["x"],), {"env": {"A": 1}}, "strings", id="env-not-strings"),
    ],
)
def test_bad_arguments_are_value_errors(args: tuple, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        McpTools(*args, **kwargs)


def test_tools_before_the_start_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="with McpTools"):
        McpTools(["x"]).tools  # noqa: B018


def test_importing_rig_nb_or_rig_nb_mcp_does_not_import_the_sdk() -> None:
    code = "import sys, rig_nb, rig_nb.mcp\nassert 'mcp' not in sys.modules, 'mcp imported'\n"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_servers_tools_become_rig_nb_tools(tools: McpTools) -> None:
    assert [t.name for t in tools.tools] == TOYS
    assert tools.names == {n: n for n in TOYS}
    echo = by_name(tools)["echo"]
    assert echo.description == "Echo the text back."
    assert echo.input_schema["properties"]["text"]["type"] == "string"
    assert echo({"text": "hi"}) == "echo hi"
    assert by_name(tools)["add"]({"a": 1, "b": 2.5}) == "3.5"


def test_results_as_text(tools: McpTools) -> None:
    t = by_name(tools)
    assert t["picture"]({}) == "[image: image/png]\n[audio: audio/wav]"
    assert t["structured"]({}) == '{"answer":42,"count":3}'


def test_is_error_is_the_tools_error(tools: McpTools) -> None:
    with pytest.raises(RigError, match="failed on purpose: because"):
        by_name(tools)["fail"]({"reason": "because"})


def test_only_the_default_variables_lang_and_env_reach_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CALLERS_SECRET_KEY", "sk-do-not-leak-0123456789")
    monkeypatch.setenv("LANG", "C.UTF-8")
    with McpTools(toy(), env={"GIVEN": "yes"}, timeout=20) as mcp:
        seen = json.loads(by_name(mcp)["env"]({}))
    assert "CALLERS_SECRET_KEY" not in seen
    assert "sk-do-not-leak" not in json.dumps(seen)
    assert seen["GIVEN"] == "yes" and seen["LANG"] == "C.UTF-8"
    allowed = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "GIVEN"}
    # Python itself may add LC_CTYPE when it coerces the C locale.
    assert set(seen) - allowed <= {"LC_CTYPE"}


def test_include_keeps_names_and_globs(tmp_path: object) -> None:
    with McpTools(toy(), include=["ec*", "add", "nothing-like-this"], timeout=20) as mcp:
        assert [t.name for t in mcp.tools] == ["echo", "add"]


def test_leaving_the_block_ends_the_process_and_every_thread() -> None:
    before = thread_names()
    with McpTools(toy(), timeout=20) as mcp:
        pid = mcp.pid
        assert pid is not None and not pid_gone(pid)
        assert int(by_name(mcp)["pid"]({})) == pid
        assert left_behind(before)  # the loop's thread runs
    assert pid_gone(pid)
    assert left_behind(before) == set()
    with pytest.raises(RigError, match="closed"):
        by_name(mcp)["echo"]({"text": "late"})


def test_a_server_that_ignores_sigterm_is_killed_after_5_s() -> None:
    import time

    with McpTools(toy("stubborn"), timeout=20) as mcp:
        pid = mcp.pid
        assert pid is not None
        started = time.monotonic()
    took = time.monotonic() - started
    assert pid_gone(pid)
    assert 4.5 <= took < 9.0


def test_calls_from_many_threads_at_once(tools: McpTools) -> None:
    echo = by_name(tools)["echo"]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: echo({"text": str(i)}), range(80)))
    assert results == [f"echo {i}" for i in range(80)]


def test_the_loop_calls_mcp_tools_against_the_demo(demo_client: Client) -> None:
    with McpTools(toy(), include=["echo"], timeout=20) as mcp:
        request = RunRequest("well-behaved", 256, prompt="Say it for Lisbon.", tools=mcp.tools)
        result = demo_client.run(request)
    calls = [c for it in result.trace.iterations for c in it.tool_calls]
    assert [(c.name, c.result) for c in calls] == [("echo", "echo Lisbon")]
    assert "echo Lisbon" in result.text


def test_a_tool_error_is_fed_back_and_the_run_goes_on(demo_client: Client) -> None:
    with McpTools(toy(), include=["fail"], timeout=20) as mcp:
        request = RunRequest("well-behaved", 256, prompt="Try it for Lisbon.", tools=mcp.tools)
        result = demo_client.run(request)
    (call,) = [c for it in result.trace.iterations for c in it.tool_calls]
    assert call.is_error and call.result == "error: failed on purpose: Lisbon"
    assert result.trace.outcome == "ok"


def test_compare_runs_scenarios_with_mcp_tools_in_threads(demo: DemoServer) -> None:
    with McpTools(toy(), include=["echo"], timeout=20) as mcp:
        scenario = Scenario("mcp", prompt="Say it for Lisbon.", tools=mcp.tools)
        rows, traces = compare_rows(
            [Endpoint("demo", demo.base_url, "well-behaved")],
            scenarios=[scenario],
            repeats=6,
            concurrency=3,
        )
    assert [r["outcome"] for r in rows] == ["ok"] * 6
    assert all(
        t is not None and t.iterations[0].tool_calls[0].result == "echo Lisbon" for t in traces
    )


def test_streamable_http_against_an_sdk_server() -> None:
    before = thread_names()
    with toy_http() as url:
        with McpTools(url=url, headers={"X-Test": "1"}, timeout=20) as mcp:
            assert [t.name for t in mcp.tools] == TOYS
            assert mcp.pid is None
            assert by_name(mcp)["echo"]({"text": "over http"}) == "echo over http"
            with pytest.raises(RigError, match="failed on purpose"):
                by_name(mcp)["fail"]({"reason": "x"})
    assert left_behind(before) == set()


def test_threads_started_stay_bounded_under_load(tools: McpTools) -> None:
    # Calls go to the loop's thread: many callers add no thread of McpTools' own.
    before = threading.active_count()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda i: by_name(tools)["echo"]({"text": "x"}), range(40)))
    assert threading.active_count() <= before + 4
