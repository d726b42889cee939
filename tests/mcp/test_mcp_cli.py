"""`python -m rig_nb run --mcp "CMD ARGS"`: the MCP server's tools in the run; a server that
fails is one line, exit 1; a command that cannot be split is a usage error, exit 2."""

from __future__ import annotations

import shlex

import pytest
from cli_helpers import assert_one_line_error, cli, rig
from mcp_servers import toy

from rig_nb.demo import DemoServer


def _run(demo: DemoServer, *extra: str) -> tuple[str, ...]:
    prompt = ("--prompt", "Say it for Lisbon.")
    return ("run", "--base-url", demo.base_url, "--model", "well-behaved", *prompt, *extra)


def test_run_offers_the_mcp_servers_tools(
    capsys: pytest.CaptureFixture[str], demo: DemoServer
) -> None:
    # The persona calls each offered tool once, one a round: 8 of the toy's 10 take no number.
    ran = cli(capsys, *_run(demo, "--mcp", shlex.join(toy()), "--max-iterations", "12", "--json"))
    assert ran.returncode == 0, ran.stderr
    assert '"name": "echo"' in ran.stdout and "echo Lisbon" in ran.stdout


def test_two_mcp_servers_with_one_tool_name_are_a_usage_error(
    capsys: pytest.CaptureFixture[str], demo: DemoServer
) -> None:
    ran = cli(capsys, *_run(demo, "--mcp", shlex.join(toy()), "--mcp", shlex.join(toy())))
    assert_one_line_error(ran, 2, "two sources offer a tool named 'echo'")


def test_a_server_that_fails_is_one_line_exit_1(demo: DemoServer) -> None:
    proc = rig(*_run(demo, "--mcp", shlex.join(toy("exit-at-start"))))
    assert_one_line_error(proc, 1, "--mcp: MCP server", "exited with code 2", "fatal: bad token")


def test_a_command_that_cannot_be_split_is_exit_2(
    capsys: pytest.CaptureFixture[str], demo: DemoServer
) -> None:
    ran = cli(capsys, *_run(demo, "--mcp", "python 'unclosed"))
    assert_one_line_error(ran, 2, "--mcp: cannot split")
