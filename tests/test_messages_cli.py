"""`--api messages` on the command line (demo, probe, run), `api = "messages"` in compare's
endpoint file, and `Endpoint(api="messages")` in compare (issue 32)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import cli

from rig_nb.compare import Endpoint, Scenario, compare
from rig_nb.demo import DemoServer
from rig_nb.testing import ScriptedServer, chat_reply


def test_run_goes_over_the_messages_wire(
    capsys: pytest.CaptureFixture[str], server: ScriptedServer
) -> None:
    server.push(chat_reply("hello"))
    args = ("run", "--base-url", server.base_url, "--model", "m", "--prompt", "hi")
    ran = cli(capsys, *args, "--api", "messages")
    assert ran.returncode == 0, ran.stderr
    assert "hello" in ran.stdout
    assert [r.path for r in server.requests] == ["/v1/messages"]
    assert server.requests[0].headers["anthropic-version"] == "2023-06-01"


def test_probe_over_messages_finds_the_demos_tool_call(
    capsys: pytest.CaptureFixture[str], demo: DemoServer
) -> None:
    args = ("probe", "--base-url", demo.base_url, "--model", "well-behaved", "--api", "messages")
    assert cli(capsys, *args).returncode == 0
    assert cli(capsys, *args, "--stream").returncode == 0


def test_the_demo_runs_every_persona_over_messages(capsys: pytest.CaptureFixture[str]) -> None:
    ran = cli(capsys, "demo", "--api", "messages")
    assert ran.returncode == 0, ran.stderr
    assert "runs the tool loop (the messages wire)" in ran.stdout
    assert "well-behaved" in ran.stdout


def test_compare_file_names_the_messages_wire(
    capsys: pytest.CaptureFixture[str], demo: DemoServer, tmp_path: Path
) -> None:
    endpoints = tmp_path / "endpoints.toml"
    endpoints.write_text(
        "".join(
            f'[[endpoint]]\nname = "{api}"\nbase_url = "{demo.base_url}"\n'
            f'model = "well-behaved"\napi = "{api}"\n\n'
            for api in ("chat", "messages")
        )
    )
    ran = cli(capsys, "compare", str(endpoints))
    assert ran.returncode == 0, ran.stderr


def test_compare_puts_chat_and_messages_side_by_side(demo: DemoServer) -> None:
    endpoints = [
        Endpoint(api, demo.base_url, "reasoning-field", api=api) for api in ("chat", "messages")
    ]
    df = compare(endpoints, scenarios=[Scenario("probe", kind="probe")], progress=False)
    assert list(df["outcome"]) == ["ok", "ok"]
    traces = df.attrs["traces"]
    assert [traces[i].settings["api"] for i in df.index] == ["chat", "messages"]
