"""`run --client NAME`: a run shaped as an agent client, from the command line."""

from __future__ import annotations

import pytest
from cli_helpers import assert_one_line_error, cli

from rig_nb import Trace
from rig_nb.clients import CLIENTS
from rig_nb.demo import DemoServer


def _run(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, str, str]:
    ran = cli(
        capsys,
        "run",
        "--base-url",
        url,
        "--model",
        "well-behaved",
        "--prompt",
        "What is the weather in Paris?",
        "--demo-tools",
        "--json",
        *args,
    )
    return ran.returncode, ran.stdout, ran.stderr


@pytest.mark.parametrize("name", list(CLIENTS))
def test_run_as_each_client(capsys: pytest.CaptureFixture[str], name: str) -> None:
    api = CLIENTS[name].api
    with DemoServer(stream_first_delay=0, stream_interval=0) as demo:
        status, out, err = _run(capsys, demo.base_url, "--api", api, "--client", name)
        paths = {r.path for r in demo.requests if r.method == "POST"}
    assert status == 0, err
    trace = Trace.from_json(out)
    assert trace.client == name and trace.outcome == "ok"
    routes = {
        "messages": "/v1/messages",
        "responses": "/v1/responses",
        "chat": "/v1/chat/completions",
    }
    assert paths == {routes[api]}


def test_a_client_of_another_wire_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with DemoServer() as demo:
        ran = cli(
            capsys,
            "run",
            "--base-url",
            demo.base_url,
            "--model",
            "well-behaved",
            "--prompt",
            "hi",
            "--client",
            "codex",
        )
        sent = [r for r in demo.requests if r.method == "POST"]
    assert_one_line_error(ran, 2, "--client", "codex", "responses", "chat")
    assert sent == []


def test_an_unknown_client_is_a_usage_error_naming_them(capsys: pytest.CaptureFixture[str]) -> None:
    ran = cli(capsys, "run", "--model", "m", "--prompt", "hi", "--client", "cursor")
    assert ran.returncode == 2
    assert "cursor" in ran.stderr and all(name in ran.stderr for name in CLIENTS)


def test_the_help_names_each_client_and_its_wire(capsys: pytest.CaptureFixture[str]) -> None:
    ran = cli(capsys, "run", "--help")
    text = " ".join(ran.stdout.split())
    assert ran.returncode == 0
    for profile in CLIENTS.values():
        assert f"{profile.name}: --api {profile.api}" in text
