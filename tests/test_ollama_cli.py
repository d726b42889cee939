"""`--api ollama` on the command line, `api = "ollama"` in compare's endpoint file, and
`Endpoint(api="ollama")` in compare (issue 32)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import cli

from rig_nb.compare import Endpoint, Scenario, compare
from rig_nb.demo import DemoServer
from rig_nb.testing import ScriptedServer, chat_reply


def test_run_goes_to_api_chat_at_the_root(
    capsys: pytest.CaptureFixture[str], server: ScriptedServer
) -> None:
    server.push(chat_reply("hello"))
    args = ("run", "--base-url", server.base_url, "--model", "m", "--prompt", "hi")
    ran = cli(capsys, *args, "--api", "ollama")
    assert ran.returncode == 0, ran.stderr
    assert "hello" in ran.stdout
    assert [r.path for r in server.requests] == ["/api/chat"]


def test_probe_over_ollama_on_the_demo(
    capsys: pytest.CaptureFixture[str], demo: DemoServer
) -> None:
    args = ("probe", "--base-url", demo.base_url, "--model", "well-behaved", "--api", "ollama")
    ran = cli(capsys, *args)
    assert ran.returncode == 0, ran.stderr
    assert demo.requests[-1].path == "/api/chat"


def test_compare_file_names_the_ollama_wire(
    capsys: pytest.CaptureFixture[str], demo: DemoServer, tmp_path: Path
) -> None:
    endpoints = tmp_path / "endpoints.toml"
    endpoints.write_text(
        "".join(
            f'[[endpoint]]\nname = "{api}"\nbase_url = "{demo.base_url}"\n'
            f'model = "well-behaved"\napi = "{api}"\n\n'
            for api in ("chat", "ollama")
        )
    )
    ran = cli(capsys, "compare", str(endpoints))
    assert ran.returncode == 0, ran.stderr
    assert "/api/chat" in {r.path for r in demo.requests}


def test_compare_puts_chat_and_ollama_side_by_side(demo: DemoServer) -> None:
    endpoints = [
        Endpoint(api, demo.base_url, "ollama-reasoning", api=api) for api in ("chat", "ollama")
    ]
    df = compare(endpoints, scenarios=[Scenario("probe", kind="probe")], progress=False)
    assert list(df["outcome"]) == ["ok", "ok"]
    traces = df.attrs["traces"]
    assert [traces[i].settings["api"] for i in df.index] == ["chat", "ollama"]
    fields = [traces[i].iterations[0].reasoning_field for i in df.index]
    assert fields == ["reasoning", "thinking"]  # Ollama's /v1 field, then its native one
